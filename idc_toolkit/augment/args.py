"""``idc-augment``'s options: the recipe (:class:`AugmentConfig`), the models (:class:`Models`) and
the run (:class:`~idc_toolkit.runs.args.RunArgs`), one dataclass (:class:`AugmentArgs`) from which
the command line, :func:`~.pipeline.augment_dataset` and the run's fingerprint are derived."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .. import checks
from ..errors import IDCError
from ..options import check_fields, option, required
from ..runs.args import RunArgs, rows_per_part_option
from ..stores import STORE_DATASET


def threshold(flag: str, value: Any) -> float:
    """A similarity's threshold: any finite number (above 1 rejects every edit, below -1 keeps all)."""
    import math

    try:
        x = float(value)
    except (TypeError, ValueError):
        raise IDCError(f"{flag} {value!r}: expected a number") from None
    if not math.isfinite(x):
        raise IDCError(f"{flag} {value!r}: must be a finite number")
    return x


@dataclass
class AugmentConfig:
    """The recipe's settings; the defaults are idc-toolkit's choices where the paper gives none
    (steps, guidance scales, resolution, tries)."""

    edits_per_image: int = option(8, "edits per source row", check=checks.positive_int)
    paraphrases: int = option(4, "paraphrases per instruction", check=checks.non_negative_int)
    seed: int = option(0, "seed of every edit and paraphrase (stored per edit)", check=checks.seed)
    steps: int = option(20, "InstructPix2Pix denoising steps (our choice)", check=checks.positive_int)
    guidance_scale: float = option(7.5, "text guidance (our choice)", check=checks.non_negative_float)
    image_guidance_scale: float = option(1.5, "image guidance (our choice)", check=checks.non_negative_float)
    resolution: int = option(512, "long side of the images given to the editor", check=checks.positive_int)
    rows_per_part: int = rows_per_part_option(16, "source rows", aliases=("--rows-per-shard",))
    paraphrase_tries: int = option(3, "LLM calls per row to reach --paraphrases", check=checks.positive_int)
    clip_filter: Optional[float] = option(None, "drop edits whose CLIP directional similarity is below this",
                                          check=threshold)
    paraphrase_only: bool = option(False, "no editing: the source pairs with instruction + paraphrases as references "
                                          "(Syned's test references)")

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class Models:
    """Which models the task loads in :meth:`~.pipeline.AugmentTask.setup` (names or local folders)."""

    editor: Optional[str] = option(None, "diffusers InstructPix2Pix pipeline: name or local folder (not with "
                                         "--paraphrase-only)")
    paraphraser: Optional[str] = option(None, "transformers chat model with a chat template: name or folder")
    clip_model: Optional[str] = option(None, "open_clip model for --clip-filter")
    clip_checkpoint: Optional[str] = option(None, "open_clip weights for --clip-model (random without)")
    clip_config: Optional[str] = option(None, "an open_clip model config JSON to register", record="content")


@dataclass(kw_only=True)
class AugmentArgs(AugmentConfig, Models, RunArgs):
    """Everything ``idc-augment`` takes: the recipe, the models, the source and the run."""

    dataset: str = required("an idc-build folder or Hub dataset id with before images and instructions" + STORE_DATASET,
                            record=False, aliases=("--source",))
    split: str = option("train", "source split to augment")
    limit: Optional[int] = option(None, "only the first N rows of the split (a trial run)", check=checks.positive_int)
    instruction_column: Optional[str] = option(None, "column holding the instruction (default: the first of captions)",
                                               record=lambda column: column or "captions")

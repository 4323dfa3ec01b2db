"""The change-entity pass's settings: one dataclass whose fields carry each option's default,
choices, check and help (``idc-precompute entities`` and the Python API are derived from it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import checks
from ..masks.params import MaskParams, file_name
from ..options import check_fields, option, python_only
from ..runs.args import RunArgs
from .phrases import DEFAULT_SPACY, PHRASE_STRATEGIES
from .retrieval import CHEER_SCORES, RETRIEVAL_STRATEGIES

#: the papers' CLIP (CHEER and DAVIR use ViT-L/14), in open_clip's naming
DEFAULT_CLIP = "ViT-L-14"


@dataclass(frozen=True)
class EntityParams:
    """How change entities are extracted and retrieved; the defaults follow the papers."""

    clip_model: str = option(DEFAULT_CLIP, "open_clip model name (the papers' CLIP ViT-L/14)")
    # recorded by name; the run records the weights' content hash beside it, and whether there are none
    clip_checkpoint: Optional[str] = option(None, "open_clip weights file (required unless --random-weights)",
                                            record=file_name)
    random_weights: bool = option(False, "run CLIP with random weights (meaningless entities: tests and pipeline checks only)",
                                  record=False)
    clip_config: Optional[str] = option(None, "an open_clip model config JSON to register (custom architectures)",
                                        record="content")
    strategy: str = option("davir", "retrieval strategy", choices=RETRIEVAL_STRATEGIES)
    phrases: str = option("davir", "phrase extraction strategy", choices=PHRASE_STRATEGIES)
    top_k: int = option(3, "entities kept per pair (CHEER uses 3)", check=checks.positive_int)
    cheer_score: str = option("signed", "with --strategy cheer: rank by S_bef - S_aft (the paper's eq. 1) or by its "
                                        "absolute value", choices=CHEER_SCORES)
    min_count: int = option(1, "vocabulary phrases seen fewer times are dropped", check=checks.positive_int)
    vocab_split: str = option("train", "split whose captions form the vocabulary")
    spacy_model: str = option(DEFAULT_SPACY, "spaCy pipeline with a parser")
    mask_params: MaskParams = python_only("with --strategy davir: the diff pipeline's parameters for pairs without a "
                                          "change_mask column", MaskParams)

    def __post_init__(self) -> None:
        check_fields(self)  # ranges and the strategies' choices


@dataclass(kw_only=True)
class EntitiesArgs(RunArgs):
    """``idc-precompute entities``' run options (the method's are :class:`EntityParams`)."""

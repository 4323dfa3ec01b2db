"""What one ``idc-train`` run is given: one dataclass that is the command line (its options and
help are derived from the fields), the argument of :func:`~idc_toolkit.training.train` and,
resolved into :class:`~idc_toolkit.models.recipe.Settings`, the run's record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .. import checks
from ..facts import TRAIN_REFERENCES
from ..options import check_fields, option, python_only, required
from ..stores import STORE_DATASET, STORE_OUT


def _trainable() -> list[str]:
    from ..models.registry import trainable_models

    return trainable_models()


@dataclass
class TrainArgs:
    """One training run's arguments; every value is range-checked when the object is made, so the
    command line and the Python API refuse the same things in the same words."""

    model: str = required("the model (`--model NAME --help`: its options)", choices=_trainable)
    dataset: str = required("an idc-build folder (DAVIR: after idc-precompute masks and entities)" + STORE_DATASET)
    out: str = required("run folder (adapter/, checkpoints/, train_config.json, epochs.md, steps.jsonl)" + STORE_OUT)
    variant: Optional[str] = option(None, "the recipe's variant (blip2idc: ours | released; default: the first)")
    split: str = option("train", "training split")
    val_split: Optional[str] = option("validation", "validation split ('' for none: the last adapter is kept)")
    val_limit: int = option(0, "validate on the first N pairs only (0: all)", check=checks.non_negative_int)
    overwrite: bool = option(False, "replace --out when it holds a training run with other settings")
    base_model: Optional[str] = option(None, "name or folder (default: the recipe's: blip2-opt-2.7b / instructblip-vicuna-7b)")
    revision: Optional[str] = option(None, "base model revision (Hub)")
    epochs: Optional[float] = option(None, "default: the variant's", check=checks.positive_float)
    batch_size: Optional[int] = option(None, "per device (default: 16, both papers)", check=checks.positive_int)
    grad_accum: int = option(1, "gradient accumulation steps (the loss is exact: the same as one batch N times larger)",
                             check=checks.positive_int)
    lr: Optional[float] = option(None, "default: the dataset's (docs/training.md, its table)", check=checks.positive_float)
    lora_rank: Optional[int] = option(None, "default: the dataset's (docs/training.md)", check=checks.positive_int)
    lora_dropout: float = option(0.05, "dropout on the LoRA input (both papers: 0.05)", check=checks.unit_interval)
    max_steps: Optional[int] = option(None, "stop after N optimizer steps (overrides --epochs; default: none)",
                                      check=checks.positive_int)
    save_steps: Optional[int] = option(None, "checkpoint every N steps (default: every epoch)", check=checks.positive_int)
    seed: int = option(0, "seed of weights, order and reference draws", check=checks.non_negative_int)
    train_reference: Optional[str] = option(None, "the reference a pair trains on: random (a new draw each epoch, the papers'), "
                                                  "shortest (IER's code), consensus (the closest to its other references); "
                                                  "default: the dataset's", choices=TRAIN_REFERENCES)
    seeds: Optional[list[int]] = option(None, "one run per seed, into OUT/seed_<N> (then idc-eval leaderboard with one "
                                              "--names label for the runs: mean and sd across seeds)",
                                        check=checks.each_non_negative_int, nargs="+", metavar="N")
    device: str = option("auto", "auto | cpu | cuda (ranks: torchrun / accelerate launch)")
    dtype: str = option("auto", "the frozen base's dtype; auto: bf16 on a GPU with bf16 (fp16 otherwise), float32 on CPU",
                        choices=("auto", "float32", "bfloat16", "float16"))
    gradient_checkpointing: bool = option(False, "trade compute for memory (7B bases)")
    report_to: str = option("auto", "auto (TensorBoard when installed) | none | tensorboard,wandb")
    progress: bool = option(True, "hide the progress bar")
    push_to_hub: Optional[str] = option(None, "upload the kept adapter with its model card to this Hub model repo",
                                        metavar="REPO")
    dry_run: bool = option(False, "check everything, print parameters (total and trainable per module group) and an "
                                  "estimate of a step's memory from the base's config; load no weights, write nothing")
    options: dict[str, Any] = python_only("the recipe's own options (fac_weight, pair_style, ...; on the command line "
                                          "each is its own flag: `--model NAME --help`)", dict)
    trainer_args: dict[str, Any] = python_only("any other TrainingArguments field (repeatable), e.g. warmup_steps=100",
                                               dict)

    def __post_init__(self) -> None:
        check_fields(self)
        self.val_split = self.val_split or None
        self.options, self.trainer_args = dict(self.options or {}), dict(self.trainer_args or {})

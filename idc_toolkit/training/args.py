"""What one ``idc-train`` run is given: one dataclass that is the command line (its options and
help are derived from the fields), the argument of :func:`~idc_toolkit.training.train` and,
resolved (:class:`TrainRun`: every default filled in, beside the recipe's own defaults), the
run's record: each field's ``record`` metadata says whether ``train_config.json`` and the
fingerprint hold it."""

from __future__ import annotations

import types
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any, Optional

from .. import checks
from ..errors import IDCError
from ..facts import TRAIN_REFERENCES
from ..options import check_fields, name_values, option, python_only, required
from ..stores import STORE_DATASET, STORE_OUT

if TYPE_CHECKING:
    from ..models.recipe import RecipeDefaults


def _trainable() -> list[str]:
    from ..models.registry import trainable_models

    return trainable_models()


@dataclass
class TrainArgs:
    """One training run's arguments; every value is range-checked when the object is made, so the
    command line and the Python API refuse the same things in the same words."""

    model: str = required("the model (`--model NAME --help`: its options)", choices=_trainable)
    # record=False: where the run reads and writes and how it runs, not what it trains (the dataset by its content)
    dataset: str = required("an idc-build folder (DAVIR: after idc-precompute masks and entities)" + STORE_DATASET,
                            record=False)
    out: str = required("run folder (adapter/, checkpoints/, train_config.json, epochs.md, steps.jsonl)" + STORE_OUT,
                        record=False)
    variant: Optional[str] = option(None, "the recipe's variant (blip2idc: ours | released; default: the first)")
    split: str = option("train", "training split")
    val_split: Optional[str] = option("validation", "validation split ('' for none: the last adapter is kept)")
    val_limit: int = option(0, "validate on the first N pairs only (0: all)", check=checks.non_negative_int)
    overwrite: bool = option(False, "replace --out when it holds a training run with other settings", record=False)
    base_model: Optional[str] = option(None, "name or folder (default: the recipe's: blip2-opt-2.7b / instructblip-vicuna-7b)",
                                       check=checks.model_folder)
    revision: Optional[str] = option(None, "base model revision (Hub)")
    epochs: Optional[float] = option(None, "default: the variant's", check=checks.positive_float)
    batch_size: Optional[int] = option(None, "per device (default: 16, both papers)", check=checks.positive_int)
    grad_accum: int = option(1, "gradient accumulation steps (the loss is exact: the same as one batch N times larger)",
                             check=checks.positive_int)
    lr: Optional[float] = option(None, "default: the dataset's (docs/training.md, its table)", check=checks.positive_float)
    lora_rank: Optional[int] = option(None, "default: the dataset's (docs/training.md)", check=checks.positive_int)
    lora_dropout: float = option(0.05, "dropout on the LoRA input (both papers: 0.05)", check=checks.unit_interval)
    max_steps: Optional[int] = option(None, "stop after N optimizer steps (overrides --epochs; default: none)",
                                      check=checks.positive_int, record=lambda steps: -1 if steps is None else steps)
    save_steps: Optional[int] = option(None, "checkpoint every N steps (default: every epoch)", check=checks.positive_int)
    seed: int = option(0, "seed of weights, order and reference draws", check=checks.seed)
    train_reference: Optional[str] = option(None, "the reference a pair trains on: random (a new draw each epoch, the papers'), "
                                                  "shortest (IER's code), consensus (the closest to its other references); "
                                                  "default: the dataset's", choices=TRAIN_REFERENCES)
    seeds: Optional[list[int]] = option(None, "one run per seed, into OUT/seed_<N> (then idc-eval leaderboard with one "
                                              "--names label for the runs: mean and sd across seeds)",
                                        check=checks.each_seed, nargs="+", metavar="N", record=False)
    device: str = option("auto", "auto | cpu | cuda (ranks: torchrun / accelerate launch)", record=False)
    dtype: str = option("auto", "the frozen base's dtype; auto: bf16 on a GPU with bf16 (fp16 otherwise), float32 on CPU",
                        choices=("auto", "float32", "bfloat16", "float16"))
    gradient_checkpointing: bool = option(False, "trade compute for memory (7B bases)")
    memory_budget: Optional[float] = option(None, "GiB a step may use: the micro-batch is the largest divisor of the effective "
                                                  "batch (--batch-size x --grad-accum) that --dry-run's estimate fits in it, the "
                                                  "rest accumulated (exactly); --dry-run prints the largest batch that fits",
                                            check=checks.positive_float, metavar="GIB", record=False)
    group_by_length: bool = option(False, "batches of pairs of similar text length, less padding on the language side "
                                          "(another order of the same pairs each epoch)")
    dataloader_workers: Optional[int] = option(None, "processes that read, decode and collate batches beside the training "
                                                     "loop, into pinned memory on a GPU (default: up to 4 on a GPU, none on "
                                                     "CPU: the loop's own process)", check=checks.non_negative_int, metavar="N",
                                               record=False)
    compile: bool = option(False, "torch.compile each layer of the base's stacks (ViT, Q-Former, LM): the first step pays "
                                  "the compilation (its time is logged and recorded); where this platform cannot compile, "
                                  "one line says so and training goes on uncompiled", record=False)
    log_every: int = option(10, "read the losses and gradient norm back from the device every N optimizer steps "
                                "(steps.jsonl keeps one line per step; the Trainer logs the mean loss every N)",
                            check=checks.positive_int, metavar="N", record=False)
    report_to: str = option("auto", "auto (TensorBoard when installed) | none | tensorboard,wandb", record=False)
    progress: bool = option(True, "hide the progress bar", record=False)
    push_to_hub: Optional[str] = option(None, "upload the kept adapter with its model card to this Hub model repo",
                                        metavar="REPO", record=False)
    dry_run: bool = option(False, "check everything, print parameters (total and trainable per module group) and an "
                                  "estimate of a step's memory from the base's config; load no weights, write nothing",
                           record=False)
    options: dict[str, Any] = python_only("the recipe's own options (fac_weight, pair_style, ...; on the command line "
                                          "each is its own flag: `--model NAME --help`)", dict)
    trainer_args: dict[str, Any] = name_values("any other TrainingArguments field (repeatable), e.g. warmup_steps=100",
                                               "--trainer-arg", check=lambda _option, value: check_trainer_args(value))

    def __post_init__(self) -> None:
        if not is_dataclass(self.options):  # a resolved run holds the recipe's Options object
            self.options = dict(self.options or {})
        self.trainer_args = dict(self.trainer_args or {})
        check_fields(self)
        self.val_split = self.val_split or None


def with_values(args: TrainArgs, **values: Any) -> TrainArgs:
    """A copy of ``args`` (of its own class, a subclass's fields kept) with ``values`` set as they are:
    resolved values (a variant's ``epochs=10``), which a second pass of the checks would change
    (``10.0``) and so change the record of a run that did not change."""
    import copy

    out = copy.copy(args)
    names = {f.name for f in fields(args)}
    for name, value in values.items():
        if name not in names:
            raise TypeError(f"{type(args).__name__} has no field {name!r}")
        object.__setattr__(out, name, value)
    return out


@dataclass(frozen=True)
class TrainRun:
    """A resolved training run (:func:`~idc_toolkit.training.train.resolve_run`): ``args`` with every
    default filled in (variant, base, epochs, batch, lr, rank, reference, the recipe's options as its
    ``Options`` object) and the recipe's ``defaults`` that no option sets. A field of either reads as
    an attribute (``run.lr``, ``run.lora_alpha``); :meth:`record` is what the run records."""

    args: TrainArgs
    defaults: "RecipeDefaults"

    def __getattr__(self, name: str) -> Any:
        for part in ("args", "defaults"):
            try:
                obj = object.__getattribute__(self, part)
            except AttributeError:  # while unpickling, before the fields are set
                raise AttributeError(name) from None
            if any(f.name == name for f in fields(obj)):
                return getattr(obj, name)
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def replace(self, **changes: Any) -> "TrainRun":
        """This run with some fields of its arguments or defaults set to resolved values (:func:`with_values`)."""
        mine = {f.name for f in fields(self.args)}
        return TrainRun(with_values(self.args, **{k: v for k, v in changes.items() if k in mine}),
                        replace(self.defaults, **{k: v for k, v in changes.items() if k not in mine}))

    def record(self) -> dict[str, Any]:
        """Every recorded field of the arguments and the defaults, as each field's ``record`` says."""
        from ..runs.fingerprint import recorded

        out = {}
        for part in (self.args, self.defaults):
            values = recorded(part)
            out.update({f.name: values[f.name] for f in fields(part) if f.name in values})  # in field order
        return out


#: TrainingArguments fields the toolkit sets from its own flags or run folder: through --trainer-arg
#: they would bypass the folder rule, the lock or the flags' checks, so each is refused naming what to use
OWNED_TRAINER_FIELDS = {
    "output_dir": "--out", "logging_dir": "--out", "run_name": "--out (the run is named by its folder)",
    "overwrite_output_dir": "--overwrite", "resume_from_checkpoint": "the same command again (it resumes by itself)",
    "save_strategy": "--save-steps", "save_steps": "--save-steps", "save_total_limit": "--save-steps",
    "save_only_model": "--save-steps", "save_safetensors": "--save-steps", "report_to": "--report-to",
    "per_device_train_batch_size": "--batch-size", "num_train_epochs": "--epochs", "max_steps": "--max-steps",
    "learning_rate": "--lr", "gradient_accumulation_steps": "--grad-accum", "seed": "--seed", "data_seed": "--seed",
    "gradient_checkpointing": "--gradient-checkpointing", "activation_checkpointing": "--gradient-checkpointing",
    "use_cpu": "--device", "bf16": "--dtype", "fp16": "--dtype", "disable_tqdm": "--no-progress",
    "dataloader_num_workers": "--dataloader-workers", "logging_steps": "--log-every",
    "group_by_length": "--group-by-length", "train_sampling_strategy": "--group-by-length",
    "push_to_hub": "--push-to-hub REPO (the kept adapter and its card)", "hub_model_id": "--push-to-hub REPO",
    **dict.fromkeys(("eval_strategy", "evaluation_strategy", "do_eval", "eval_steps", "eval_delay", "eval_on_start",
                     "load_best_model_at_end", "metric_for_best_model", "greater_is_better"),
                    "--val-split and --val-limit (idc-train validates at every epoch's end and keeps the best adapter)"),
}
#: the range of every numeric TrainingArguments field a run may set through --trainer-arg (the flags use the same checks)
TRAINER_FIELD_CHECKS = {
    "warmup_steps": checks.non_negative_float, "warmup_ratio": checks.unit_interval,
    "weight_decay": checks.non_negative_float, "max_grad_norm": checks.positive_float, "adam_beta1": checks.unit_interval,
    "adam_beta2": checks.unit_interval, "adam_epsilon": checks.positive_float, "per_device_eval_batch_size": checks.positive_int,
    "label_smoothing_factor": checks.unit_interval, "dataloader_prefetch_factor": checks.positive_int,
    "eval_accumulation_steps": checks.positive_int,
}


def check_trainer_args(trainer_args: dict[str, Any]) -> dict[str, Any]:
    """``--trainer-arg`` values under the flags' rules: the toolkit's own fields are refused naming
    the flag, a name that is no TrainingArguments field is refused, each value must be of its
    field's type (``torch_compile=maybe`` is no bool), numeric fields are range-checked, and no
    number may be infinite or NaN."""
    import math

    checked = {}
    for name, value in trainer_args.items():
        option = f"--trainer-arg {name}"
        if name in OWNED_TRAINER_FIELDS:
            raise IDCError(f"{option}: set by idc-train itself; use {OWNED_TRAINER_FIELDS[name]}")
        if name in TRAINER_FIELD_CHECKS:  # a number in its range, whichever transformers has the field
            value = TRAINER_FIELD_CHECKS[name](option, value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise IDCError(f"{option} {value!r}: must be a finite number")
        known = _trainer_field_types()
        if name not in known:
            raise IDCError(f"{option}: not a TrainingArguments field")
        if not _fits(value, known[name]):
            raise IDCError(f"{option} {value!r}: TrainingArguments.{name} takes {_described(known[name])}")
        checked[name] = value
    return checked


_FIELD_TYPES: dict[str, Any] = {}


def _trainer_field_types() -> dict[str, Any]:
    """``{field: its type}`` of this transformers' ``TrainingArguments`` (read once: it imports transformers)."""
    if not _FIELD_TYPES:
        import dataclasses
        import typing

        from transformers import TrainingArguments

        hints = typing.get_type_hints(TrainingArguments)
        _FIELD_TYPES.update({f.name: hints.get(f.name, Any) for f in dataclasses.fields(TrainingArguments) if f.init})
    return _FIELD_TYPES


def _members(hint: Any) -> tuple[Any, ...]:
    import typing

    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a value read from the command line (YAML: bool, int, float, text, null, list, mapping) is one of ``hint``'s."""
    import enum
    import typing

    for member in _members(hint):
        origin = typing.get_origin(member) or member
        if member is Any or (member is type(None) and value is None):
            return True
        if origin is typing.Literal and value in typing.get_args(member):
            return True
        if origin is bool and isinstance(value, bool):
            return True
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if origin is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if origin is str and isinstance(value, str):
            return True
        if isinstance(origin, type) and issubclass(origin, enum.Enum) and isinstance(value, str):
            return True
        if origin in (list, tuple) and isinstance(value, (list, tuple)):
            return True
        if origin is dict and isinstance(value, dict):
            return True
        if isinstance(origin, type) and origin not in (bool, int, float, str, list, tuple, dict, type(None)) \
                and not issubclass(origin, enum.Enum):
            return True  # a config object transformers itself checks
    return False


def _described(hint: Any) -> str:
    import typing

    words = {bool: "true or false", int: "an integer", float: "a number", str: "text", list: "a list", tuple: "a list",
             dict: "a mapping", type(None): "null"}
    shown = [words.get(typing.get_origin(m) or m, getattr(m, "__name__", str(m))) for m in _members(hint)]
    return " or ".join(dict.fromkeys(shown))

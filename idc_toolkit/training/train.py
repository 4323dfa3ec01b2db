"""``idc-train``: fine-tune a registered model's recipe with LoRA on a dataset in the toolkit's schema.

Built on ``transformers.Trainer`` and ``peft``: mixed precision on a GPU, gradient
checkpointing, gradient accumulation, ranks under ``torchrun`` / ``accelerate launch``,
TensorBoard / W&B through ``report_to``, checkpoints the run resumes from, any other
``TrainingArguments`` field through ``trainer_args``. What the toolkit adds:

* the run engine's folder rule (:class:`~idc_toolkit.runs.RunFolder`): a fingerprint of every
  resolved setting and of the dataset's and base model's content; the same command resumes,
  other settings are refused naming each difference unless ``--overwrite``; a folder holding
  files no run of ours wrote is refused; a lock keeps two runs out of one folder; every JSON
  and Markdown file is written atomically;
* per-dataset defaults from the dataset's typed facts (:class:`~idc_toolkit.facts.DatasetFacts`)
  and checks before any model is loaded;
* the caption loss summed over target tokens and divided by the target tokens of the whole
  optimizer step, so ``--grad-accum N`` trains and logs exactly what one batch N times as
  large would (the Trainer's default divides per micro-batch);
* validation at the end of every epoch *before* that epoch's checkpoint is written: a kill
  during validation resumes from the previous checkpoint and redoes the epoch, so
  ``epochs.json`` and the kept adapter equal an uninterrupted run's;
* ``steps.jsonl``: one line per optimizer step (step, epoch, loss per target token, lr,
  grad_norm, and each extra loss term of the recipe).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import IDCError
from ..stores import input_folder, output_folder
from ..facts import DatasetFacts
from ..runs.folder import remove_owned
from .adapter import save_adapter
from .args import TrainArgs, TrainRun, with_values
from ..models.recipe import Recipe, RecipeDefaults

log = logging.getLogger(__name__)
CONFIG_FILE = "train_config.json"
STEPS_FILE = "steps.jsonl"
EPOCHS_FILE = "epochs.json"
#: everything a training run writes into its folder (what --overwrite may remove)
OWNED = ("adapter", "checkpoints", CONFIG_FILE, EPOCHS_FILE, "epochs.md", STEPS_FILE, "attention")


@dataclass
class TrainResult:
    out: Path
    adapter: Path
    epochs: list[dict[str, Any]] = field(default_factory=list)
    already_done: bool = False
    losses: list[float] = field(default_factory=list)  #: the training loss of every optimizer step
    settings: Optional[TrainRun] = None  #: the resolved run (:func:`resolve_run`)
    estimate: Any = None  #: ``--dry-run``: the :class:`~.estimate.Estimate`, and nothing was trained


#: language models the recipes cannot train (they pack one decoder sequence)
ENCODER_DECODER = ("t5", "umt5", "mt5", "bart")


def _base_config(base_model: str, revision: Optional[str]) -> dict[str, Any]:
    """The base model's ``config.json`` as a dict, from its config only (no weights are read)."""
    local = Path(base_model) / "config.json"
    if local.is_file():
        return json.loads(local.read_text())
    from transformers import AutoConfig

    from ..runs.rows import check_hub_repo

    check_hub_repo(base_model, "model", "--base-model", revision)
    return AutoConfig.from_pretrained(base_model, revision=revision).to_dict()


def _open_split(dataset: str, split: str, progress: bool = False):
    from datasets import load_dataset

    from ..runs.rows import check_against_card, check_built, local_split_files

    check_built(dataset)
    files = local_split_files(str(dataset), split)
    if files:
        check_against_card(dataset, split, files, progress=progress)
    try:
        return load_dataset(str(dataset), split=split)
    except ValueError as exc:
        raise IDCError(f"{dataset}: cannot load split {split!r}: {exc}") from None
    except Exception as exc:  # datasets' DatasetGenerationError and kin: one line, naming the folder
        raise IDCError(f"{dataset}: cannot read split {split!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from None


def check_inputs(recipe_cls: type[Recipe], dataset: str, facts: DatasetFacts, settings: TrainRun,
                 progress: bool = False) -> tuple[Any, Any]:
    """Every check that needs no model: one-line errors naming the cause and the fix."""
    ds = _open_split(dataset, settings.split, progress)
    if len(ds) == 0:
        raise IDCError(f"{dataset}: split {settings.split!r} is empty; nothing to train on")
    for column, made_by in recipe_cls.required.items():
        if column not in ds.column_names:
            raise IDCError(f"{dataset} [{settings.split}] has no {column!r} column, which {recipe_cls.name} trains on: "
                           f"run {made_by} first")
    recipe_cls.check_dataset(facts, ds.column_names, settings.options, f"{dataset} [{settings.split}]")
    config = _base_config(settings.base_model, settings.revision)
    model_type = config.get("model_type", "")
    if model_type != recipe_cls.model_type:
        raise IDCError(f"--base-model {settings.base_model} is a {model_type or 'unknown'} model; {recipe_cls.name} "
                       f"trains a {recipe_cls.model_type} model")
    text_type = (config.get("text_config") or {}).get("model_type", "")
    if text_type in ENCODER_DECODER:  # the recipes pack image slots, prompt and caption into one decoder sequence
        raise IDCError(f"--base-model {settings.base_model} has a {text_type} (encoder-decoder) language model; "
                       f"{recipe_cls.name} trains decoder-only ones (OPT, Llama/Vicuna): use e.g. {recipe_cls.base_model}")
    val = None
    if settings.val_split:
        try:
            val = _open_split(dataset, settings.val_split, progress)
        except IDCError:
            log.warning("no %r split: no validation, the last adapter is kept", settings.val_split)
    return ds, val


def resolve_run(recipe_cls: type[Recipe], facts: DatasetFacts, args: TrainArgs) -> TrainRun:
    """The run ``args`` ask for, every default resolved: what was given, else the variant's and the
    dataset's defaults (``defaults_source`` says where the rank and lr came from), the recipe's
    options as its ``Options``. The values were range-checked when ``args`` was made."""
    variant = args.variant or next(iter(recipe_cls.variants))
    if variant not in recipe_cls.variants:
        raise IDCError(f"--variant {variant!r}: {recipe_cls.name} has {', '.join(recipe_cls.variants)}")
    v = recipe_cls.variants[variant]
    d = recipe_cls.defaults_for(facts)
    rank = d.lora_rank if args.lora_rank is None else args.lora_rank
    resolved = with_values(
        args, model=recipe_cls.name, variant=variant, base_model=args.base_model or recipe_cls.base_model,
        revision=args.revision if args.base_model else (args.revision or recipe_cls.revision),
        epochs=v.epochs if args.epochs is None else args.epochs,
        batch_size=v.batch_size if args.batch_size is None else args.batch_size,
        lr=d.lr if args.lr is None else args.lr, lora_rank=rank,
        train_reference=args.train_reference or facts.train_reference, options=recipe_cls.make_options(args.options))
    defaults = RecipeDefaults(
        lr_schedule=v.lr_schedule, weight_decay=v.weight_decay, max_grad_norm=v.max_grad_norm, lora_alpha=2 * rank,
        max_caption_tokens=v.max_caption_tokens, max_new_tokens=recipe_cls.max_new_tokens, select_by=v.select_by,
        patience=v.patience, defaults_source=f"variant {variant} ({v.description}); rank/lr: {d.source}")
    return TrainRun(resolved, defaults)


def resolve_settings(recipe_cls: type[Recipe], facts: DatasetFacts, args: TrainArgs) -> TrainRun:
    """Deprecated name of :func:`resolve_run`."""
    import warnings

    warnings.warn("resolve_settings is now resolve_run", DeprecationWarning, stacklevel=2)
    return resolve_run(recipe_cls, facts, args)


class _Rows:
    """The split as a torch map-style dataset; rows carry their index and the epoch, which
    the recipe's seeded reference draw uses (the Trainer calls :meth:`set_epoch`)."""

    def __init__(self, ds):
        self.ds, self.epoch = ds, 0

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {**self.ds[int(i)], "__index": int(i), "__epoch": self.epoch}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)


def run_fields(settings: TrainRun, dataset: str, progress: bool = False) -> dict[str, Any]:
    """What a run's adapter depends on: every recorded field of the resolved run (:meth:`TrainRun.record`:
    each as its ``record`` metadata says, secrets masked) and the content of the data and base
    (``progress``: show their first hashing where it is long)."""
    from .. import __version__
    from ..runs.fingerprint import path_content

    # secrets (--trainer-arg hub_token=...) reach the Trainer, never a record, card or log
    return {**settings.record(), "dataset_content": path_content(dataset, progress),
            "base_model_content": path_content(settings.base_model, progress), "toolkit": __version__}


def train_seeds(args: TrainArgs, callbacks: Sequence[Any] = ()) -> list[TrainResult]:
    """One run of ``args`` per seed of ``args.seeds``, each into ``<out>/seed_<N>`` (resumable
    each, as :func:`train` is): the runs a paper reporting mean and sd across seeds trains."""
    from dataclasses import replace

    if not args.seeds:
        raise IDCError("train_seeds needs seeds")
    if len(set(args.seeds)) != len(args.seeds):
        raise IDCError(f"--seeds {' '.join(map(str, args.seeds))}: a seed is given twice")
    return [train(replace(args, seed=s, seeds=None, out=f"{str(args.out).rstrip('/')}/seed_{s}"), callbacks)
            for s in args.seeds]


def train(args: TrainArgs, callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train ``args.model``'s recipe on ``args.dataset`` into ``args.out`` (see the module
    docstring); ``callbacks`` are more ``transformers.TrainerCallback``s. ``args.dry_run``: check
    everything, count parameters and estimate a step's memory from the base's configuration
    (:mod:`.estimate`), write nothing and load no weights. ``args.push_to_hub``: upload the kept
    adapter with its model card (:mod:`.card`) to that Hub model repo."""
    from ..card_data import dataset_facts
    from ..devices import resolve_device
    from ..models.registry import get_recipe_class
    from ..runs import RunFolder
    from ..runs.folder import write_json_atomic
    from ..runs.ranks import barrier, dist_info

    if args.seeds:
        raise IDCError("seeds= trains one run per seed: call train_seeds (idc-train --seeds does)")
    recipe_cls = get_recipe_class(args.model)
    out = output_folder(args.out, IDCError)
    progress, push_to_hub = args.progress, args.push_to_hub
    dataset = input_folder(args.dataset, IDCError, progress)  # a store's dataset: its local copy
    facts = dataset_facts(dataset)
    settings = resolve_run(recipe_cls, facts, args)
    train_rows, val_rows = check_inputs(recipe_cls, dataset, facts, settings, progress)
    if args.dry_run or args.memory_budget:
        from .estimate import estimate, fit_budget

        guess = estimate(recipe_cls, settings, facts, resolve_device(args.device), args.memory_budget)
        if args.dry_run:
            import dataclasses

            from .flops import step_pair_flops

            guess = dataclasses.replace(guess, pair_flops=step_pair_flops(recipe_cls, settings, facts))
            return TrainResult(out, out / "adapter", settings=settings, estimate=guess)
        settings = fit_budget(settings, guess)
    if (out / "adapter").exists() and not (out / "adapter").is_dir():
        raise IDCError(f"{out / 'adapter'} is a file; the adapter folder would be written there: move it or choose another --out")
    device = resolve_device(args.device)
    trainer_args = training_arguments(settings, out, device, args.report_to, progress, workers=args.dataloader_workers,
                                      log_every=args.log_every)  # refused before the folder or weights
    fields = run_fields(settings, dataset, progress)
    folder = RunFolder(out, "training", fields, owned=OWNED, card_record=False, progress=progress).open(args.overwrite)
    rank = dist_info()[0]
    # one run at a time in a folder: a second idc-train on the same --out is refused naming the holder
    with (folder.job_lock((0, 1)) if rank == 0 else contextlib.nullcontext()):
        if folder.complete:
            if push_to_hub and rank == 0:
                from .card import push_adapter

                push_adapter(out / "adapter", push_to_hub)
            return TrainResult(out, out / "adapter", _read_json(out / EPOCHS_FILE, []), already_done=True, settings=settings)

        import torch
        from ..models.adapters import wrap_lora

        from .callbacks import AttentionPictures, EpochValidation, StepLog

        torch.manual_seed(settings.seed)
        if not progress or not _on_terminal():  # off a terminal the loading bar is carriage-return noise
            from ..devices import quiet_model_loading

            quiet_model_loading()
        recipe = recipe_cls(settings, facts)
        base = recipe.load(load_dtype(settings.dtype, device))
        net = wrap_lora(base, recipe.lora_config(base))
        if settings.gradient_checkpointing:
            net.enable_input_require_grads()
        compiled = compile_stacks(net, device) if args.compile else None
        last = last_complete_checkpoint(out / "checkpoints")
        if last:
            verify_checkpoint(last)
        done_step = _checkpoint_step(last)
        if rank == 0:
            _truncate_logs(out, done_step)  # what a killed run logged after its last checkpoint is redone
        barrier()  # the other ranks read the truncated tables
        validation = EpochValidation(recipe, val_rows, dataset, settings, out)
        steps = StepLog(out / STEPS_FILE, trainer_args.logging_steps)
        extra = [validation, steps]
        if compiled is not None and compiled.get("compiled"):
            from .callbacks import FirstSteps

            extra.append(FirstSteps(compiled))
        if recipe.picture_every() > 0:
            extra.append(AttentionPictures(recipe, val_rows or train_rows, out, recipe.picture_every()))
        trainer = _trainer_class()(model=net, args=trainer_args, train_dataset=_Rows(train_rows), data_collator=recipe.collate,
                                   callbacks=extra + list(callbacks), recipe=recipe, step_log=steps, validation=validation)
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        from .callbacks import progress_callback

        for printer in (PrinterCallback, ProgressCallback):  # both print every log dict; steps.jsonl holds them
            trainer.remove_callback(printer)
        if progress:
            trainer.add_callback(progress_callback(_on_terminal()))
        if last:
            log.info("resuming from %s", last)
        outcome = trainer.train(resume_from_checkpoint=last)
        metrics = {**{k: v for k, v in outcome.metrics.items() if k != "total_flos"},  # see IDCTrainer.floating_point_ops
                   "train_loss": whole_run_loss(trainer.state.log_history, done_step, outcome.metrics.get("train_loss"),
                                                trainer.state.global_step)}
        if rank == 0:
            from ..files import write_text_atomic
            from .card import adapter_card

            if val_rows is None or not (out / "adapter" / "adapter_config.json").is_file():
                save_adapter(net, out / "adapter", settings.base_model)
            write_text_atomic(out / "adapter" / "README.md", adapter_card(recipe_cls, settings, fields, dataset, validation.table))
            record = _record(fields, complete=True, epochs=validation.table)
            record["trainer_metrics"] = metrics  # train_runtime, samples/s, steps/s (this call's); train_loss: the run's
            record["speed"] = speed_record(trainer_args, net, compiled)  # how it ran: not in the fingerprint
            folder.finalise(lambda final: write_json_atomic(final / CONFIG_FILE, record), order=(CONFIG_FILE,))
            if push_to_hub:
                from .card import push_adapter

                push_adapter(out / "adapter", push_to_hub)
        losses = [r["loss"] for r in _read_steps(out / STEPS_FILE)]
        return TrainResult(out, out / "adapter", validation.table, losses=losses, settings=settings)


def whole_run_loss(log_history: list[dict[str, Any]], resumed_at: int, this_call: Optional[float],
                   global_step: int) -> Optional[float]:
    """The mean training loss per optimizer step over the whole run. The Trainer's ``train_loss``
    covers only the steps of its own call (those after a resume); the steps before it are the
    logged losses that the checkpoint's ``log_history`` brought back, each weighing the steps
    since the previous log."""
    if this_call is None:
        return None
    before, counted, last = 0.0, 0, 0
    for entry in log_history:
        step = int(entry.get("step", 0))
        if "loss" in entry and last < step <= resumed_at:
            before += float(entry["loss"]) * (step - last)
            counted, last = counted + step - last, step
    steps = global_step - resumed_at
    return (before + float(this_call) * steps) / max(counted + steps, 1)


def load_dtype(dtype: str, device: str):
    """The dtype the frozen base is loaded in: ``auto`` is bf16 on a GPU that has it (a 7B base
    in fp32 needs ~28 GB for weights alone), fp16 on an older GPU, fp32 on CPU. LoRA weights
    are trained in fp32 either way (peft's autocast_adapter_dtype)."""
    from ..devices import resolve_dtype

    return resolve_dtype(dtype, device)


def training_arguments(s: TrainRun, out: Path, device: str, report_to: str, progress: bool, workers: Optional[int] = None,
                       log_every: int = 1):
    """``TrainingArguments`` of a run; ``s.trainer_args`` are applied last and validated by
    transformers itself (an unknown field is an error naming it). On a GPU: bf16 autocast where
    the GPU has bf16 (fp16 otherwise) unless ``--dtype float32``, fused AdamW, ``workers``
    DataLoader processes (default :func:`default_workers`) writing pinned memory that is copied
    to the GPU without waiting. On CPU: autocast only for ``--dtype bfloat16``, torch's AdamW,
    the batches made in the loop's own process unless ``workers``. The Trainer logs every
    ``log_every`` steps and never checks each step's loss for NaN, which would read it back from
    the device at every step (``steps.jsonl`` holds every step's)."""
    import dataclasses

    from transformers import TrainingArguments

    kwargs = trainer_fields(s, out, device, report_to, progress, workers, log_every)
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    # transformers renamed gradient_checkpointing to activation_checkpointing after 5.17: the name this version knows
    kwargs["activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"] = s.gradient_checkpointing
    unknown = sorted(set(s.trainer_args) - names)
    if unknown:
        raise IDCError(f"--trainer-arg {unknown[0]}: not a TrainingArguments field")
    kwargs.update(s.trainer_args)
    try:
        return TrainingArguments(**kwargs)
    except (ValueError, TypeError) as exc:
        raise IDCError(f"TrainingArguments refused the settings: {exc}") from None


def trainer_fields(s: TrainRun, out: Path, device: str, report_to: str, progress: bool, workers: Optional[int] = None,
                   log_every: int = 1) -> dict[str, Any]:
    """The ``TrainingArguments`` fields :func:`training_arguments` sets from a run's settings (see there)."""
    import torch

    on_gpu = device.startswith("cuda")
    bf16 = (torch.cuda.is_bf16_supported() if on_gpu else s.dtype == "bfloat16") and s.dtype != "float32"
    workers = default_workers(device) if workers is None else workers
    kwargs: dict[str, Any] = dict(
        output_dir=str(out / "checkpoints"), per_device_train_batch_size=s.batch_size, gradient_accumulation_steps=s.grad_accum,
        learning_rate=s.lr, num_train_epochs=s.epochs, max_steps=-1 if s.max_steps is None else s.max_steps, seed=s.seed, data_seed=s.seed,
        lr_scheduler_type=s.lr_schedule, weight_decay=s.weight_decay, max_grad_norm=s.max_grad_norm,
        warmup_steps=0, save_strategy="steps" if s.save_steps else "epoch", save_steps=s.save_steps or 500,
        save_total_limit=2, logging_steps=log_every, logging_nan_inf_filter=False, report_to=_report_to(report_to),
        remove_unused_columns=False, dataloader_num_workers=workers, dataloader_pin_memory=on_gpu,
        accelerator_config={"non_blocking": on_gpu}, use_cpu=not on_gpu, bf16=bf16,
        fp16=on_gpu and not bf16 and s.dtype != "float32",
        disable_tqdm=not progress, optim="adamw_torch_fused" if on_gpu else "adamw_torch",
        dataloader_drop_last=s.variant == "released")
    return kwargs


def default_workers(device: str) -> int:
    """DataLoader processes by default: on a GPU up to 4, leaving the training loop a core (made in
    the loop's own process, the input of a batch of 16 at the real image sizes is 7-22% of a GPU
    step: benchmarks/README.md); on CPU none, as the model's own work uses every core."""
    import os

    if not device.startswith("cuda"):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(4, cores - 1))


#: the backend ``--compile`` asks torch.compile for
COMPILE_BACKEND = "inductor"
#: compiled versions torch keeps per code object under ``--compile`` (its default: 8)
RECOMPILE_LIMIT = 64


def _compile_probe(device: str) -> None:
    """Compile and run a two-operation function on ``device``: what fails where the platform cannot
    compile (no C++ compiler for CPU code, no Triton for a GPU) fails here, before the run's model."""
    import torch

    torch.compile(lambda x: x * 2 + 1, backend=COMPILE_BACKEND)(torch.ones(2, device=device))


def compile_stacks(net, device: str) -> dict[str, Any]:
    """``--compile``: ``torch.compile`` each transformer layer of the base's stacks in place
    (regional compilation: a stack's identical layers reuse the compiled code, and parameter
    names do not change), after checking that the platform compiles at all
    (:func:`_compile_probe`); where it does not, one line says why and the run trains
    uncompiled. Returns what the run record shows."""
    import time

    from ..stores import first_line

    start = time.perf_counter()
    try:
        _compile_probe(device)
    except Exception as exc:  # a missing compiler surfaces as one of many error types
        reason = f"{type(exc).__name__}: {first_line(exc)}"
        log.warning("--compile: this platform cannot compile (%s); training goes on uncompiled", reason)
        return {"compiled": False, "reason": reason}
    import torch._dynamo

    # every layer class of the three stacks runs one code object (transformers' checkpointing wrapper), each in a
    # few shapes (caption lengths, then dynamic; the Q-Former's cross-attention layers): torch's default of 8
    # compiled versions per code object left most layers uncompiled
    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, RECOMPILE_LIMIT)
    layers = 0
    for stack in stack_layers(net).values():
        for layer in stack:
            layer.compile(backend=COMPILE_BACKEND)
            layers += 1
    return {"compiled": True, "backend": COMPILE_BACKEND, "layers": layers, "probe_s": round(time.perf_counter() - start, 2)}


def stack_layers(net) -> dict[str, list]:
    """``{stack: its transformer layers}`` of a BLIP-2-family model (wrapped by peft or not): the
    longest ``ModuleList`` under each of ``vision_model``, ``qformer`` and ``language_model``."""
    import torch

    found: dict[str, list] = {}
    for name, module in net.named_modules():
        if not isinstance(module, torch.nn.ModuleList):
            continue
        for stack in ("vision_model", "qformer", "language_model"):
            if f"{stack}." in f"{name}." and len(module) > len(found.get(stack, [])):
                found[stack] = list(module)
    return found


def attention_implementations(net) -> dict[str, list[str]]:
    """``{stack: the attention implementation of each layer}``, as the layers' configurations say:
    ``sdpa`` everywhere transformers supports it, ``eager`` where a recipe reads the weights
    (DAVIR's final ViT layer under its attention loss)."""
    found: dict[str, list[str]] = {}
    for stack, layers in stack_layers(net).items():
        kinds = []
        for layer in layers:
            configs = [m.config for m in layer.modules()
                       if "Attention" in type(m).__name__ and hasattr(getattr(m, "config", None), "_attn_implementation")]
            kinds.append("/".join(dict.fromkeys(str(c._attn_implementation) for c in configs)) or "none")
        found[stack] = kinds
    return found


def speed_record(trainer_args, net, compiled: Optional[dict[str, Any]]) -> dict[str, Any]:
    """How the run ran, beside its fingerprint (none of it changes what is trained beyond float rounding)."""
    from collections import Counter

    attention = {stack: dict(Counter(kinds)) for stack, kinds in attention_implementations(net).items()}
    return {"dataloader_workers": trainer_args.dataloader_num_workers, "pin_memory": trainer_args.dataloader_pin_memory,
            "optimizer": str(getattr(trainer_args.optim, "value", trainer_args.optim)), "bf16_autocast": trainer_args.bf16,
            "fp16_autocast": trainer_args.fp16, "log_every": trainer_args.logging_steps, "attention": attention,
            "compile": compiled}


def last_complete_checkpoint(folder: Path) -> Optional[str]:
    """The newest checkpoint the Trainer finished writing (``trainer_state.json`` is its last
    file); a folder a kill interrupted mid-save is removed, with a warning, so resuming never
    reads half a checkpoint."""
    if not folder.is_dir():
        return None
    steps = sorted((int(p.name.split("-")[1]), p) for p in folder.glob("checkpoint-*") if p.name.split("-")[1].isdigit())
    for _, path in reversed(steps):
        if (path / "trainer_state.json").is_file():
            return str(path)
        log.warning("removing %s: a kill interrupted its writing", path)
        remove_owned(folder, [path.name])
    return None


def verify_checkpoint(checkpoint: str) -> None:
    """Every tensor file of a checkpoint loads as tensors only (``weights_only``, with the
    numpy types the Trainer's RNG state needs): a corrupt file, or one that would run pickled
    code, is refused in one line before the Trainer reads it. ``training_args.bin`` is never
    read on resume."""
    import torch
    from transformers.trainer_pt_utils import safe_globals

    for f in sorted(Path(checkpoint).glob("*.p*")):
        if f.suffix not in (".pt", ".pth"):
            continue
        try:
            with safe_globals():
                torch.load(f, map_location="cpu", weights_only=True)
        except Exception as exc:
            from ..stores import first_line

            raise IDCError(f"{f}: not a plain tensor file ({type(exc).__name__}: {first_line(exc)}); the checkpoint is corrupt or "
                           "holds pickled code: move it away to resume from the one before") from None
    if (Path(checkpoint) / "adapter_model.safetensors").is_file():
        from safetensors import safe_open

        try:
            with safe_open(str(Path(checkpoint) / "adapter_model.safetensors"), "pt"):
                pass
        except Exception as exc:
            raise IDCError(f"{checkpoint}/adapter_model.safetensors is corrupt ({exc}); move the checkpoint away "
                           "to resume from the one before") from None


def _checkpoint_step(checkpoint: Optional[str]) -> int:
    if checkpoint is None:
        return 0
    return int(json.loads((Path(checkpoint) / "trainer_state.json").read_text()).get("global_step", 0))


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def _read_steps(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line a kill cut short
            continue
    return rows


def _truncate_logs(out: Path, step: int) -> None:
    """Keep only what was logged up to the checkpoint the run resumes from (``step``)."""
    from ..files import write_text_atomic
    from ..runs.folder import write_json_atomic

    table = [r for r in _read_json(out / EPOCHS_FILE, []) if r.get("step", 0) <= step]
    if (out / EPOCHS_FILE).exists():
        write_json_atomic(out / EPOCHS_FILE, table)
    if (out / STEPS_FILE).exists():
        kept = [r for r in _read_steps(out / STEPS_FILE) if r.get("step", 0) <= step]
        write_text_atomic(out / STEPS_FILE, "".join(json.dumps(r) + "\n" for r in kept))


def _record(fields: dict[str, Any], complete: bool, epochs: Optional[list] = None) -> dict[str, Any]:
    import platform
    from importlib import metadata

    from .. import __version__

    versions = {"idc_toolkit": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "accelerate", "datasets"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"fingerprint": fields, "versions": versions, "complete": complete, "epochs": epochs or []}


def _report_to(value: str) -> list[str]:
    """``auto``: TensorBoard when installed (it needs no network), else only the progress bar;
    W&B when asked (``--report-to wandb``)."""
    if value == "auto":
        import importlib.util

        return ["tensorboard"] if importlib.util.find_spec("tensorboard") else []
    return [] if value == "none" else [v for v in value.split(",") if v]


def _trainer_class():
    from transformers import Trainer

    import torch

    from ..models.recipe import caption_loss_terms

    class IDCTrainer(Trainer):
        """``Trainer`` whose loss is the caption cross-entropy summed over target tokens and
        divided by the target tokens of the whole optimizer step (``num_items_in_batch``), plus
        the recipe's extra terms weighted by the micro-batch's share of the step; batch keys
        starting with ``idc_`` are the recipe's, not the model's."""

        loss_is_scaled_for_ga = True

        def __init__(self, *args, recipe, step_log, validation=None, **kwargs):
            """``recipe``: the batches and the extra losses; ``step_log``: the per-step losses and gradient
            norm (``steps.jsonl``); ``validation``: logs its scores through this trainer."""
            super().__init__(*args, **kwargs)
            self.recipe, self.step_log = recipe, step_log
            if validation is not None:
                validation.log = self.log  # validation scores go where report_to sends the Trainer's logs
            self.model_accepts_loss_kwargs = True  # so the Trainer counts the step's target tokens
            self._loss_shifts_labels = True  # caption_loss_sum predicts label t + 1 at position t

        def _save(self, output_dir=None, state_dict=None):
            super()._save(output_dir, state_dict)
            if self.args.should_save:  # the Trainer pickles its arguments beside the weights: the copy a secret never is in
                import copy
                import dataclasses
                import os

                import torch
                from transformers.trainer import TRAINING_ARGS_NAME

                from ..options import MASK, is_secret

                shown = copy.copy(self.args)
                for f in dataclasses.fields(shown):
                    if is_secret(f.name) and getattr(shown, f.name, None) is not None:
                        object.__setattr__(shown, f.name, MASK)
                torch.save(shown, os.path.join(output_dir or self.args.output_dir, TRAINING_ARGS_NAME))

        def floating_point_ops(self, inputs):
            return 0  # the Trainer's is 6 x parameters x the main input's elements: BLIP-2's pixel_values, no FLOP count

        def log(self, logs, *args, **kwargs):
            logs.pop("total_flos", None)  # the sum of floating_point_ops: left out rather than a number that is not one
            super().log(logs, *args, **kwargs)

        def _get_train_sampler(self, *args, **kwargs):
            if self.recipe.run.group_by_length:  # asked for: it replaces even a recipe's unshuffled order
                return length_grouped_sampler(self.train_dataset, self.recipe,
                                              self.args.train_batch_size * self.args.gradient_accumulation_steps, self.args.seed)
            if not self.recipe.shuffle():
                from torch.utils.data import SequentialSampler

                return SequentialSampler(self.train_dataset)
            return super()._get_train_sampler(*args, **kwargs)

        def _get_grad_norm(self, model, grad_norm=None):
            grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
            self.step_log.grad_norm = grad_norm  # a tensor: steps.jsonl reads it with the step's losses
            return grad_norm

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            extras = {k: inputs.pop(k) for k in list(inputs) if k.startswith("idc_")}
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            total, count = caption_loss_terms(outputs.logits, labels)  # tensors: nothing is read back from the device
            accum = max(1, getattr(self, "current_gradient_accumulation_steps", 1))
            denominator = num_items_in_batch if num_items_in_batch is not None else count * accum
            loss = total / torch.as_tensor(denominator, device=total.device).to(total.dtype).clamp(min=1.0)
            terms = {"caption_loss": loss.detach()}
            for name, (weight, term) in self.recipe.extra_loss(model, extras).items():
                share = term / accum  # a mean over the micro-batch's pairs: each micro-batch weighs 1/N of the step
                loss = loss + weight * share
                terms[name] = share.detach()
            if model.training:
                self.step_log.add({"loss": loss.detach(), **terms})
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes  # DDP averages gradients over ranks
            return (loss, outputs) if return_outputs else loss

    return IDCTrainer


def length_grouped_sampler(rows, recipe, group: int, seed: int):
    """The ``--group-by-length`` sampler over ``rows`` (a :class:`_Rows`), ``group`` pairs an
    optimizer step (the class is made here: torch is imported only where a model is)."""
    import torch

    class LengthGroupedEpochs(torch.utils.data.Sampler):
        """``--group-by-length``: transformers' length-grouped order (random megabatches of 50
        batches, each sorted by length, the longest batch first) over the language side's tokens of
        the reference each pair draws in this epoch (:meth:`~idc_toolkit.models.recipe.Recipe.text_lengths`;
        no image is read), seeded by the run's seed and the epoch, so a resumed run draws the same.
        Every pair comes once per epoch, as with the plain shuffle; only the order differs."""

        def __init__(self, rows, recipe, group: int, seed: int):
            self.rows, self.recipe, self.group, self.seed, self.epoch = rows, recipe, group, seed, 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)
            self.rows.set_epoch(epoch)  # accelerate tells the sampler, not the dataset, when the sampler listens

        def __len__(self) -> int:
            return len(self.rows)

        def lengths(self) -> list[int]:
            ds = self.rows.ds
            texts = ds.select_columns([c for c in ("pair_id", "captions", "entities") if c in ds.column_names])
            rows = [{**row, "__index": i, "__epoch": self.epoch} for i, row in enumerate(texts)]
            return self.recipe.text_lengths(rows)

        def __iter__(self):
            from transformers.trainer_pt_utils import get_length_grouped_indices

            generator = torch.Generator()
            generator.manual_seed(self.seed * 1000003 + self.epoch)
            return iter(get_length_grouped_indices(self.lengths(), self.group, generator=generator))

    return LengthGroupedEpochs(rows, recipe, group, seed)


def _on_terminal() -> bool:
    import sys

    return sys.stderr.isatty()

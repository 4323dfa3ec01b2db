"""``idc-train``: fine-tune BLIP2IDC or DAVIR with LoRA on a dataset in the toolkit's schema.

Built on ``transformers.Trainer`` and ``peft``: mixed precision and gradient checkpointing on a
GPU, gradient accumulation, ranks under ``torchrun`` / ``accelerate launch``, TensorBoard when
installed (``--report-to``), checkpoints the run resumes from. What the toolkit adds:

* a run folder with the run engine's rule: ``train_config.json`` holds every resolved setting
  and the dataset's and base model's fingerprints; a rerun with the same settings resumes from
  the last checkpoint (or says the run is complete), with other settings it is refused naming
  each difference unless ``--overwrite``;
* checks before any model is loaded: an empty split, a dataset without the columns the recipe
  needs (and which ``idc-precompute`` pass makes them), a base model of the wrong kind, a
  LoRA rank of 0;
* validation after every epoch by generating captions and scoring them with the toolkit's own
  scorer (CIDEr, per category); the best adapter is kept in ``RUN_DIR/adapter`` (a peft folder
  that ``idc-eval --model <same> --adapter RUN_DIR/adapter`` loads as it is) and the per-epoch
  table in ``epochs.json`` / ``epochs.md``;
* ``--attention-every N`` (DAVIR): every N steps, Fig. 4-style pictures of the final-layer
  attention over the before and after image with the change mask's outline, in
  ``RUN_DIR/attention/``.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..cards import dataset_facts
from ..errors import IDCError
from .recipes import Settings, get_recipe

log = logging.getLogger(__name__)
CONFIG_FILE = "train_config.json"


@dataclass
class TrainResult:
    out: Path
    adapter: Path
    epochs: list[dict[str, Any]] = field(default_factory=list)
    already_done: bool = False
    losses: list[float] = field(default_factory=list)  #: the training loss of every logged step


def _base_model_type(base_model: str, revision: Optional[str]) -> str:
    """The base model's ``model_type``, from its config only (no weights are read)."""
    local = Path(base_model) / "config.json"
    if local.is_file():
        return json.loads(local.read_text()).get("model_type", "")
    from transformers import AutoConfig

    from ..runs.rows import check_hub_repo

    check_hub_repo(base_model, "model", "--base-model", revision)
    return AutoConfig.from_pretrained(base_model, revision=revision).model_type


def _open_split(dataset: str, split: str):
    from datasets import load_dataset

    try:
        return load_dataset(str(dataset), split=split)
    except ValueError as exc:
        raise IDCError(f"{dataset}: cannot load split {split!r}: {exc}") from None


def check_inputs(recipe_cls, dataset: str, facts: dict[str, Any], split: str, val_split: Optional[str],
                 base_model: str, revision: Optional[str], lora_rank: int) -> tuple[Any, Any]:
    """Every check that needs no model: one-line errors naming the cause and the fix."""
    if lora_rank <= 0:
        raise IDCError(f"--lora-rank {lora_rank}: a LoRA rank must be at least 1")
    ds = _open_split(dataset, split)
    if len(ds) == 0:
        raise IDCError(f"{dataset}: split {split!r} is empty; nothing to train on")
    for column, made_by in recipe_cls.required.items():
        if column not in ds.column_names:
            raise IDCError(f"{dataset} [{split}] has no {column!r} column, which {recipe_cls.name} trains on: run {made_by} first")
    if recipe_cls.name == "davir" and facts.get("entities_strategy") not in (None, "davir"):
        raise IDCError(f"{dataset}: its entities were retrieved with the {facts['entities_strategy']!r} strategy; DAVIR "
                       "trains on DAVIR's: run idc-precompute entities --strategy davir")
    model_type = _base_model_type(base_model, revision)
    if model_type != recipe_cls.model_type:
        raise IDCError(f"--base-model {base_model} is a {model_type or 'unknown'} model; {recipe_cls.name} trains a "
                       f"{recipe_cls.model_type} model")
    val = None
    if val_split:
        try:
            val = _open_split(dataset, val_split)
        except IDCError:
            log.warning("no %r split: no validation, the last adapter is kept", val_split)
    return ds, val


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


def _fingerprint(settings: Settings, dataset: str, base_model: str) -> dict[str, Any]:
    from ..runs.fingerprint import path_content

    return {**asdict(settings), "dataset_content": path_content(dataset), "base_model_content": path_content(base_model)}


def _open_run(out: Path, fields: dict[str, Any], overwrite: bool) -> Optional[dict[str, Any]]:
    """The run engine's rule for a training folder; returns the finished record, if any."""
    from ..runs.fingerprint import differences

    config = out / CONFIG_FILE
    if config.is_file() and not overwrite:
        old = json.loads(config.read_text())
        changed = differences(old.get("fingerprint", {}), fields)
        if changed:
            raise IDCError(f"{out} holds a training run with other settings ({'; '.join(changed)}); "
                           "pass --overwrite to replace it, or choose another --out")
        return old if old.get("complete") else None
    if overwrite and out.exists():
        shutil.rmtree(out)
    return None


def train(model: str, dataset: str, out: str | Path, *, split: str = "train", val_split: Optional[str] = "validation",
          base_model: Optional[str] = None, revision: Optional[str] = None, epochs: Optional[float] = None,
          batch_size: Optional[int] = None, grad_accum: int = 1, lr: Optional[float] = None,
          lora_rank: Optional[int] = None, fac_weight: Optional[float] = None, fac_reading: str = "paper",
          max_steps: int = -1, save_steps: Optional[int] = None, seed: int = 0, device: str = "auto",
          dtype: str = "auto", pair_style: Optional[str] = None, num_entities: int = 1, val_limit: int = 0,
          attention_every: int = 0, report_to: str = "auto", overwrite: bool = False, progress: bool = True,
          callbacks: tuple = ()) -> TrainResult:
    """Train ``model``'s recipe on ``dataset`` into ``out`` (see the module docstring)."""
    from ..devices import resolve_device
    from ..masks.fac import FAC_READINGS

    recipe_cls = get_recipe(model)
    if fac_reading not in FAC_READINGS:
        raise IDCError(f"unknown --fac-reading {fac_reading!r}; choose {', '.join(FAC_READINGS)}")
    out = Path(out)
    facts = dataset_facts(dataset)  # some defaults depend on the dataset (BLIP2IDC's rank on CLEVR-Change)
    d = recipe_cls.resolve(facts)
    rank = d["lora_rank"] if lora_rank is None else lora_rank
    settings = Settings(
        model=model, base_model=base_model or d["base_model"], revision=revision if base_model else (revision or d.get("revision")),
        epochs=d["epochs"] if epochs is None else epochs, batch_size=batch_size or d["batch_size"], grad_accum=grad_accum,
        lr=d["lr"] if lr is None else lr, lora_rank=rank, lora_alpha=2 * rank, lora_dropout=0.05,
        max_caption_tokens=d["max_caption_tokens"], fac_weight=d.get("fac_weight", 0.0) if fac_weight is None else fac_weight,
        fac_reading=fac_reading, max_steps=max_steps, seed=seed, dtype=dtype, pair_style=pair_style,
        num_entities=num_entities, split=split, val_split=val_split, val_limit=val_limit, attention_every=attention_every)
    train_rows, val_rows = check_inputs(recipe_cls, dataset, facts, split, val_split, settings.base_model,
                                        settings.revision, settings.lora_rank)
    fields = _fingerprint(settings, dataset, settings.base_model)
    done = _open_run(out, fields, overwrite)
    if done is not None:
        return TrainResult(out, out / "adapter", done.get("epochs", []), already_done=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / CONFIG_FILE).write_text(json.dumps(_record(fields, complete=False), indent=2) + "\n")
    device = resolve_device(device)

    import torch
    from peft import get_peft_model
    from transformers import TrainingArguments

    from .callbacks import AttentionPictures, EpochValidation

    torch.manual_seed(seed)
    recipe = recipe_cls(settings, facts)
    base = recipe.load()
    net = get_peft_model(base, recipe.lora_config(base))
    on_gpu = device.startswith("cuda")
    steps_per_epoch = max(1, -(-len(train_rows) // (settings.batch_size * grad_accum)))
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"), per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=grad_accum, learning_rate=settings.lr, num_train_epochs=settings.epochs,
        max_steps=max_steps, seed=seed, data_seed=seed, save_strategy="steps", save_steps=save_steps or steps_per_epoch,
        save_total_limit=2, logging_steps=1, report_to=_report_to(report_to), remove_unused_columns=False,
        dataloader_num_workers=0, use_cpu=not on_gpu, bf16=on_gpu and torch.cuda.is_bf16_supported() and dtype != "float32",
        fp16=on_gpu and not torch.cuda.is_bf16_supported() and dtype != "float32",
        activation_checkpointing=on_gpu, disable_tqdm=not progress, optim="adamw_torch")
    validation = EpochValidation(recipe, val_rows, dataset, val_split, out, val_limit)
    extra = [validation] + ([AttentionPictures(recipe, val_rows or train_rows, out, attention_every)]
                            if attention_every > 0 and recipe_cls.name == "davir" else [])
    trainer = _trainer_class()(model=net, args=args, train_dataset=_Rows(train_rows), data_collator=recipe.collate,
                               callbacks=extra + list(callbacks))
    trainer.recipe = recipe
    last = last_complete_checkpoint(out / "checkpoints")
    if last:
        log.info("resuming from %s", last)
    outcome = trainer.train(resume_from_checkpoint=last)
    if val_rows is None or not (out / "adapter" / "adapter_config.json").is_file():
        _save_adapter(net, out / "adapter", settings.base_model)
    record = _record(fields, complete=True, epochs=validation.table)
    record["trainer_metrics"] = outcome.metrics  # train_runtime, samples/s, steps/s, final loss
    (out / CONFIG_FILE).write_text(json.dumps(record, indent=2) + "\n")
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return TrainResult(out, out / "adapter", validation.table, losses=losses)


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
        shutil.rmtree(path)
    return None


def _record(fields: dict[str, Any], complete: bool, epochs: Optional[list] = None) -> dict[str, Any]:
    import platform

    from .. import __version__

    versions = {"idc_toolkit": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "accelerate", "datasets"):
        try:
            from importlib import metadata

            versions[name] = metadata.version(name)
        except Exception:
            versions[name] = None
    return {"fingerprint": fields, "versions": versions, "complete": complete, "epochs": epochs or []}


def _report_to(value: str) -> list[str]:
    """``auto``: TensorBoard when installed (it needs no network), else only the progress bar;
    W&B when asked (``--report-to wandb``)."""
    if value == "auto":
        import importlib.util

        return ["tensorboard"] if importlib.util.find_spec("tensorboard") else []
    return [] if value == "none" else [v for v in value.split(",") if v]


def _save_adapter(net, folder: Path, base_model: str) -> None:
    net.save_pretrained(str(folder))
    cfg_path = folder / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = base_model
    cfg_path.write_text(json.dumps(cfg, indent=2))


def _trainer_class():
    from transformers import Trainer

    class IDCTrainer(Trainer):
        """``Trainer`` whose loss is the caption cross-entropy plus the recipe's extra terms
        (DAVIR's λ L_attn); batch keys starting with ``idc_`` are the recipe's, not the model's."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            extras = {k: inputs.pop(k) for k in list(inputs) if k.startswith("idc_")}
            outputs = model(**inputs)
            loss = outputs.loss
            extra = self.recipe.extra_loss(model, extras)
            if extra is not None:
                loss = loss + extra
            return (loss, outputs) if return_outputs else loss

    return IDCTrainer

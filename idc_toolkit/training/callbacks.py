"""``transformers.TrainerCallback``s of ``idc-train``: validation by our scorer, attention pictures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from transformers import TrainerCallback


def _batches(rows, size: int):
    for start in range(0, len(rows), size):
        yield [rows[i] for i in range(start, min(len(rows), start + size))]


class EpochValidation(TrainerCallback):
    """After every epoch: caption the validation split, score it with the toolkit's exact
    scorer (CIDEr overall and per category), append a row to ``epochs.json`` / ``epochs.md``,
    and save the adapter to ``RUN_DIR/adapter`` when its CIDEr is the best so far. The table
    is on disk, so a resumed run keeps the epochs it already validated."""

    def __init__(self, recipe, rows, dataset: str, split: Optional[str], out: Path, limit: int = 0):
        self.recipe, self.rows, self.dataset, self.split, self.out, self.limit = recipe, rows, dataset, split, out, limit
        path = out / "epochs.json"
        self.table: list[dict[str, Any]] = json.loads(path.read_text()) if path.is_file() else []

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        if self.rows is None or model is None or not state.is_world_process_zero:
            return  # under torchrun, rank 0 validates and keeps the adapter
        from ..evaluators.scoring import evaluate

        rows = self.rows if not self.limit else self.rows.select(range(min(self.limit, len(self.rows))))
        was_training = model.training
        model.eval()
        preds: dict[str, str] = {}
        for batch in _batches(rows, args.per_device_train_batch_size):
            for row, caption in zip(batch, self.recipe.generate(model, batch)):
                preds[row["pair_id"]] = caption
        if was_training:
            model.train()
        metrics = evaluate(preds, dataset=str(self.dataset), split=self.split, metrics=["CIDEr"],
                           allow_missing=bool(self.limit)).metrics
        entry = {"epoch": round(state.epoch or 0, 3), "step": state.global_step,
                 "loss": next((h["loss"] for h in reversed(state.log_history) if "loss" in h), None),
                 "CIDEr": metrics["overall"]["CIDEr"],
                 **{f"CIDEr/{c}": v["CIDEr"] for c, v in metrics.get("by_category", {}).items()}}
        best = max((r["CIDEr"] for r in self.table), default=None)
        self.table.append(entry)
        if best is None or entry["CIDEr"] > best:
            from .train import _save_adapter

            _save_adapter(model, self.out / "adapter", self.recipe.settings.base_model)
            entry["kept"] = True
        (self.out / "epochs.json").write_text(json.dumps(self.table, indent=2) + "\n")
        cols = list(dict.fromkeys(k for r in self.table for k in r))
        lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
        lines += ["| " + " | ".join("" if r.get(c) is None else (f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]))
                                    for c in cols) + " |" for r in self.table]
        (self.out / "epochs.md").write_text("\n".join(lines) + "\n")


class AttentionPictures(TrainerCallback):
    """Every ``every`` steps, DAVIR Fig. 4-style pictures (final-layer attention over the
    before and after image, change mask outlined) of the first two pairs, so a user can watch
    the FAC loss pull the attention onto the change."""

    def __init__(self, recipe, rows, out: Path, every: int):
        self.recipe, self.rows, self.every = recipe, rows, every
        self.folder = out / "attention"

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if model is None or state.global_step % self.every or not state.is_world_process_zero:
            return
        import torch

        from ..models.davir import draw_attention

        rows = [{**self.rows[i], "__index": i, "__epoch": 0} for i in range(min(2, len(self.rows)))]
        batch = self.recipe.collate(rows)
        batch = {k: v.to(model.device) for k, v in batch.items() if not k.startswith("idc_")}
        was_training = model.training
        model.eval()
        with torch.no_grad():
            model(**batch)
        if was_training:
            model.train()
        att = self.recipe.attention.last.float().cpu().numpy()
        g = self.recipe.grid
        self.folder.mkdir(parents=True, exist_ok=True)
        for row, maps in zip(rows, att):
            picture = draw_attention(row["before"], row["after"], maps.reshape(2, g, g), row.get("change_mask"))
            picture.save(self.folder / f"step-{state.global_step:06d}_{row['pair_id']}.png")

"""``transformers.TrainerCallback``s of ``idc-train``: validation, the step log, attention pictures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..files import file_name_for, inside, write_text_atomic
from ..runs.folder import write_json_atomic


def _batches(rows, size: int):
    for start in range(0, len(rows), size):
        yield [rows[i] for i in range(start, min(len(rows), start + size))]


def _epoch_ended(state) -> bool:
    return state.epoch is not None and abs(state.epoch - round(state.epoch)) < 1e-6 and round(state.epoch) > 0


class EpochValidation(TrainerCallback):
    """At the last optimizer step of every epoch — before the Trainer writes that step's
    checkpoint, so a kill during validation redoes the epoch — validate: caption the split with
    the model's own decoding and score it with the toolkit's scorer (CIDEr overall and per
    category), or, with ``select_by="loss"`` (BLIP2IDC as released), take the mean validation
    loss. The row goes to ``epochs.json`` / ``epochs.md``; the adapter is kept in
    ``RUN_DIR/adapter`` when it is the best so far; ``patience`` epochs without improvement stop
    the run."""

    #: ``Trainer.log`` of the trainer this callback validates for (its constructor sets it)
    log = None

    def __init__(self, recipe, rows, dataset: str, settings, out: Path):
        self.recipe, self.rows, self.dataset, self.settings, self.out = recipe, rows, dataset, settings, out
        self._refs = None  # the validation references, loaded at the first validation
        path = out / "epochs.json"
        self.table: list[dict[str, Any]] = json.loads(path.read_text()) if path.is_file() else []

    def _rows(self):
        limit = self.settings.val_limit
        return self.rows if not limit else self.rows.select(range(min(limit, len(self.rows))))

    def _references(self, rows):
        """The validation split's references, loaded once, narrowed to the pairs validated
        (``--val-limit``: the split's first N), so every one of them is scored and no other."""
        if self._refs is None:
            from ..evaluators.scoring import load_references

            refs = load_references(dataset=str(self.dataset), split=self.settings.val_split)
            kept = set(rows["pair_id"])
            refs.captions = {pid: caps for pid, caps in refs.captions.items() if pid in kept}
            refs.categories = {pid: c for pid, c in refs.categories.items() if pid in kept}
            self._refs = refs
        return dataclasses.replace(self._refs)  # the scorer may narrow its copy further, never the loaded one

    def _cider(self, model, batch_size: int) -> dict[str, Any]:
        """Each rank captions its share of the split (rows ``rank::world``); rank 0 gathers the
        captions, scores them and sends the scores back, so every rank takes the same decision."""
        from .ranks import gather_to_first, share_from_first

        rows = self._rows()
        from ..runs.ranks import dist_info

        rank, world, _ = dist_info()
        mine = rows.select(range(rank, len(rows), world)) if world > 1 else rows
        preds: dict[str, str] = {}
        for batch in _batches(mine, batch_size):
            for row, caption in zip(batch, self.recipe.generate(model, batch)):
                preds[row["pair_id"]] = caption
        gathered = gather_to_first(preds)
        scores = None
        if rank == 0:
            from ..evaluators.scoring import evaluate

            merged = {k: v for part in gathered for k, v in part.items()}
            metrics = evaluate(merged, dataset=str(self.dataset), split=self.settings.val_split, metrics=["CIDEr"],
                               refs=self._references(rows)).metrics
            scores = {"CIDEr": 100 * metrics["overall"]["CIDEr"],
                      **{f"CIDEr/{c}": 100 * v["CIDEr"] for c, v in metrics.get("by_category", {}).items()}}
        return share_from_first(scores)

    def _loss(self, model, batch_size: int) -> dict[str, Any]:
        import torch

        from ..models.recipe import caption_loss_sum

        rows, losses = self._rows(), []
        for start in range(0, len(rows) - batch_size + 1, batch_size):  # drop_last, as the released loader
            batch = self.recipe.collate([{**rows[i], "__index": i, "__epoch": 0} for i in range(start, start + batch_size)])
            labels = batch.pop("labels")
            inputs = {k: v.to(model.device) for k, v in batch.items() if not k.startswith("idc_")}
            with torch.no_grad():
                total, count = caption_loss_sum(model(**inputs).logits, labels)
            losses.append(float(total) / max(count, 1))
        return {"val_loss": sum(losses) / len(losses) if losses else float("nan")}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.rows is None or model is None or not _epoch_ended(state):
            return
        epoch = round(state.epoch)
        if any(r["epoch"] == epoch for r in self.table):
            return
        by_loss = self.settings.select_by == "loss"
        was_training = model.training
        model.eval()
        scores = self._loss(model, args.per_device_train_batch_size) if by_loss else self._cider(
            model, args.per_device_train_batch_size)
        if was_training:
            model.train()
        key = "val_loss" if by_loss else "CIDEr"
        entry = {"epoch": epoch, "step": state.global_step, **scores}
        previous = [r[key] for r in self.table]
        best = (min if by_loss else max)(previous, default=None)
        improved = best is None or (entry[key] < best if by_loss else entry[key] > best)
        if state.is_world_process_zero:
            if improved:
                from .adapter import save_adapter

                save_adapter(model, self.out / "adapter", self.settings.base_model)
        entry["kept"] = improved
        self.table.append(entry)
        if self.log is not None:  # TensorBoard / W&B (report_to) get the validation scores, per category too
            pending = control.should_log  # Trainer.log clears it: the step's own loss log must still happen
            self.log({f"eval_{k}": v for k, v in scores.items()})  # the TensorBoard callback files eval_X under eval/X
            control.should_log = pending
        if state.is_world_process_zero:
            write_json_atomic(self.out / "epochs.json", self.table)
            write_text_atomic(self.out / "epochs.md", epochs_markdown(self.table))
        patience = self.settings.patience
        if patience and len(self.table) > patience and not any(r["kept"] for r in self.table[-patience:]):
            control.should_training_stop = True


def epochs_markdown(table: list[dict[str, Any]]) -> str:
    """The per-epoch table; CIDEr ×100 as in ``metrics.md``."""
    from ..escape import markdown_table

    cols = list(dict.fromkeys(k for r in table for k in r))
    rows = [["" if r.get(c) is None else (f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c])) for c in cols]
            for r in table]
    return "\n".join(markdown_table(cols, rows, ["---"] * len(cols))) + "\n\nCIDEr x100 (validation, the toolkit's scorer).\n"


class StepLog(TrainerCallback):
    """``steps.jsonl``: one line per optimizer step with ``step``, ``epoch``, ``loss`` (mean per
    target token of the step, extra terms included), ``lr``, ``grad_norm`` and every loss term
    (``caption_loss``, and DAVIR's ``attention_loss``) on its own.

    The terms stay tensors on the model's device, summed over the step's micro-batches; they are
    read back together every ``every`` optimizer steps, one host-device synchronisation for
    those steps (a read per step would make the CPU wait for the GPU at every step). They are
    also read at every checkpoint before it is written (so a resumed run's log is whole), at each
    epoch's end and when training stops; each such step is also a step the Trainer logs."""

    def __init__(self, path: Path, every: int = 1):
        self.path, self.every = path, max(1, int(every))
        self.terms: dict[str, Any] = {}  #: this step's terms so far (tensors)
        self.grad_norm: Any = None  #: this step's gradient norm (set by the Trainer's subclass)
        self.lr: Any = None
        self.pending: list[dict[str, Any]] = []  #: finished steps not yet written

    def add(self, terms: dict[str, Any]) -> None:
        for name, value in terms.items():
            value = value.detach() if hasattr(value, "detach") else value
            self.terms[name] = value if name not in self.terms else self.terms[name] + value

    def on_optimizer_step(self, args, state, control, lr_scheduler=None, optimizer=None, **kwargs):
        # the rate this step used: the scheduler has not stepped yet (what the Trainer logs)
        if lr_scheduler is not None and hasattr(lr_scheduler, "get_last_lr"):
            self.lr = lr_scheduler.get_last_lr()[0]
        elif optimizer is not None:
            self.lr = optimizer.param_groups[0]["lr"]

    def on_step_end(self, args, state, control, **kwargs):
        self.pending.append({"step": state.global_step, "epoch": round(state.epoch or 0, 4), "lr": self.lr,
                             "grad_norm": self.grad_norm, "terms": self.terms})
        self.terms, self.grad_norm = {}, None
        if (state.global_step % self.every == 0 or control.should_save or control.should_training_stop
                or _epoch_ended(state) or state.global_step >= state.max_steps > 0):
            control.should_log = True  # the Trainer's own log (TensorBoard, W&B) reads its loss at the same step
            self.flush(state)

    def on_epoch_end(self, args, state, control, **kwargs):
        self.flush(state)  # before the epoch's checkpoint is written

    def on_train_end(self, args, state, control, **kwargs):
        self.flush(state)

    def flush(self, state) -> None:
        """Read the pending steps' values back in one transfer and write their lines (rank 0)."""
        if not self.pending:
            return
        import torch

        from .ranks import sum_over_ranks

        pending, self.pending = self.pending, []
        tensors = [v for p in pending for v in (*p["terms"].values(), p["grad_norm"], p["lr"]) if isinstance(v, torch.Tensor)]
        values = iter(torch.stack([t.detach().float().reshape(()) for t in tensors]).tolist()) if tensors else iter(())

        def plain(v):
            return next(values) if isinstance(v, torch.Tensor) else v

        rows, shares = [], {}
        for k, p in enumerate(pending):
            for name, value in p["terms"].items():
                shares[f"{k}/{name}"] = plain(value)
            rows.append({"step": p["step"], "epoch": p["epoch"], "grad_norm": plain(p["grad_norm"]), "lr": plain(p["lr"])})
        shares = sum_over_ranks(shares)  # each rank holds its tokens' share of the step
        if not state.is_world_process_zero:
            return
        with self.path.open("a", encoding="utf-8") as fh:
            for k, (row, p) in enumerate(zip(rows, pending)):
                terms = {name: shares[f"{k}/{name}"] for name in p["terms"]}
                line = {"step": row["step"], "epoch": row["epoch"], "loss": terms.pop("loss", None), "lr": row["lr"],
                        "grad_norm": row["grad_norm"], **terms}
                fh.write(json.dumps(line) + "\n")


class FirstSteps(TrainerCallback):
    """``--compile``: the wall time of the first optimizer step (the compilation happens there)
    against the next ones, logged once and kept in ``info`` (the run record's ``speed.compile``)."""

    def __init__(self, info: dict[str, Any], later: int = 3):
        self.info, self.later, self.times, self.start = info, later, [], None

    def on_step_begin(self, args, state, control, **kwargs):
        import time

        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        import logging
        import statistics
        import time

        if self.start is None or len(self.times) > self.later:
            return
        self.times.append(time.perf_counter() - self.start)
        if len(self.times) == self.later + 1 or state.global_step >= state.max_steps:
            first, rest = self.times[0], self.times[1:]
            self.info["first_step_s"] = round(first, 2)
            if rest:
                self.info["later_step_s"] = round(statistics.median(rest), 3)
            logging.getLogger(__name__).info("--compile: first step %.1f s (compilation included), then %s a step", first,
                                             f"{statistics.median(rest):.2f} s" if rest else "no other step")
            self.times.append(float("nan"))  # done


def progress_callback(on_terminal: bool) -> TrainerCallback:
    """What shows a run's progress: on a terminal, the Trainer's bar without its printing of every
    log dict (``steps.jsonl`` and ``epochs.md`` hold them); elsewhere (a log file, a job's
    output) one plain line per tenth of the run instead of a bar redrawn with carriage returns."""
    from transformers.trainer_callback import ProgressCallback

    class Bar(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            pass

    return Bar() if on_terminal else StepLines()


class StepLines(TrainerCallback):
    """One line per tenth of the optimizer steps: step, share, the last logged loss, elapsed time."""

    def __init__(self) -> None:
        self.loss, self.start = None, None

    def on_train_begin(self, args, state, control, **kwargs):
        import time

        self.start = time.monotonic()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.loss = logs["loss"]

    def on_step_end(self, args, state, control, **kwargs):
        import sys
        import time

        every = max(1, state.max_steps // 10)
        if state.is_world_process_zero and (state.global_step % every == 0 or state.global_step == state.max_steps):
            loss = f", loss {self.loss:.4g}" if isinstance(self.loss, (int, float)) else ""
            print(f"[idc-train] step {state.global_step}/{state.max_steps} ({100 * state.global_step // max(1, state.max_steps)}%)"
                  f"{loss}, {time.monotonic() - (self.start or time.monotonic()):.0f} s", file=sys.stderr, flush=True)


class AttentionPictures(TrainerCallback):
    """Every ``every`` steps, the recipe's pictures of the first two pairs
    (:meth:`~idc_toolkit.models.recipe.Recipe.attention_pictures`: DAVIR draws Fig. 4, the final-layer attention
    over both images with the change mask outlined), so a user can watch the attention move.
    File names made from pair ids never leave ``RUN_DIR/attention``."""

    def __init__(self, recipe, rows, out: Path, every: int):
        self.recipe, self.rows, self.every = recipe, rows, every
        self.folder = out / "attention"

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if model is None or state.global_step % self.every or not state.is_world_process_zero:
            return
        rows = [{**self.rows[i], "__index": i, "__epoch": 0} for i in range(min(2, len(self.rows)))]
        was_training = model.training
        model.eval()
        pictures = self.recipe.attention_pictures(model, rows)
        if was_training:
            model.train()
        self.folder.mkdir(parents=True, exist_ok=True)
        for row, picture in zip(rows, pictures):
            picture.save(inside(self.folder, file_name_for(f"step-{state.global_step:06d}_{row['pair_id']}", ".png")))

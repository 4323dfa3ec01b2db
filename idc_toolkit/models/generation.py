"""Running a checkpoint over a dataset split on the run engine: batched, resumable, data-parallel.

The run engine (:mod:`idc_toolkit.runs`) owns ``--out``: captions are written in parts of
``rows_per_part`` pairs (``.idc_run/parts/``), a rerun with the same fingerprint (model,
revision, content hashes of local weights and adapter, options, dataset fingerprint,
split, limit, toolkit version) continues after the last finished part, one with another
fingerprint is refused naming what differs (``--overwrite`` replaces). When every part is
there, ``predictions.jsonl`` is written in dataset order, with ``model.json``.

Several GPUs: launch the same command under ``torchrun --nproc-per-node N`` (or
``accelerate launch``): ``torch.distributed`` splits the parts between ranks, a barrier
waits for all of them, and rank 0 assembles the same file one process would write.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from dataclasses import fields as dataclass_fields
from typing import Any, Mapping, Optional, Union

from ..errors import IDCError
from ..stores import input_folder, output_folder
from ..evaluators.outputs import MODEL_RUN_FILES, OUTPUT_FILES
from ..judge import JUDGE_DIR
from ..options import masked, taken, with_fields
from ..runs import EngineArgs, PartOutput, RunFolder, open_split, path_content, run_job
from .args import GenerateArgs
from ..runs.ranks import barrier
from ..runs.rows import ListRows, decode_image

log = logging.getLogger(__name__)

PREDICTIONS = MODEL_RUN_FILES[0]
#: where ``--reverse`` writes the captions of the swapped pairs, inside the run's --out
REVERSED_DIR = MODEL_RUN_FILES[3]
#: --overwrite of a generation also removes the evaluation of its old predictions (no stale metrics beside new captions)
OWNED = (*MODEL_RUN_FILES, *OUTPUT_FILES)


class GenerationTask:
    """The engine's per-batch function: the runner's captions of a batch of pairs. The runner
    is built in :meth:`setup` (once per process, rank or Ray actor)."""

    def __init__(self, runner_cls, runner_kwargs: dict[str, Any], batch_size: int, progress: bool = True,
                 swap: bool = False):
        from datasets import Features, Value

        self.runner_cls, self.runner_kwargs, self.batch_size, self.progress = runner_cls, runner_kwargs, batch_size, progress
        self.swap = swap  # before and after exchanged: the B -> A captions reversibility is scored on
        self.features = Features({"pair_id": Value("string"), "caption": Value("string")})
        self.runner = None

    def setup(self, device: str) -> None:
        if self.runner is None:
            if not self.progress:
                from ..devices import quiet_model_loading

                quiet_model_loading()
            self.runner = self.runner_cls(device=device, **self.runner_kwargs)

    def __call__(self, split: str, rows: list[dict[str, Any]], start: int) -> PartOutput:
        first, second = ("after", "before") if self.swap else ("before", "after")
        decoded = [{**r, "before": decode_image(r[first]), "after": decode_image(r[second])} for r in rows]
        captions = self.runner.generate(decoded)
        return PartOutput([{"pair_id": str(r["pair_id"]), "caption": c} for r, c in zip(rows, captions)])


def model_fields(model: str, base_model: str, adapter: Optional[str], revision: Optional[str], dtype: str,
                 options: Any, adapter_path: Optional[str] = None, adapter_revision: Optional[str] = None,
                 dataset_options: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """What a model's captions depend on: names, revisions, content hashes (of the adapter's
    local copy when it came from the Hub), dtype, the runner's options (each field as its
    ``record`` says: :func:`~idc_toolkit.runs.fingerprint.recorded`) and what the dataset added."""
    from ..runs.fingerprint import recorded

    own = recorded(options)
    own = {f.name: own[f.name] for f in dataclass_fields(options) if f.name in own}  # model.json lists them in field order
    return {"model": model, "base_model": base_model, "revision": revision, "base_model_sha256": path_content(base_model),
            "adapter": adapter, "adapter_revision": adapter_revision, "adapter_sha256": path_content(adapter_path or adapter),
            "dtype": dtype, **own, **(dataset_options or {})}


def generate_predictions(runner_cls, args: Optional[GenerateArgs] = None, *, dataset: str, split: str, out_dir: Path,
                         options: Union[None, Mapping[str, Any], Any] = None, overwrite: bool = False, progress: bool = True,
                         engine: Optional[EngineArgs] = None, swap: bool = False, **fields: Any) -> Optional[Path]:
    """Write ``out_dir/predictions.jsonl`` for the split (see module docstring): ``args`` (a
    :class:`~.args.GenerateArgs`, or ``fields`` make one) names the checkpoint and the batch;
    ``options`` are the runner's own (its ``Options``, or a dict of their fields; a field of them
    may also be one of ``fields``); ``engine`` which block of the parts this job writes;
    ``args.device`` is used as given (resolved by the caller). ``swap``: every pair captioned with
    before and after exchanged (``--reverse``'s captions)."""
    from .. import __version__
    from ..card_data import dataset_facts

    from .adapters import resolve_adapter

    run = _generate_args(runner_cls, args, fields)
    runner_cls.check_base_model(run.base_model)
    out_dir = output_folder(out_dir, IDCError)
    dataset = input_folder(dataset, IDCError, progress)  # a store's dataset: its local copy
    options = runner_cls.make_options(options, **taken(fields, runner_cls.Options))
    base_model, revision, adapter, dtype, limit = run.base_model, run.revision, run.adapter, run.dtype, run.limit
    adapter_path = resolve_adapter(adapter, run.adapter_revision) if adapter else None
    rows, features, fp = open_split(dataset, split, progress)
    facts = dataset_facts(dataset)
    runner_cls.check_dataset(facts, list(features), options, f"{dataset} [{split}]")
    added = runner_cls.dataset_options(list(features), options)
    if limit is not None:
        rows = ListRows(rows.read(0, min(limit, len(rows))))
    fields = {"input": fp, "split": split, "limit": limit, "facts": facts.to_card(), "toolkit": __version__,
              **model_fields(runner_cls.name, base_model, adapter, revision, dtype, options, adapter_path, run.adapter_revision,
                             added),
              **({"swapped": True} if swap else {})}
    folder = RunFolder(out_dir, f"{runner_cls.name} generation", fields, owned=OWNED, card_record=False,
                       tolerated=(JUDGE_DIR,), progress=progress).open(overwrite)
    final = Path(out_dir) / PREDICTIONS
    if folder.complete:
        return final
    kwargs = {"base_model": base_model, "adapter": adapter_path, "dtype": dtype, "facts": facts, "revision": revision,
              "options": options, **added}
    task = GenerationTask(runner_cls, kwargs, run.batch_size, progress, swap)
    outcome = run_job(folder, {split: rows}, task, rows_per_part=run.rows_per_part or run.batch_size, engine=engine,
                      device=run.device, progress=progress, desc=runner_cls.name)
    if outcome.complete and outcome.is_main:
        def stage(stage_dir: Path) -> None:
            from ..runs.parquet import write_parts_jsonl

            write_parts_jsonl(folder, split, stage_dir / PREDICTIONS)
            describe = runner_cls.description(device=run.device, **{**kwargs, "adapter": adapter})  # with or without a loaded model
            record = masked({"model": runner_cls.name, **fields, **describe})
            (stage_dir / "model.json").write_text(json.dumps(record, indent=2, default=str) + "\n")

        folder.finalise(stage, order=("model.json", PREDICTIONS))
    barrier()
    if not outcome.complete:
        if (engine or EngineArgs()).shard[1] > 1:  # a job of a --shard array: the job that completes the set writes the predictions
            log.info("%s: this job wrote %d part(s); predictions.jsonl is written when the other --shard jobs finish",
                     out_dir, outcome.parts_written)
            return None
        raise IDCError(f"{out_dir}: {outcome.parts_total - outcome.parts_written} part(s) missing; rerun to finish")
    return final


def _generate_args(runner_cls, args: Optional[GenerateArgs], fields: dict[str, Any]) -> GenerateArgs:
    """``args``, or the :class:`~.args.GenerateArgs` that ``fields`` name (taken out of ``fields``),
    or ``args`` with them changed; what is left must be the runner's options."""
    import warnings

    if "run" in fields:  # the argument's earlier name
        warnings.warn("generate_predictions(run=...) is now generate_predictions(args=...)", DeprecationWarning,
                      stacklevel=3)
        args = fields.pop("run")
    mine = taken(fields, GenerateArgs)
    known = {f.name for f in dataclass_fields(runner_cls.Options)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise IDCError(f"generate_predictions: unknown option(s) {', '.join(unknown)}")
    return with_fields(GenerateArgs, args, **mine)


"""Column passes: a dataset in, the same dataset with new columns out (masks, entities).

A capability gives its per-batch function (a :class:`~.engine.RowTask` returning the new
columns of each row), the new features, its parameters and a card section; this module
opens every split of the source (a local folder or a Hub id), fingerprints the run
(input fingerprints, parameters, model hashes, toolkit version), runs the job on the
chosen engine and, when the last part is written, assembles the folder and its card.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Optional, TypeVar

from .. import __version__
from ..errors import RunError
from ..stores import input_folder, output_folder
from ..schema import add_columns, validate_features
from ..options import with_fields
from .args import EngineArgs, RunArgs
from .engine import PartOutput, run_job
from .fingerprint import recorded
from .folder import RunFolder
from .ranks import barrier
from .parquet import DEFAULT_MAX_SHARD_BYTES, assemble
from .rows import RowSource, open_split

A = TypeVar("A", bound=RunArgs)


def run_args(options_cls: type[A], args: Optional[A] = None, **fields_: Any) -> A:
    """:func:`~idc_toolkit.options.with_fields` for a :class:`RunArgs` class; ``engine=`` may
    also be an :class:`EngineArgs`, as these functions took it before (its fields are used)."""
    engine = fields_.get("engine")
    if engine is None or isinstance(engine, EngineArgs):
        fields_.pop("engine", None)
        if engine is not None:
            fields_ = {**{f.name: getattr(engine, f.name) for f in fields(EngineArgs)}, **fields_}
    return with_fields(options_cls, args, **fields_)


def inputs(dataset: Any, out: Any) -> dict[str, Any]:
    """A pass's positional ``dataset`` and ``out``, as fields of its options where given."""
    return {name: value for name, value in (("dataset", dataset), ("out", out)) if value is not None}


@dataclass
class PassResult:
    out_dir: Path
    parts_written: int
    parts_total: int
    complete: bool
    already_done: bool = False


def source_splits(dataset: str | Path) -> list[str]:
    """Split names of a local folder (from its card, else its files) or a Hub dataset."""
    folder = Path(dataset)
    if folder.is_dir():
        from ..card_data import read_card_data

        data = read_card_data(folder)
        for config in data.get("configs") or []:
            if config.get("config_name", "default") == "default":
                return [f["split"] for f in config.get("data_files", []) if isinstance(f, dict) and "split" in f]
        names = sorted({p.name.split("-")[0] for p in (folder / "data").glob("*.parquet")})
        if not names:
            from .rows import check_built

            check_built(folder)
        return names
    from .rows import check_hub_repo

    check_hub_repo(str(dataset), "dataset", "--dataset")
    from datasets import get_dataset_split_names

    return list(get_dataset_split_names(str(dataset)))


class ColumnTask:
    """Wraps a function computing new columns into a task returning whole rows."""

    def __init__(self, compute, features, batch_size: int):
        self.compute, self.features, self.batch_size = compute, features, batch_size

    def setup(self, device: str) -> None:
        setup = getattr(self.compute, "setup", None)
        if setup is not None:
            setup(device)

    def __call__(self, split: str, rows: list[dict[str, Any]], start: int) -> PartOutput:
        new = self.compute(rows)
        if len(new) != len(rows):
            raise RunError(f"internal: {type(self.compute).__name__} returned {len(new)} rows for {len(rows)}")
        for row, cols in zip(rows, new):
            row.update(cols)
        return PartOutput(rows)


@dataclass
class ColumnPass:
    """What a column pass is: its name (``kind``, the run folder's job), the function that computes
    the new columns (``compute(rows) -> [new columns per row]``; it may have ``setup(device)`` to
    load its models once per process or Ray actor, and must be picklable for ``--engine ray``:
    load models in ``setup``, not ``__init__``), the columns' features, the settings recorded in
    the fingerprint and the card (``params``), the card's section, files written beside the data
    and facts added to the dataset's facts (what consumers read back, e.g. which entity strategy)."""

    kind: str
    compute: Any
    new_features: Mapping[str, Any]
    params: Mapping[str, Any]
    card_section: str
    extra_files: Mapping[str, str] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)


def run_column_pass(dataset: str | Path, out: str | Path, spec: ColumnPass, args: Optional[RunArgs] = None, *,
                    splits: Optional[list[str]] = None, device: str = "cpu", batch_size: int = 16,
                    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES, **fields_: Any) -> PassResult:
    """Add ``spec``'s new columns to every split (or ``splits``) of ``dataset`` into ``out``.
    ``args``: the run's options, a :class:`RunArgs` (or ``fields_`` make one: ``overwrite=``,
    ``progress=``, ``rows_per_part=``, ``shard=``, ``engine=``, ...), whose recorded fields join
    the run's fingerprint; ``device``: where this process computes, already resolved."""
    a = run_args(RunArgs, args, dataset=dataset, out=out, **fields_)
    overwrite, progress, rows_per_part = a.overwrite, a.progress, a.rows_per_part
    src, out = input_folder(str(dataset), RunError, progress), output_folder(out, RunError)
    if Path(src).exists() and Path(src).resolve() == out.resolve():
        raise RunError("--out must differ from --dataset (the source is read while the new folder is written)")
    splits = splits or source_splits(src)
    sources: dict[str, RowSource] = {}
    fingerprints: dict[str, str] = {}
    features = None
    for split in splits:
        rows, split_features, fp = open_split(src, split, progress)
        validate_features(split_features)
        sources[split], fingerprints[split] = rows, fp
        features = features or split_features
    out_features = add_columns(features, spec.new_features)
    # spec.params last: a pass may record an option its own way (a model type only with its checkpoint)
    run_fields = {"input": fingerprints, **recorded(a), **spec.params, "max_shard_bytes": max_shard_bytes,
                  "toolkit": __version__}
    owned = ("data", "README.md", "croissant.json", "build_report.json", *spec.extra_files)
    folder = RunFolder(out, spec.kind, run_fields, owned=owned, progress=progress).open(overwrite)
    if folder.complete:
        return PassResult(out, 0, 0, complete=True, already_done=True)
    outcome = run_job(folder, sources, ColumnTask(spec.compute, out_features, batch_size), rows_per_part=rows_per_part,
                      engine=a, device=device, progress=progress, desc=spec.kind)
    if outcome.complete and outcome.is_main:
        def stage(final: Path) -> None:
            from ..cards import write_pass_card

            summaries = assemble(folder, splits, out_features, final, max_shard_bytes)
            for name, text in spec.extra_files.items():
                (final / name).write_text(text, encoding="utf-8")
            local = Path(src)
            if (local / "build_report.json").is_file():
                (final / "build_report.json").write_bytes((local / "build_report.json").read_bytes())
            write_pass_card(final, local if local.is_dir() else None, src, out_features, summaries, spec.card_section,
                            folder.record(), spec.kind, dict(spec.facts), tuple(spec.new_features))

        folder.finalise(stage)
    barrier()
    return PassResult(out, outcome.parts_written, outcome.parts_total, complete=outcome.complete)


"""The build pipeline: raw release -> Hub-ready folder (parquet shards + card + report).

Output layout (what ``push_to_hub`` writes, so the folder can be uploaded as is)::

    OUT/README.md                              dataset card, YAML: configs + dataset_info
    OUT/data/<split>-00000-of-0000N.parquet    shards
    OUT/build_report.json                      counts, every skipped/repaired record

Resuming: after every finished shard the pipeline saves ``OUT/.idc_build.json`` (the shards
done, how many records of the split they hold, the report so far). A rerun with the same
builder, config and raw folder skips the written records without reading their images and
continues; the report is identical to an uninterrupted build's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from datasets import Features
from tqdm.auto import tqdm

from . import __version__
from .builder import BuilderConfig, PairBuilder
from .errors import BadImageError, BuildError
from .rawio import check_image_bytes, read_image_bytes
from .report import BuildReport
from .schema import CATEGORY, PairRecord, category_names, validate_features
from .writer import ShardWriter

STATE_FILE = ".idc_build.json"
TMP_DIR = ".partial"
DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024  # datasets' push_to_hub default
SCHEMA_VERSION = 1


@dataclass
class BuildResult:
    out_dir: Path
    report: BuildReport
    resumed: bool
    already_built: bool


class _ReportSwitch:
    """Forwards a builder's report calls; discards them while fast-forwarding on resume."""

    def __init__(self, real: BuildReport):
        self.real = real
        self.target = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def fingerprint(builder: PairBuilder) -> str:
    payload = {
        "builder": builder.name,
        "config": builder.config.to_dict(),
        "raw": str(builder.raw_dir.resolve()),
        "schema": SCHEMA_VERSION,
        "toolkit": __version__,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _prepare_out_dir(out_dir: Path, fp: str, overwrite: bool) -> Optional[dict[str, Any]]:
    """Return the saved state to resume from, or ``None`` for a fresh build."""
    state_path = out_dir / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.is_file() else None
    occupied = out_dir.is_dir() and any(out_dir.iterdir())
    if overwrite:
        for name in ("data", "README.md", "build_report.json", STATE_FILE):
            p = out_dir / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        return None
    if state is not None and state.get("fingerprint") == fp:
        return state
    if occupied:
        what = f"a build of {state['builder']!r} with other settings" if state else "files that are not this build"
        raise BuildError(f"output folder {out_dir} already holds {what}; pass --overwrite to replace it")
    return None


def _save_state(out_dir: Path, state: dict[str, Any]) -> None:
    tmp = out_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(out_dir / STATE_FILE)


class _PairImageError(Exception):
    def __init__(self, file: str, reason: str):
        self.file, self.reason = file, reason


def _image_cell(source: Any, verify: str, role: str, rec: PairRecord) -> tuple[dict[str, Any], int]:
    try:
        if isinstance(source, (bytes, bytearray)):
            check_image_bytes(bytes(source), verify)
            return {"bytes": bytes(source), "path": None}, len(source)
        path = Path(source)
        data = read_image_bytes(path, verify)
        return {"bytes": data, "path": path.name}, len(data)
    except BadImageError as exc:
        file = rec.source if isinstance(source, (bytes, bytearray)) else str(source)
        raise _PairImageError(file, f"{role} image: {exc}") from None


def _to_row(
    rec: PairRecord, features: Features, cat_index: Optional[dict[str, int]], verify: str
) -> tuple[dict[str, Any], int]:
    before, nb = _image_cell(rec.before, verify, "before", rec)
    after, na = _image_cell(rec.after, verify, "after", rec)
    row: dict[str, Any] = {"pair_id": rec.pair_id, "before": before, "after": after, "captions": list(rec.captions)}
    if cat_index is not None:
        row[CATEGORY] = cat_index[rec.category] if rec.category is not None else None
    for name in features:
        if name not in row:
            row[name] = rec.extra.get(name)
    return row, nb + na


@dataclass
class _Skip:
    file: str
    reason: str


READ_AHEAD = 32  # pairs whose images are read by worker threads ahead of the writer


def _read_ahead(
    builder: PairBuilder,
    split: str,
    switch: _ReportSwitch,
    done: int,
    seen_ids: set[str],
    features: Features,
    cat_index: Optional[dict[str, int]],
    verify: str,
) -> Iterator[tuple[int, PairRecord, Any]]:
    """Yield ``(index, record, row-or-skip)`` in record order, reading images in threads.

    The split's records (paths and captions, no pixels) are listed first, so that everything
    the builder reports about its annotations comes before the pipeline's own findings in
    the same order on every run; a resumed run lists them into a scratch report (its saved
    report already holds them) and skips the ``done`` records already written. File reads
    and checks release the GIL, so two threads overlap reading with writing parquet.
    """
    if done:
        switch.target = BuildReport(dataset=builder.name)
    records = list(builder.generate(split, switch))  # type: ignore[arg-type]
    switch.target = switch.real

    def precheck(rec: PairRecord) -> Optional[_Skip]:
        duplicate = rec.pair_id in seen_ids
        seen_ids.add(rec.pair_id)
        if duplicate:
            return _Skip(rec.source, "pair_id already used by an earlier pair")
        if cat_index is not None and rec.category is not None and rec.category not in cat_index:
            return _Skip(rec.source, f"unknown category {rec.category!r}")
        return None

    def read(rec: PairRecord) -> Any:
        try:
            return _to_row(rec, features, cat_index, verify)
        except _PairImageError as exc:
            return _Skip(exc.file, exc.reason)

    for rec in records[:done]:
        seen_ids.add(rec.pair_id)
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="idc-read") as pool:
        for i in range(done, len(records)):
            rec = records[i]
            skip = precheck(rec)
            pending.append((i, rec, skip if skip is not None else pool.submit(read, rec)))
            if len(pending) >= READ_AHEAD:
                j, r, item = pending.popleft()
                yield j, r, item if isinstance(item, _Skip) else item.result()
        while pending:
            j, r, item = pending.popleft()
            yield j, r, item if isinstance(item, _Skip) else item.result()


def build_dataset(
    builder: PairBuilder,
    out_dir: Path | str,
    *,
    strict: bool = False,
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    max_shard_rows: Optional[int] = None,
    verify_images: str = "fast",
    progress: bool = True,
) -> BuildResult:
    """Build ``builder``'s raw release into ``out_dir``; see the module docstring."""
    out_dir = Path(out_dir)
    builder.check_raw()
    fp = fingerprint(builder)
    state = _prepare_out_dir(out_dir, fp, overwrite)
    if state is not None and state.get("complete"):
        report = BuildReport.from_dict(json.loads((out_dir / "build_report.json").read_text()))
        return BuildResult(out_dir, report, resumed=False, already_built=True)

    features = builder.features()
    validate_features(features)
    names = category_names(features)
    cat_index = {n: i for i, n in enumerate(names)} if names is not None else None
    tmp_dir = out_dir / "data" / TMP_DIR
    tmp_dir.mkdir(parents=True, exist_ok=True)
    resumed = state is not None
    if state is None:
        state = {
            "fingerprint": fp,
            "builder": builder.name,
            "config": builder.config.to_dict(),
            "features": features.to_dict(),
            "splits": {},
            "report": BuildReport(dataset=builder.name, strict=strict).to_dict(),
        }
        _save_state(out_dir, state)
    report = BuildReport.from_dict(state["report"])
    report.strict = strict
    seen_ids: set[str] = set()

    for split in builder.split_names():
        info = state["splits"].setdefault(split, {"done": False, "shards": [], "records": 0})
        switch = _ReportSwitch(report)
        if info["done"]:
            seen_ids.update(rec.pair_id for rec in builder.generate(split, BuildReport(builder.name)))
            continue
        writer = ShardWriter(tmp_dir, split, features, max_shard_bytes, max_shard_rows, first_shard=len(info["shards"]))
        for stale in tmp_dir.glob(f"{split}-*.parquet*"):  # shards after the last checkpoint
            if stale.name not in info["shards"]:
                stale.unlink()
        done = info["records"]
        bar = tqdm(desc=f"{builder.name}/{split}", unit="pair", disable=not progress, initial=done)
        try:
            for i, rec, outcome in _read_ahead(builder, split, switch, done, seen_ids, features, cat_index, verify_images):
                bar.update(1)
                if isinstance(outcome, _Skip):
                    report.skip(split, outcome.file, rec.pair_id, outcome.reason)
                    continue
                row, nbytes = outcome
                report.add_row(split, rec.captions, rec.category)
                finished = writer.add(row, nbytes)
                if finished is not None:
                    info["shards"].append(finished)
                    info["records"] = i + 1
                    state["report"] = report.to_dict()
                    _save_state(out_dir, state)
            last = writer.close()
            if last is not None:
                info["shards"].append(last)
        except BaseException:
            writer.abort()
            bar.close()
            raise
        bar.close()
        info["done"] = True
        state["report"] = report.to_dict()
        _save_state(out_dir, state)

    builder.summarize(report)
    _finalise(out_dir, builder, features, state, report)
    return BuildResult(out_dir, report, resumed=resumed, already_built=False)


def _finalise(out_dir: Path, builder: PairBuilder, features: Features, state: dict, report: BuildReport) -> None:
    """Give shards their final ``-XXXXX-of-YYYYY`` names, write the card and the report."""
    from .cards import write_card

    data_dir = out_dir / "data"
    tmp_dir = data_dir / TMP_DIR
    split_sizes: dict[str, dict[str, int]] = {}
    for split, info in state["splits"].items():
        shards = info["shards"]
        total = len(shards)
        nbytes = 0
        for k, name in enumerate(shards):
            final = data_dir / f"{split}-{k:05d}-of-{total:05d}.parquet"
            (tmp_dir / name).replace(final)
            nbytes += final.stat().st_size
        if total:
            split_sizes[split] = {"num_examples": report.rows.get(split, 0), "num_bytes": nbytes}
        else:
            report.note(split, str(builder.raw_dir), None, f"split {split!r} has no pairs and is left out of the card's configs")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    (out_dir / "build_report.json").write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    write_card(out_dir, builder, features, split_sizes, report)
    state["complete"] = True
    state["report"] = report.to_dict()
    _save_state(out_dir, state)


def make_builder(name: str, raw_dir: Path | str, overrides: Optional[dict[str, str]] = None) -> PairBuilder:
    """Instantiate a registered builder with ``key=value`` config overrides."""
    from .builders import get_builder_class

    cls = get_builder_class(name)
    config: BuilderConfig = cls.config_class.from_overrides(overrides or {})
    return cls(raw_dir, config)

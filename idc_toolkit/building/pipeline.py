"""The build pipeline: raw release -> Hub-ready folder (parquet shards + card + report).

Output layout (what ``push_to_hub`` writes, so the folder can be uploaded as is)::

    OUT/README.md                              dataset card: configs, dataset_info, the run record
    OUT/data/<split>-00000-of-0000N.parquet    shards
    OUT/croissant.json                         Croissant metadata with the Responsible-AI fields
    OUT/build_report.json                      counts, every skipped/repaired record

The run engine (:mod:`idc_toolkit.runs`) owns the folder. A build's fingerprint covers the
builder, its config, the content of every annotation file and the listing (path, size) of
every other raw file, the schema and the toolkit version: an interrupted build resumes only
when nothing changed, an edited annotation file is named and refused (``--overwrite``
rebuilds). Records are listed first (paths and captions, no pixels); the engine cuts them
into parts of ``rows_per_part`` records, reads and checks their images in two threads and
writes each part atomically; the report is assembled from the listing's findings and the
parts' findings in record order, identical to an uninterrupted build's.

A split whose every record was skipped is an error naming the commonest reason, never a
"built" folder that ``load_dataset`` cannot read.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .. import __version__
from ..cards.croissant import CROISSANT_FILE
from ..errors import BadImageError, BuildError
from ..stores import output_folder
from ..runs import RunFolder, assemble, listing_fingerprint, run_job
from ..runs.args import EngineArgs
from ..runs.engine import PartOutput
from ..runs.fingerprint import recorded
from ..runs.rows import ListRows
from ..schema import CATEGORY, PairRecord, category_names, validate_features
from ..options import with_fields
from .args import BuildArgs
from .builder import PairBuilder
from .rawio import RawRoot, box_problem, check_image_bytes, image_size, read_image_bytes
from .report import SKIPPED, BuildReport, Problem

log = logging.getLogger(__name__)
SCHEMA_VERSION = 2
REPORT_FILE = "build_report.json"


@dataclass
class BuildResult:
    out_dir: Path
    report: BuildReport
    resumed: bool
    already_built: bool


def build_fields(builder: PairBuilder) -> dict[str, Any]:
    """What a build's output depends on besides its recorded options (see the module docstring)."""
    annotations = frozenset(f for f in builder.raw_files() if (builder.raw_dir / f).is_file())
    return {"builder": builder.name, "config": builder.config.to_dict(), "schema": SCHEMA_VERSION, "toolkit": __version__,
            **listing_fingerprint(builder.raw_dir, annotations)}


class _ImageError(Exception):
    def __init__(self, file: str, reason: str):
        self.file, self.reason = file, reason


def _image_cell(source: Any, verify: str, role: str, rec: PairRecord) -> dict[str, Any]:
    try:
        if isinstance(source, (bytes, bytearray)):
            check_image_bytes(bytes(source), verify)
            return {"bytes": bytes(source), "path": None}
        path = Path(source)
        return {"bytes": read_image_bytes(path, verify), "path": path.name}
    except BadImageError as exc:
        file = rec.source if isinstance(source, (bytes, bytearray)) else str(source)
        raise _ImageError(file, f"{role} image: {exc}") from None


class BuildTask:
    """The engine's per-batch function of a build: read and check a batch's images in two
    threads (file reads and CRC checks release the GIL, so reading overlaps writing)."""

    batch_size = 32

    def __init__(self, features, verify: str, strict: bool):
        self.features, self.verify, self.strict = features, verify, strict
        names = category_names(features)
        self.cat_index = {n: i for i, n in enumerate(names)} if names is not None else None
        self._pool: Optional[ThreadPoolExecutor] = None

    def setup(self, device: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="idc-read")

    def _row(self, rec: PairRecord) -> dict[str, Any]:
        before = _image_cell(rec.before, self.verify, "before", rec)
        after = _image_cell(rec.after, self.verify, "after", rec)
        boxes = (rec.extra.get("change_boxes") or []) if "change_boxes" in self.features else []
        size = image_size(before["bytes"]) if boxes else None  # only a row with boxes reads the header again
        for k, box in enumerate(boxes):
            why = box_problem(box, size)
            if why is not None:
                raise _ImageError(rec.source, f"change_boxes[{k}] {box}: {why}")
        row: dict[str, Any] = {"pair_id": rec.pair_id, "before": before, "after": after, "captions": list(rec.captions)}
        if self.cat_index is not None:
            row[CATEGORY] = self.cat_index[rec.category] if rec.category is not None else None
        for name in self.features:
            if name not in row:
                row[name] = rec.extra.get(name)
        return row

    def _read(self, item: tuple[PairRecord, Optional[str]]) -> Any:
        rec, preskip = item
        if preskip is not None:
            return _ImageError(rec.source, preskip)
        try:
            return self._row(rec)
        except _ImageError as exc:
            return exc

    def __call__(self, split: str, items: list[tuple[PairRecord, Optional[str]]], start: int) -> PartOutput:
        if self._pool is None:
            self.setup("cpu")
        rows, problems = [], []
        counts: dict[str, Any] = {"rows": 0, "empty_captions": 0, "categories": {}}
        for (rec, _), outcome in zip(items, self._pool.map(self._read, items)):
            if isinstance(outcome, _ImageError):
                problem = Problem(SKIPPED, split, outcome.file, rec.pair_id, outcome.reason)
                if self.strict:
                    raise BuildError(f"strict mode: {problem.describe()}")
                problems.append(problem.__dict__)
                continue
            rows.append(outcome)
            counts["rows"] += 1
            counts["empty_captions"] += sum(1 for c in rec.captions if c == "")
            if rec.category is not None:
                counts["categories"][rec.category] = counts["categories"].get(rec.category, 0) + 1
        return PartOutput(rows, {"problems": problems, **counts})


def _list_records(builder: PairBuilder, report: BuildReport, cat_names: Optional[list[str]]) -> dict[str, ListRows]:
    """Every split's records, each with the reason it is skipped before any image is read."""
    sources: dict[str, ListRows] = {}
    seen: set[str] = set()
    root = builder.raw_root()
    for split in builder.split_names():
        items = []
        for rec in builder.generate(split, report):
            preskip = None
            if rec.pair_id in seen:
                preskip = "pair_id already used by an earlier pair"
            elif cat_names is not None and rec.category is not None and rec.category not in cat_names:
                preskip = f"unknown category {rec.category!r}"
            else:
                preskip = _outside(root, rec)
            seen.add(rec.pair_id)
            if preskip is not None and report.strict:
                raise BuildError(f"strict mode: {Problem(SKIPPED, split, rec.source, rec.pair_id, preskip).describe()}")
            items.append((rec, preskip))
        sources[split] = ListRows(items)
    return sources


def _outside(root: RawRoot, rec: PairRecord) -> Optional[str]:
    """Why a record's image path is refused (:class:`~.rawio.RawRoot`)."""
    for role, source in (("before", rec.before), ("after", rec.after)):
        if not isinstance(source, (bytes, bytearray)):
            why = root.outside(source)
            if why is not None:
                return f"{role} image {why}"
    return None


def _why_empty(split: str, listed: int, problems: list[dict[str, Any]], raw_dir: Path) -> str:
    reasons: Counter = Counter()
    for p in problems:
        folder = Path(p["file"]).parent
        where = f" under {folder}/" if str(folder) not in ("", ".") else ""
        reasons[f"{p['reason']}{where}"] += 1
    commonest = "; ".join(f"{n} x {r}" for r, n in reasons.most_common(2))
    return f"0 of {listed} {split} pairs written: {commonest}"


def build_dataset(builder: PairBuilder, out_dir: Optional[Path | str] = None, args: Optional[BuildArgs] = None,
                  **fields: Any) -> BuildResult:
    """Build ``builder``'s raw release into ``out_dir``; see the module docstring. ``args`` is a
    :class:`~.args.BuildArgs` (or ``fields`` make one: ``strict=``, ``overwrite=``,
    ``max_shard_bytes=``, ``max_shard_rows=``, ``rows_per_part=``, ``verify_images=``, ``shard=``,
    ``progress=``); ``out_dir`` is its ``out``."""
    a = with_fields(BuildArgs, args, **fields, **({"out": out_dir} if out_dir is not None else {}))
    if a.out is None:
        raise BuildError("build_dataset: no output folder (out_dir)")
    out_dir, strict, progress = output_folder(a.out, BuildError), a.strict, a.progress
    builder.check_raw()
    features = builder.features()
    validate_features(features)
    folder = RunFolder(out_dir, "build", {**build_fields(builder), **recorded(a)},
                       owned=("data", "README.md", CROISSANT_FILE, REPORT_FILE), progress=progress).open(a.overwrite)
    if folder.complete:
        report = BuildReport.from_dict(_read_report(out_dir))
        if strict:
            _check_strict(report)
        return BuildResult(out_dir, report, resumed=False, already_built=True)
    report = BuildReport(dataset=builder.name, strict=strict)
    names = category_names(features)
    sources = _list_records(builder, report, names)
    outcome = run_job(folder, sources, BuildTask(features, a.verify_images, strict), rows_per_part=a.rows_per_part,
                      engine=EngineArgs(shard=a.shard), progress=progress, desc=builder.name)
    if not outcome.complete:
        return BuildResult(out_dir, report, resumed=folder.resumed, already_built=False)

    def stage(final: Path) -> None:
        summaries = assemble(folder, list(sources), features, final, a.max_shard_bytes)
        for split, summary in list(summaries.items()):
            report.problems.extend(Problem(**p) for p in summary.stats.get("problems", []))
            if not len(sources[split]):
                report.note(split, str(builder.raw_dir), None, f"split {split!r} has no pairs and is left out of the card's configs")
                del summaries[split]
                continue
            if summary.num_examples == 0:
                raise BuildError(_why_empty(split, len(sources[split]), summary.stats.get("problems", []), builder.raw_dir))
            report.rows[split] = summary.num_examples
            report.empty_captions[split] = summary.stats.get("empty_captions", 0)
            report.category_counts[split] = Counter(summary.stats.get("categories", {}))
        builder.summarize(report)
        if strict:
            _check_strict(report)
        _write_report(final, report)
        from ..cards import write_build_card

        write_build_card(final, builder, features, summaries, report, folder.record())

    folder.finalise(stage)
    return BuildResult(out_dir, BuildReport.from_dict(_read_report(out_dir)), resumed=folder.resumed, already_built=False)


def _check_strict(report: BuildReport) -> None:
    bad = [p for p in report.problems if p.action != "note"]
    if bad:
        raise BuildError(f"strict mode: {bad[0].describe()}" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))


def _read_report(out_dir: Path) -> dict[str, Any]:
    return json.loads((out_dir / REPORT_FILE).read_text())


def _write_report(folder: Path, report: BuildReport) -> None:
    (folder / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")

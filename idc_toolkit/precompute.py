"""Passes that add columns to a dataset written by ``idc-build`` (change masks, later entities).

A pass reads the source folder's shards, computes the new columns row by row and writes
each shard, with the source columns unchanged and the new ones appended (or replaced), under
the same name in ``OUT/data/``; then it rewrites the card's ``dataset_info`` and appends a
section recording the pass and its parameters.

Resuming and scaling out:

* a finished output shard is never recomputed: an interrupted pass, rerun, continues with the
  first missing shard (a shard is written to ``.partial`` and renamed when complete);
* ``--shard i/n`` processes only the shards whose index is i modulo n, so n machines (or
  jobs on one engine such as Slurm arrays or Ray tasks) can share one output folder; the
  run that finds every shard present writes the card;
* ``--num-proc`` spreads CPU rows over processes.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from datasets import Features
from tqdm.auto import tqdm

from .errors import IDCError
from .schema import add_columns, validate_features
from .writer import ROWS_PER_GROUP, _column_options

RowFn = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class PassResult:
    out_dir: Path
    shards_done: list[str]
    shards_total: int
    complete: bool


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise IDCError(f"--shard takes i/n (e.g. 0/4), got {text!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise IDCError(f"--shard {text}: need 0 <= i < n")
    return i, n


def source_shards(dataset_dir: Path) -> list[Path]:
    shards = sorted((dataset_dir / "data").glob("*.parquet"))
    if not shards:
        raise IDCError(f"{dataset_dir}: no data/*.parquet shards; is this a folder written by idc-build?")
    return shards


def _rows(path: Path) -> Iterable[list[dict[str, Any]]]:
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=ROWS_PER_GROUP):
        yield batch.to_pylist()


def run_pass(
    dataset_dir: Path | str,
    out_dir: Path | str,
    new_features: dict[str, Any],
    row_fn: RowFn,
    card_section: str,
    *,
    shard: tuple[int, int] = (0, 1),
    num_proc: int = 1,
    progress: bool = True,
    batched: bool = False,
) -> PassResult:
    """Add ``new_features`` columns computed by ``row_fn`` to every row (see module docstring).

    ``row_fn`` gets a row with encoded images (``{"bytes", "path"}``) and returns the new
    columns; with ``num_proc`` > 1 it must be picklable (a module-level function or partial).
    With ``batched``, it gets a list of rows (one row group) and returns a list.
    """
    src, out = Path(dataset_dir), Path(out_dir)
    if src.resolve() == out.resolve():
        raise IDCError("--out must differ from --dataset (the source shards are read while the new ones are written)")
    shards = source_shards(src)
    features = Features.from_arrow_schema(pq.read_schema(shards[0]))
    validate_features(features)
    out_features = add_columns(features, new_features)
    schema = out_features.arrow_schema
    (out / "data").mkdir(parents=True, exist_ok=True)
    mine = [s for k, s in enumerate(shards) if k % shard[1] == shard[0]]
    todo = [s for s in mine if not (out / "data" / s.name).is_file()]
    pool = ProcessPoolExecutor(max_workers=num_proc) if num_proc > 1 else None
    bar = tqdm(total=sum(pq.ParquetFile(s).metadata.num_rows for s in todo), unit="pair", disable=not progress,
               desc=f"{out.name}")
    try:
        for path in todo:
            partial = out / "data" / (path.name + ".partial")
            writer = pq.ParquetWriter(partial, schema, **_column_options(out_features, schema))
            try:
                for rows in _rows(path):
                    if batched:
                        computed = row_fn(rows)  # type: ignore[arg-type]
                    else:
                        computed = list(pool.map(row_fn, rows)) if pool else [row_fn(r) for r in rows]
                    for row, new in zip(rows, computed):
                        row.update(new)
                    writer.write_table(pa.Table.from_pylist(rows, schema=schema), row_group_size=ROWS_PER_GROUP)
                    bar.update(len(rows))
            except BaseException:
                writer.close()
                partial.unlink(missing_ok=True)
                raise
            writer.close()
            partial.replace(out / "data" / path.name)
    finally:
        bar.close()
        if pool:
            pool.shutdown()
    done = [s.name for s in shards if (out / "data" / s.name).is_file()]
    complete = len(done) == len(shards)
    if complete:
        _write_card(src, out, out_features, card_section)
    return PassResult(out, done, len(shards), complete)


def _write_card(src: Path, out: Path, features: Features, section: str) -> None:
    """The source card with the new features in its YAML and the pass documented."""
    text = (src / "README.md").read_text(encoding="utf-8") if (src / "README.md").is_file() else "---\n---\n"
    _, header, body = text.split("---\n", 2) if text.startswith("---\n") else ("", "", text)
    meta = yaml.safe_load(header) or {}
    info = meta.setdefault("dataset_info", {})
    info["features"] = features._to_yaml_list()
    sizes = {}
    for f in (out / "data").glob("*.parquet"):
        split = f.name.split("-")[0]
        sizes[split] = sizes.get(split, 0) + f.stat().st_size
    for split_info in info.get("splits", []):
        split_info["num_bytes"] = sizes.get(split_info["name"], split_info.get("num_bytes", 0))
    info["download_size"] = info["dataset_size"] = sum(sizes.values())
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    marker = section.splitlines()[0]
    if marker in body:  # a rerun replaces its own section
        body = body[: body.index(marker)].rstrip() + "\n"
    (out / "README.md").write_text(f"---\n{header}---\n{body.rstrip()}\n\n{section.strip()}\n", encoding="utf-8")
    for extra in ("build_report.json",):
        if (src / extra).is_file():
            shutil.copy(src / extra, out / extra)


def pass_section(title: str, lines: list[str], params: Optional[dict[str, Any]] = None) -> str:
    text = [f"## {title}", "", *lines]
    if params:
        text += ["", "Parameters:", "", "```json", json.dumps(params, indent=2, sort_keys=True), "```"]
    return "\n".join(text)

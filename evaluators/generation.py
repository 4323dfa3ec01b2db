"""Running a checkpoint over a dataset split: batched, resumable, data-parallel.

``predictions.jsonl`` is written as it goes, one ``{"pair_id", "caption"}`` line per pair,
flushed after every batch; a rerun reads it and never regenerates a done pair (a line cut by
an interruption is dropped and redone).

Several GPUs: launch the same command under ``torchrun --nproc-per-node N`` (or
``accelerate launch``). Each rank takes the pairs whose position modulo WORLD_SIZE is its
RANK, on ``cuda:LOCAL_RANK``, and writes ``predictions.rank<r>-of-<w>.jsonl``; rank 0 waits
for every rank's ``.done`` marker and merges the shards into ``predictions.jsonl`` in dataset
order, so the result is the same file a single process would write.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from tqdm.auto import tqdm

from idc_toolkit.errors import IDCError
from idc_toolkit.writer import split_shards


def dist_info() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the torchrun / accelerate environment."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def dataset_rows(dataset: str, split: str, columns: Optional[list[str]] = None) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """Column names and rows (images still encoded) of a split."""
    import pyarrow.parquet as pq

    shards = split_shards(dataset, split)
    if shards:
        names = pq.read_schema(shards[0]).names

        def rows() -> Iterator[dict[str, Any]]:
            for f in shards:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=64, columns=columns):
                    yield from batch.to_pylist()

        return names, rows()
    from datasets import Image, load_dataset

    try:
        ds = load_dataset(dataset, split=split)
    except (ValueError, FileNotFoundError) as exc:
        raise IDCError(f"{dataset}: cannot load split {split!r}: {exc}") from None
    for col in ("before", "after"):
        if col in ds.column_names:
            ds = ds.cast_column(col, Image(decode=False))
    if columns:
        ds = ds.select_columns([c for c in columns if c in ds.column_names])
    return ds.column_names, iter(ds)


def require_columns(names: list[str], runner, dataset: str, split: str) -> None:
    """Fail, naming what is missing, when a split lacks a column the runner (class) needs."""
    missing = [c for c in runner.required_columns if c not in names]
    if missing:
        raise IDCError(f"{dataset} [{split}] has no {', '.join(missing)} column(s), which {runner.name} needs"
                       + ("; run idc-precompute entities first" if "entities" in missing else ""))


def dataset_name(dataset: str) -> Optional[str]:
    """The idc-build builder a dataset folder came from (its build_report.json), if known."""
    report = Path(dataset) / "build_report.json"
    if report.is_file():
        return json.loads(report.read_text()).get("dataset")
    return None


def _decode(cell: Any):
    from PIL import Image

    if isinstance(cell, dict):
        return Image.open(io.BytesIO(cell["bytes"])) if cell.get("bytes") else Image.open(cell["path"])
    return cell


def read_done(path: Path) -> dict[str, str]:
    """Predictions already written; a torn last line (interrupted write) is dropped."""
    done: dict[str, str] = {}
    if not path.is_file():
        return done
    good = 0
    data = path.read_bytes()
    for line in data.splitlines(keepends=True):
        try:
            obj = json.loads(line)
            done[str(obj["pair_id"])] = obj["caption"]
            good += len(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            break
    if good != len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return done


def generate_predictions(
    runner,
    dataset: str,
    split: str,
    out_dir: Path,
    batch_size: int = 8,
    limit: Optional[int] = None,
    progress: bool = True,
    merge_timeout: float = 24 * 3600,
) -> Path:
    """Write ``out_dir/predictions.jsonl`` for the split (see module docstring)."""
    rank, world, _ = dist_info()
    names, rows = dataset_rows(dataset, split)
    require_columns(names, runner, dataset, split)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / "predictions.jsonl"
    path = final if world == 1 else out_dir / f"predictions.rank{rank}-of-{world}.jsonl"
    done = read_done(path)
    order: list[str] = []
    todo: list[dict[str, Any]] = []
    for k, row in enumerate(rows):
        if limit is not None and k >= limit:
            break
        order.append(str(row["pair_id"]))
        if k % world == rank and str(row["pair_id"]) not in done:
            todo.append(row)
    bar = tqdm(total=len(todo), unit="pair", disable=not progress, desc=f"{runner.name} rank {rank}" if world > 1 else runner.name)
    with path.open("a", encoding="utf-8") as fh:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            decoded = [{**r, "before": _decode(r["before"]), "after": _decode(r["after"])} for r in batch]
            captions = runner.generate(decoded)
            for row, caption in zip(batch, captions):
                fh.write(json.dumps({"pair_id": str(row["pair_id"]), "caption": caption}, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            bar.update(len(batch))
    bar.close()
    if world == 1:
        return final
    (out_dir / f".rank{rank}-of-{world}.done").touch()
    if rank != 0:
        return final
    deadline = time.time() + merge_timeout
    while not all((out_dir / f".rank{r}-of-{world}.done").exists() for r in range(world)):
        if time.time() > deadline:
            raise IDCError("rank 0 gave up waiting for the other ranks' predictions")
        time.sleep(2)
    merged: dict[str, str] = {}
    for r in range(world):
        merged.update(read_done(out_dir / f"predictions.rank{r}-of-{world}.jsonl"))
    with final.open("w", encoding="utf-8") as fh:
        for pid in order:
            if pid in merged:
                fh.write(json.dumps({"pair_id": pid, "caption": merged[pid]}, ensure_ascii=False) + "\n")
    return final

"""Parquet writing options, and the assembly of a run's parts (rows and statistics) into
Hub-layout shards."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .fingerprint import files_sha256, parquet_files_fingerprint
from .folder import RunFolder

DEFAULT_MAX_SHARD_BYTES = 500 * 10**6  # datasets' push_to_hub default, config.MAX_SHARD_SIZE = "500MB"
#: the rows ``Dataset._estimate_nbytes`` looks at to correct the Arrow size for media files
ESTIMATE_HEAD_ROWS = 1000
ROWS_PER_GROUP = 100  # parquet row group, datasets' choice for image datasets


def merge_stats(total: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Merge a part's statistics into ``total``: lists concatenate, numbers add, dicts merge
    recursively; what is taken from ``new`` is copied, never shared."""
    for key, value in new.items():
        if isinstance(value, dict):
            merge_stats(total.setdefault(key, {}), value)
        elif isinstance(value, list):
            total.setdefault(key, []).extend(value)
        else:
            total[key] = total[key] + value if key in total else value
    return total


def _leaves(f: pa.Field, prefix: str = "") -> list[tuple[str, pa.DataType]]:
    name = prefix + f.name
    if pa.types.is_struct(f.type):
        return [leaf for child in f.type for leaf in _leaves(child, name + ".")]
    if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type):
        return [(name + ".list.element", f.type.value_type)]
    return [(name, f.type)]


def column_options(features, schema: pa.Schema) -> dict[str, Any]:
    """datasets' per-column choices (no compression or dictionary for image bytes), plus no
    min/max statistics on binary blobs: useless for filtering, and they cost more than the
    write itself (measured in benchmarks/build_speed.py)."""
    from datasets.io.parquet import get_parquet_column_options

    options = dict(get_parquet_column_options(features, schema))
    leaves = [leaf for f in schema for leaf in _leaves(f)]
    options["write_statistics"] = [p for p, t in leaves if not (pa.types.is_binary(t) or pa.types.is_large_binary(t))]
    return options


@dataclass
class SplitSummary:
    num_examples: int = 0
    num_bytes: int = 0  # what push_to_hub writes as num_bytes (hub_num_bytes)
    download_bytes: int = 0  # parquet bytes
    files: list[str] = field(default_factory=list)
    fingerprint: str = ""  # parquet_files_fingerprint of ``files``: names and contents
    file_sha256: dict[str, str] = field(default_factory=dict)  # file name -> sha256 of its content (croissant.json)
    stats: dict[str, Any] = field(default_factory=dict)
    part_stats: list[dict[str, Any]] = field(default_factory=list)


def hub_num_bytes(arrow_bytes: int, num_rows: int, head: pa.Table) -> int:
    """The split size ``push_to_hub`` writes (``Dataset._estimate_nbytes``): the Arrow bytes,
    corrected for image / audio / video cells by the first 1,000 rows (``head``, carrying the
    features in its schema) and scaled to the split: plus the size of files referenced by path
    only, minus the bytes of the ``path`` strings. Reproduced rather than called because it is a
    method of a loaded ``Dataset``, and loading the split would copy it into an Arrow cache;
    tests compare it with ``_estimate_nbytes`` of the loaded split."""
    from datasets.features import Audio, Image, Video
    from datasets.table import table_visitor
    from datasets.utils.file_utils import xgetsize

    if not num_rows or not head.num_rows:
        return arrow_bytes
    extra = 0

    def visit(array, feature) -> None:
        nonlocal extra
        if isinstance(feature, (Audio, Image, Video)):
            for cell in array.to_pylist():
                if cell is not None and cell["bytes"] is None and cell["path"] is not None:
                    extra += xgetsize(cell["path"])
            extra -= array.field("path").nbytes

    table_visitor(head, visit)
    return arrow_bytes + extra * num_rows // head.num_rows


def shard_ranges(num_rows: int, num_shards: int) -> list[tuple[int, int]]:
    """The rows of ``Dataset.shard(num_shards, index, contiguous=True)`` for each index: the
    first ``num_rows % num_shards`` shards hold one row more."""
    div, mod = divmod(num_rows, num_shards)
    starts = [i * div + min(i, mod) for i in range(num_shards)]
    return [(start, start + div + (1 if i < mod else 0)) for i, start in enumerate(starts)]


@dataclass
class _PartFile:
    path: Path
    start: int  # first row of the part within the split
    rows: int


def _head(files: list[_PartFile], features, limit: int) -> pa.Table:
    """The first ``limit`` rows of the split's decodable columns (images, audio, video), read
    from the parts in row order, with the features in the schema for ``table_visitor``."""
    import pyarrow.parquet as pq
    from datasets import Features
    from datasets.features.features import require_decoding

    media = Features({k: v for k, v in features.items() if require_decoding(v, ignore_decode_attribute=True)})
    batches, rows = [], 0
    for f in files:
        if rows >= limit or not media:
            break
        for batch in pq.ParquetFile(f.path).iter_batches(batch_size=ROWS_PER_GROUP, columns=list(media)):
            batches.append(batch.slice(0, limit - rows))  # only the rows the estimate looks at are read
            rows += batches[-1].num_rows
            if rows >= limit:
                break
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches).cast(media.arrow_schema)


def assemble(folder: RunFolder, splits: list[str], features, final_dir: Path,
             max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES) -> dict[str, SplitSummary]:
    """Write each split's parts, in row order, as ``final_dir/data/<split>-XXXXX-of-YYYYY.parquet``.

    Shards follow ``push_to_hub``: ``int(num_bytes / max_shard_bytes) + 1`` shards of
    contiguous rows, as even as ``Dataset.shard`` makes them, so a split is cut where an upload
    of the same table would cut it; ``max_shard_bytes=0`` keeps one shard per part (the
    ``--max-shard-rows`` mode). A shard that is exactly one part is hard-linked (parts stay
    intact until the move is done, so a kill while staging loses nothing); other shards are
    written from slices of their parts. Statistics are merged in row order.
    """
    data = final_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    out: dict[str, SplitSummary] = {}
    for split in splits:
        summary = SplitSummary()
        parts = folder.done_parts(split)
        files: list[_PartFile] = []
        arrow_bytes = 0
        for k in sorted(parts):
            meta = parts[k]
            summary.part_stats.append(meta["stats"])
            merge_stats(summary.stats, meta["stats"])
            if meta["file"]:
                files.append(_PartFile(folder.parts_dir(split) / meta["file"], summary.num_examples, meta["rows"]))
            summary.num_examples += meta["rows"]
            arrow_bytes += meta["arrow_bytes"]
        summary.num_bytes = hub_num_bytes(arrow_bytes, summary.num_examples,
                                          _head(files, features, ESTIMATE_HEAD_ROWS))
        if not summary.num_examples:
            ranges = []
        elif max_shard_bytes <= 0:
            ranges = [(f.start, f.start + f.rows) for f in files]
        else:
            ranges = shard_ranges(summary.num_examples, int(summary.num_bytes / max_shard_bytes) + 1)
        for g, (start, stop) in enumerate(ranges):
            target = data / f"{split}-{g:05d}-of-{len(ranges):05d}.parquet"
            _write_shard(target, [f for f in files if f.start < stop and f.start + f.rows > start], start, stop, features)
            summary.files.append(target.name)
            summary.download_bytes += target.stat().st_size
        paths = [data / name for name in summary.files]
        summary.fingerprint = parquet_files_fingerprint(paths)
        summary.file_sha256 = dict(zip(summary.files, files_sha256(paths)))  # the fingerprint's, from the cache
        out[split] = summary
    return out


def _write_shard(target: Path, files: list[_PartFile], start: int, stop: int, features) -> None:
    """Rows ``start:stop`` of the split, from the parts that hold them."""
    import pyarrow.parquet as pq

    if len(files) == 1 and (files[0].start, files[0].rows) == (start, stop - start):
        try:
            os.link(files[0].path, target)
        except OSError:
            shutil.copyfile(files[0].path, target)
        return
    schema = features.arrow_schema
    writer = pq.ParquetWriter(target, schema, **column_options(features, schema))
    try:
        for f in files:
            lo, hi = max(start, f.start) - f.start, min(stop, f.start + f.rows) - f.start
            writer.write_table(pq.read_table(f.path, schema=schema).slice(lo, hi - lo), row_group_size=ROWS_PER_GROUP)
    finally:
        writer.close()


def write_parts_jsonl(folder: RunFolder, split: str, target: Path) -> None:
    """Every finished part of ``split``, in part order, as JSON Lines at ``target`` (a run whose
    output is one file: ``idc-eval --model``'s predictions, ``--judge``'s judgements)."""
    import json

    import pyarrow.parquet as pq

    parts = folder.done_parts(split)
    with target.open("w", encoding="utf-8") as fh:
        for k in sorted(parts):
            if parts[k]["file"]:
                for rec in pq.read_table(folder.parts_dir(split) / parts[k]["file"]).to_pylist():
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")

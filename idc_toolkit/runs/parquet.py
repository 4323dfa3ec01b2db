"""Parquet writing options, and the assembly of a run's parts (rows and statistics) into
Hub-layout shards."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .folder import RunFolder

DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024  # datasets' push_to_hub default
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
    num_bytes: int = 0  # Arrow bytes, what push_to_hub writes as num_bytes
    download_bytes: int = 0  # parquet bytes
    files: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    part_stats: list[dict[str, Any]] = field(default_factory=list)


def assemble(folder: RunFolder, splits: list[str], features, final_dir: Path,
             max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES) -> dict[str, SplitSummary]:
    """Concatenate each split's parts, in row order, into ``final_dir/data/<split>-XXXXX-of-YYYYY.parquet``.

    Consecutive parts are grouped up to ``max_shard_bytes``; a group of one part is hard-linked
    (parts stay intact until the move is done, so a kill while staging loses nothing), a
    larger group is copied row group by row group. Statistics are merged in row order.
    """
    import pyarrow.parquet as pq

    data = final_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    schema = features.arrow_schema
    out: dict[str, SplitSummary] = {}
    for split in splits:
        summary = SplitSummary()
        parts = folder.done_parts(split)
        groups: list[list[Path]] = []
        size = 0
        for k in sorted(parts):
            meta = parts[k]
            summary.part_stats.append(meta["stats"])
            merge_stats(summary.stats, meta["stats"])
            summary.num_examples += meta["rows"]
            summary.num_bytes += meta["arrow_bytes"]
            if not meta["file"]:
                continue
            path = folder.parts_dir(split) / meta["file"]
            nbytes = path.stat().st_size
            if groups and size + nbytes <= max_shard_bytes:
                groups[-1].append(path)
                size += nbytes
            else:
                groups.append([path])
                size = nbytes
        for g, paths in enumerate(groups):
            target = data / f"{split}-{g:05d}-of-{len(groups):05d}.parquet"
            if len(paths) == 1:
                try:
                    os.link(paths[0], target)
                except OSError:
                    shutil.copyfile(paths[0], target)
            else:
                writer = pq.ParquetWriter(target, schema, **column_options(features, schema))
                for p in paths:
                    writer.write_table(pq.read_table(p, schema=schema), row_group_size=ROWS_PER_GROUP)
                writer.close()
            summary.files.append(target.name)
            summary.download_bytes += target.stat().st_size
        out[split] = summary
    return out

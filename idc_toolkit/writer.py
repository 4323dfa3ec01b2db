"""Parquet shards written as rows arrive, in the layout ``push_to_hub`` produces.

Memory stays bounded at any dataset size: rows are buffered for one row group (100 rows,
``datasets``' choice for image datasets) and a shard is closed when it passes
``max_shard_bytes``. The arrow schema carries the ``huggingface`` features metadata, so
``load_dataset`` restores ``Image``/``ClassLabel`` types even without the card.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features

ROWS_PER_GROUP = 100


def split_shards(dataset_dir: Path | str, split: str) -> list[Path]:
    """The parquet shards of ``split`` in a folder written by the toolkit (empty if none, or
    if ``dataset_dir`` is not a local folder, e.g. a Hub id)."""
    folder = Path(dataset_dir)
    return sorted((folder / "data").glob(f"{split}-*.parquet")) if folder.is_dir() else []


def _leaves(field: pa.Field, prefix: str = "") -> list[tuple[str, pa.DataType]]:
    """Parquet leaf column paths of an arrow field, with their types."""
    name = prefix + field.name
    if pa.types.is_struct(field.type):
        return [leaf for child in field.type for leaf in _leaves(child, name + ".")]
    if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        return [(name + ".list.element", field.type.value_type)]
    return [(name, field.type)]


def _column_options(features: Features, schema: pa.Schema) -> dict[str, Any]:
    """datasets' per-column choices (no compression or dictionary for image bytes), plus no
    min/max statistics on binary blobs: they are useless for filtering and cost more than
    the write itself."""
    try:  # datasets >= 4 tunes compression / dictionary encoding per column type
        from datasets.io.parquet import get_parquet_column_options

        options = dict(get_parquet_column_options(features, schema))
    except Exception:  # pragma: no cover - older datasets
        options = {}
    leaves = [leaf for f in schema for leaf in _leaves(f)]
    options["write_statistics"] = [
        path for path, typ in leaves if not (pa.types.is_binary(typ) or pa.types.is_large_binary(typ))
    ]
    return options


class ShardWriter:
    """Writes one split's rows into numbered parquet shards under ``tmp_dir``."""

    def __init__(
        self,
        tmp_dir: Path,
        split: str,
        features: Features,
        max_shard_bytes: int,
        max_shard_rows: Optional[int] = None,
        first_shard: int = 0,
    ):
        self.tmp_dir = tmp_dir
        self.split = split
        self.features = features
        self.schema = features.arrow_schema
        self.max_shard_bytes = max_shard_bytes
        self.max_shard_rows = max_shard_rows
        self.shard_index = first_shard
        self._buffer: list[dict[str, Any]] = []
        self._buffer_bytes = 0
        self._writer: Optional[pq.ParquetWriter] = None
        self._shard_bytes = 0
        self._shard_rows = 0
        self._path: Optional[Path] = None
        self.finished_shards: list[str] = []

    def shard_name(self, index: int) -> str:
        return f"{self.split}-{index:05d}.parquet"

    def add(self, row: dict[str, Any], nbytes: int) -> Optional[str]:
        """Buffer one row; returns the name of a shard if this row completed one."""
        self._buffer.append(row)
        self._buffer_bytes += nbytes
        if len(self._buffer) >= ROWS_PER_GROUP:
            self._flush_group()
        if self._writer is not None and (
            self._shard_bytes >= self.max_shard_bytes
            or (self.max_shard_rows is not None and self._shard_rows >= self.max_shard_rows)
        ):
            return self._close_shard()
        if self.max_shard_rows is not None and self._shard_rows + len(self._buffer) >= self.max_shard_rows:
            self._flush_group()
            return self._close_shard()
        return None

    def _flush_group(self) -> None:
        if not self._buffer:
            return
        if self._writer is None:
            self._path = self.tmp_dir / (self.shard_name(self.shard_index) + ".partial")
            self._writer = pq.ParquetWriter(self._path, self.schema, **_column_options(self.features, self.schema))
        table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        self._writer.write_table(table, row_group_size=ROWS_PER_GROUP)
        self._shard_rows += len(self._buffer)
        self._shard_bytes += self._buffer_bytes
        self._buffer = []
        self._buffer_bytes = 0

    def _close_shard(self) -> Optional[str]:
        self._flush_group()
        if self._writer is None:
            return None
        self._writer.close()
        assert self._path is not None
        final = self.tmp_dir / self.shard_name(self.shard_index)
        self._path.replace(final)  # atomic: a finished shard is never half-written
        self.finished_shards.append(final.name)
        self.shard_index += 1
        self._writer, self._path = None, None
        self._shard_bytes = self._shard_rows = 0
        return final.name

    def close(self) -> Optional[str]:
        """Write what is buffered; returns the last shard's name if one was written."""
        return self._close_shard()

    def abort(self) -> None:
        """Drop the shard in progress (an interrupted build restarts it)."""
        if self._writer is not None:
            self._writer.close()
            if self._path is not None and self._path.exists():
                self._path.unlink()
        self._writer, self._path, self._buffer = None, None, []

"""Reading a local copy of a Hugging Face dataset (releases that exist only on the Hub).

``huggingface_hub`` downloads parquet shards as ``data/<split>-XXXXX-of-YYYYY.parquet`` (or
``<config>/<split>/NNNN.parquet`` for converted datasets); ``datasets.save_to_disk`` writes
``<split>/data-XXXXX-of-YYYYY.arrow``. Rows are read with pyarrow in small batches, image
cells stay encoded (``{"bytes", "path"}``), so nothing is decoded or cached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from ..errors import RawFormatError


def find_split_files(raw_dir: Path, release_splits: Sequence[str], layout: str,
                     unknown: Optional[list[Path]] = None) -> dict[str, list[Path]]:
    """Parquet (or arrow) files of a local copy, per release split, in a stable order.
    Files of no known split are appended to ``unknown`` (the builder notes them)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(raw_dir.rglob("*.parquet")) + sorted(raw_dir.rglob("*.arrow")):
        if any(part.startswith(".") for part in path.relative_to(raw_dir).parts):
            continue  # huggingface_hub's .cache/ and other hidden folders
        stem = path.name.split("-")[0].split(".")[0]
        split = stem if stem in release_splits else path.parent.name
        if split in release_splits:
            found.setdefault(split, []).append(path)
        elif unknown is not None:
            unknown.append(path)
    if not found:
        raise RawFormatError(raw_dir, f"no parquet/arrow files of splits {list(release_splits)} found. Expected layout:\n{layout}")
    return {s: found[s] for s in release_splits if s in found}


def open_parquet(path: Path):
    """``pyarrow.parquet.ParquetFile(path)``; a corrupt or truncated file is one error naming it."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt or truncated file
        raise RawFormatError(path, f"not a readable parquet file ({exc}); download it again") from None


def table_batches(path: Path, columns: Optional[list[str]] = None, required: Sequence[str] = ()) -> Iterator[list[dict[str, Any]]]:
    """Rows of one file in batches of 64, as dicts; ``required`` columns are checked first."""
    import pyarrow as pa

    if path.suffix == ".parquet":
        pf = open_parquet(path)
        names = pf.schema_arrow.names
        missing = [c for c in required if c not in names]
        if missing:
            raise RawFormatError(path, f"missing column(s) {missing}; found {names}")
        try:
            for batch in pf.iter_batches(batch_size=64, columns=columns):
                yield batch.to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise RawFormatError(path, f"corrupt parquet data ({exc}); download it again") from None
    else:  # datasets' save_to_disk arrow stream
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
        except (OSError, pa.ArrowException) as exc:
            raise RawFormatError(path, f"not a readable arrow stream ({exc})") from None
        missing = [c for c in required if c not in table.column_names]
        if missing:
            raise RawFormatError(path, f"missing column(s) {missing}; found {table.column_names}")
        if columns is not None:
            table = table.select(columns)
        for batch in table.to_batches(max_chunksize=64):
            yield batch.to_pylist()


def iter_rows(files: list[Path], required: Sequence[str] = ()) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Yield ``(file, row number, row)`` for every row of the given files, in file order."""
    for path in files:
        n = 0
        for rows in table_batches(path, required=required):
            for row in rows:
                yield str(path), n, row
                n += 1


def image_bytes(cell: Any) -> Optional[bytes]:
    """The encoded bytes of an image cell (``{"bytes", "path"}`` struct or raw bytes)."""
    if isinstance(cell, dict):
        return cell.get("bytes")
    return cell if isinstance(cell, (bytes, bytearray)) else None


def edit_pair(row: dict[str, Any], before_column: str, after_column: str) -> tuple[bytes, bytes]:
    """The encoded before/after images of an editing row; ``ValueError`` says which is missing."""
    before, after = image_bytes(row.get(before_column)), image_bytes(row.get(after_column))
    missing = [c for c, b in ((before_column, before), (after_column, after)) if not b]
    if missing:
        raise ValueError(f"{' and '.join(missing)} has no image bytes")
    return before, after  # type: ignore[return-value]

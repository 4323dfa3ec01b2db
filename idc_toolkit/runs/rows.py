"""Where a job's rows come from, addressable by row index, and how rows are cut into parts.

Every split is cut into *parts* of ``rows_per_part`` consecutive rows: part ``k`` holds rows
``[k*P, (k+1)*P)``. The grid depends only on the split's length and ``P``, so every way of
running a job (one process, ``--shard i/n``, torchrun ranks, Ray actors, a resumed run)
writes the same parts, and the assembled folder is byte-identical whichever ran it.
``--shard i/n`` takes a contiguous block of the run's parts, as
``Dataset.shard(n, i, contiguous=True)`` takes a block of rows.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Protocol, Sequence

from ..errors import IDCError, RunError


class RowSource(Protocol):
    """Rows of one split, readable by index range."""

    def __len__(self) -> int: ...

    def read(self, start: int, stop: int) -> list[Any]: ...


@dataclass(frozen=True)
class Part:
    split: str
    index: int
    start: int
    stop: int

    @property
    def stem(self) -> str:
        """The name of its files (``<stem>.parquet``, ``<stem>.json``) in the parts folder."""
        return f"{self.index:06d}"


def part_grid(split: str, n_rows: int, rows_per_part: int) -> list[Part]:
    if rows_per_part < 1:
        raise IDCError(f"rows per part must be at least 1, got {rows_per_part}")
    return [Part(split, k, s, min(s + rows_per_part, n_rows)) for k, s in enumerate(range(0, n_rows, rows_per_part))]


def contiguous_block(n_items: int, index: int, count: int) -> range:
    """Items of block ``index`` of ``count``, as ``Dataset.shard(count, index, contiguous=True)``."""
    div, mod = divmod(n_items, count)
    start = div * index + min(index, mod)
    return range(start, start + div + (1 if index < mod else 0))


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)``, checked."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise IDCError(f"--shard takes i/n (e.g. 0/4), got {text!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise IDCError(f"--shard {text}: need 0 <= i < n")
    return i, n


class ListRows:
    """Rows already in memory (a builder's records: paths and captions, no pixels; one part's
    rows handed to a Ray actor). ``first`` is the run index of ``rows[0]``, so a part's rows
    are read by the same indices as the whole split's."""

    def __init__(self, rows: Sequence[Any], first: int = 0):
        self.rows, self.first = rows, first

    def __len__(self) -> int:
        return len(self.rows)

    def read(self, start: int, stop: int) -> list[Any]:
        return list(self.rows[start - self.first : stop - self.first])


class ParquetRows:
    """The rows of a split stored as parquet files, read by range.

    Reads stream: a range is read batch by batch through a buffered reader (``buffer_size``,
    no pre-buffering), and a read that starts where the previous one stopped continues the
    same reader. So memory stays at a few batches whatever the row-group size (a foreign
    parquet file may hold its whole split in one row group), and reading a split part after
    part costs one pass, not one row group per part.
    """

    BUFFER_BYTES = 1 << 20
    STREAM_BATCH = 16

    def __init__(self, files: Sequence[Path], columns: Optional[list[str]] = None):
        import pyarrow.parquet as pq

        self.files = [Path(f) for f in files]
        self.columns = columns
        self.groups: list[tuple[int, int, int, int]] = []  # (file index, row group, first row, rows)
        first = 0
        for fi, f in enumerate(self.files):
            try:
                meta = pq.ParquetFile(f).metadata
            except Exception as exc:  # pyarrow raises several types for a corrupt file
                raise RunError(f"{f}: not a readable parquet file ({exc})") from None
            for g in range(meta.num_row_groups):
                n = meta.row_group(g).num_rows
                self.groups.append((fi, g, first, n))
                first += n
        self.n_rows = first
        self._schema = pq.read_schema(self.files[0]) if self.files else None
        self._cursor = None  # (group position, next row, batch iterator, pending rows)

    def __getstate__(self):  # readers are not picklable (Ray): a copy starts without one
        return {**self.__dict__, "_cursor": None}

    @property
    def schema(self):
        return self._schema

    def __len__(self) -> int:
        return self.n_rows

    def _open(self, k: int):
        import pyarrow.parquet as pq

        fi, g, first, _ = self.groups[k]
        pf = pq.ParquetFile(self.files[fi], buffer_size=self.BUFFER_BYTES, pre_buffer=False)
        return [k, first, pf.iter_batches(batch_size=self.STREAM_BATCH, row_groups=[g], columns=self.columns), []]

    def _serves(self, row: int) -> bool:
        """Whether the open reader can reach ``row`` by reading on (same row group, not past it;
        or exactly at its end, where the next group follows)."""
        if self._cursor is None:
            return False
        k, position = self._cursor[0], self._cursor[1]
        end = self.groups[k][2] + self.groups[k][3]
        return position <= row < end or position == row == end

    def read(self, start: int, stop: int) -> list[dict[str, Any]]:
        if not 0 <= start <= stop <= self.n_rows:
            raise IndexError(f"rows {start}:{stop} of {self.n_rows}")
        out: list[dict[str, Any]] = []
        row = start
        while row < stop:
            cur = self._cursor
            if not self._serves(row):
                k = next(i for i, (_, _, first, n) in enumerate(self.groups) if first <= row < first + n)
                cur = self._cursor = self._open(k)
            k, position, batches, pending = cur
            _, _, first, n = self.groups[k]
            if position == first + n:  # this row group is done: the next one starts here
                self._cursor = self._open(k + 1)
                continue
            if not pending:
                pending = cur[3] = next(batches).to_pylist()
            if position < row:  # skip forward to the wanted row
                skip = min(len(pending), row - position)
                del pending[:skip]
                cur[1] = position + skip
                continue
            take = min(len(pending), stop - row)
            out.extend(pending[:take])
            del pending[:take]
            cur[1] = position + take
            row += take
        return out


class DatasetRows:
    """A ``datasets.Dataset`` (e.g. loaded from the Hub) with image columns left encoded.

    With ``name`` and ``split`` (a Hub dataset), it pickles as them plus its fingerprint and row
    count, and loads the split again where it is unpickled: a Ray actor on another node has no
    copy of the driver's cache files, which a pickled ``Dataset`` would point to. A reload whose
    fingerprint differs (the repository changed in between) is an error, never rows of another
    version."""

    def __init__(self, ds, name: Optional[str] = None, split: Optional[str] = None):
        self.name, self.split = name, split
        self.fingerprint = ds._fingerprint
        self.n_rows = len(ds)
        self._ds = _encoded(ds)

    def __len__(self) -> int:
        return self.n_rows

    @property
    def ds(self):
        if self._ds is None:
            from datasets import load_dataset

            ds = load_dataset(self.name, split=self.split)
            if ds._fingerprint != self.fingerprint or len(ds) != self.n_rows:
                raise RunError(f"{self.name} [{self.split}] loaded here is not the version the job started with "
                               f"(fingerprint {ds._fingerprint} != {self.fingerprint}); rerun the job")
            self._ds = _encoded(ds)
        return self._ds

    def __getstate__(self) -> dict[str, Any]:
        if self.name is None:  # an in-memory dataset travels as it is
            return self.__dict__
        return {**self.__dict__, "_ds": None}

    def read(self, start: int, stop: int) -> list[dict[str, Any]]:
        return self.ds.select(range(start, stop)).to_list()


def _encoded(ds):
    """``ds`` with its image columns left as encoded bytes (decoded where a task needs them)."""
    from datasets import Image

    for col, feature in ds.features.items():
        if isinstance(feature, Image):
            ds = ds.cast_column(col, Image(decode=False))
    return ds


def local_split_files(dataset: Path | str, split: str) -> list[Path]:
    """The parquet files of ``split`` in a local dataset folder, in the order ``datasets``
    reads them (``data/<split>-*.parquet``); empty when ``dataset`` is not a local folder."""
    folder = Path(dataset)
    return sorted((folder / "data").glob(f"{split}-*.parquet")) if folder.is_dir() else []


def check_built(dataset: Path | str, option: str = "--dataset") -> None:
    """A local ``dataset`` must be a folder ``idc-build`` wrote (``data/*.parquet``): a raw release
    or any other folder is refused in one line saying so, never as a split ``datasets`` cannot find."""
    folder = Path(dataset)
    if not folder.is_dir() or any((folder / "data").glob("*.parquet")):
        return
    if next((p for p in folder.rglob("*") if p.suffix in (".parquet", ".arrow")), None) is not None:
        return  # a dataset in another layout (a Hub copy): datasets reads it
    raise RunError(f"{option} {dataset}: a raw release or another folder, not a dataset idc-build wrote (no data/*.parquet); "
                   "run idc-build NAME --raw FOLDER --out DATA first (idc-build --list names the releases) and pass DATA")


def looks_like_repo_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def check_hub_repo(name: str, repo_type: str, what: str, revision: Optional[str] = None) -> None:
    """Fail in seconds, in one line, when ``name`` is neither a local path nor a reachable
    Hub repo (instead of ``datasets``' or ``transformers``' minutes of retries)."""
    if Path(name).exists():
        return
    if not looks_like_repo_id(name):
        raise RunError(f"{what} {name!r}: no such local folder (and not a Hub id of the form org/name)")
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        cached = _in_hub_cache(name, repo_type)
        if cached:
            return
        raise RunError(f"{what} {name!r}: no local folder {name}, and the Hub is off (HF_HUB_OFFLINE=1) with no cached copy")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        HfApi().repo_info(name, repo_type=repo_type, revision=revision, timeout=float(os.environ.get("IDC_HUB_TIMEOUT", "10")))
    except RepositoryNotFoundError:
        raise RunError(f"{what} {name!r}: no local folder {name}, and the Hub has no {repo_type} repo {name} "
                       "(or it is private: log in with `hf auth login`)") from None
    except RevisionNotFoundError:
        raise RunError(f"{what} {name!r}: the Hub repo has no revision {revision!r}") from None
    except Exception as exc:  # connection errors come in many types
        if _in_hub_cache(name, repo_type):
            return
        raise RunError(f"{what} {name!r}: no local folder {name}, and the Hub is unreachable ({type(exc).__name__})") from None


def _in_hub_cache(name: str, repo_type: str) -> bool:
    from huggingface_hub import constants

    folder = f"{repo_type}s--{name.replace('/', '--')}"
    return (Path(constants.HF_HUB_CACHE) / folder).is_dir()


def check_against_card(folder: str | Path, split: str, files: list[Path], fingerprint: Optional[str] = None,
                       progress: bool = False) -> None:
    """A local folder's parquet files must agree with its card (``dataset_info``): the same
    columns and, for ``split``, the same row count; and, where idc-toolkit wrote the card, the
    same content (the split's fingerprint in ``card_data.files_description``). A folder edited after it was
    written is refused in one line naming it, before any work: ``load_dataset`` would fail
    mid-way, or, with the card unchanged, return its cached rows of the files before the edit.
    ``fingerprint``: the files' ``parquet_files_fingerprint`` where the caller has it already;
    ``progress``: show the hashing of a large split (:func:`~.fingerprint.files_sha256`)."""
    import pyarrow.parquet as pq

    from ..card_data import read_card_data, split_fingerprints_of

    try:
        card = read_card_data(folder)
    except Exception:  # an unreadable card is the card reader's error, reported where facts are read
        return
    info = card.get("dataset_info")
    if isinstance(info, list):
        info = info[0] if info else None
    if not isinstance(info, dict):
        return
    names = [f.get("name") for f in info.get("features") or [] if isinstance(f, dict)]
    counts = {s.get("name"): s.get("num_examples") for s in info.get("splits") or [] if isinstance(s, dict)}
    try:
        n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        schema = pq.ParquetFile(files[0]).schema_arrow
        columns = schema.names
    except Exception as exc:
        raise RunError(f"{files[0]}: not a readable parquet file ({exc})") from None
    where = f"{folder}: data/{split}-*.parquet"
    if names and set(columns) != set(names):
        extra, missing = sorted(set(columns) - set(names)), sorted(set(names) - set(columns))
        raise RunError(f"{where} has columns that its card (README.md dataset_info) does not list"
                       f"{' (' + ', '.join(extra) + ')' if extra else ''}{' and lacks ' + ', '.join(missing) if missing else ''}; "
                       "the folder was changed after it was written")
    declared = {f.get("name"): f for f in info.get("features") or [] if isinstance(f, dict)}
    for name, feature in declared.items():
        kind = _declared_kind(feature)
        if kind and name in schema.names and _arrow_kind(schema.field(name).type) != kind:
            raise RunError(f"{where}: column {name!r} holds {schema.field(name).type} but its card (README.md dataset_info) "
                           f"declares {kind}; the folder was changed after it was written")
    if isinstance(counts.get(split), int) and counts[split] != n:
        raise RunError(f"{where} holds {n} rows but its card (README.md dataset_info) says {counts[split]}; "
                       "the folder was changed after it was written")
    recorded = split_fingerprints_of(card)
    if recorded is not None:
        from .fingerprint import parquet_files_fingerprint

        found = fingerprint or parquet_files_fingerprint(files, progress)
        if recorded.get(split) != found:
            raise RunError(f"{where} are not the files its card (README.md configs description: "
                           f"{split}={recorded.get(split)}) was written for ({found}); the folder was changed after it was written")


def _declared_kind(feature: dict) -> Optional[str]:
    """The kind of column a card's feature declares (``list``, ``string``, ``number``, ``image``),
    read with PyYAML's view of ``dataset_info`` alone (no ``datasets`` import on the scoring path);
    ``None`` for a declaration this check does not know."""
    if "list" in feature or "sequence" in feature:
        return "list"
    dtype = feature.get("dtype")
    if isinstance(dtype, dict) and "class_label" in dtype:
        return "number"
    if dtype == "image":
        return "image"
    if dtype in ("string", "large_string"):
        return "string"
    if isinstance(dtype, str) and dtype.startswith(("int", "uint", "float", "bool")):
        return "number"
    return None


def _arrow_kind(arrow_type) -> str:
    import pyarrow as pa

    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return "list"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type):
        return "number"
    if pa.types.is_struct(arrow_type) and {f.name for f in arrow_type} >= {"bytes", "path"}:
        return "image"
    return str(arrow_type)


def open_split(dataset: str | Path, split: str, progress: bool = False) -> tuple[RowSource, Any, str]:
    """``(rows, features, input fingerprint)`` of a split of a local folder or a Hub dataset;
    ``progress``: show the first hashing of a large split's files."""
    from datasets import Features

    from .fingerprint import parquet_files_fingerprint

    name = str(dataset)
    files = local_split_files(name, split)
    if files:
        fingerprint = parquet_files_fingerprint(files, progress)
        check_against_card(name, split, files, fingerprint)
        rows = ParquetRows(files)
        return rows, Features.from_arrow_schema(rows.schema), fingerprint
    if Path(name).is_dir():
        check_built(name)
        present = sorted({p.name.split("-")[0] for p in (Path(name) / "data").glob("*.parquet")})
        raise RunError(f"{name}: no {split!r} split (data/{split}-*.parquet); splits present: {present or 'none'}")
    check_hub_repo(name, "dataset", "--dataset")
    from datasets import load_dataset

    try:
        ds = load_dataset(name, split=split)
    except (ValueError, FileNotFoundError) as exc:
        raise RunError(f"{name}: cannot load split {split!r}: {exc}") from None
    return DatasetRows(ds, name, split), ds.features, ds._fingerprint


def decode_image(cell: Any):
    """A PIL image from an encoded image cell (``{"bytes", "path"}``)."""
    from PIL import Image

    if isinstance(cell, dict):
        return Image.open(io.BytesIO(cell["bytes"])) if cell.get("bytes") else Image.open(cell["path"])
    return cell


def iter_rows(source: RowSource, batch_size: int = 64) -> Iterator[Any]:
    for start in range(0, len(source), batch_size):
        yield from source.read(start, min(start + batch_size, len(source)))

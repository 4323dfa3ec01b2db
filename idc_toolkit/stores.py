"""Datasets and outputs on object stores: ``s3://``, ``gs://``, ``hf://``, or any URI that
``pyarrow.fs`` (as Ray Data reads and writes) or fsspec (as ``datasets`` does) opens.

* An ``--out`` there: a resumable run folder needs locks and atomic renames, which object
  stores lack. So its run works in a local staging folder under the toolkit's cache
  (:func:`staging_folder`: ``$IDC_CACHE/staging/<hash of the URI>/``), under every rule of the
  run engine, and the run engine publishes the finished folder to the URI
  (:mod:`idc_toolkit.runs.publish`). The staging folder's sibling ``<hash>.uri`` names its URI,
  so whoever holds the staging folder finds its destination (:func:`store_of`).
* A ``--dataset`` there: read through a local copy of the version the store holds now
  (:func:`input_folder`), so every reader, fingerprint and card check is a local folder's, and
  a run reading one version never sees a file of the next.

:class:`Store` is the handful of file operations both need, nothing more.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from .cache import cache_dir
from .files import content_sha256, inside

# a scheme, then ``:/`` and an optional second slash: ``Path("s3://b/x")`` leaves ``s3:/b/x``
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(/?)")
STAGING = "staging"
COPY_CHUNK = 8 << 20

#: what an option taking an output folder or a dataset folder adds to its help
STORE_OUT = "; or an s3:// / gs:// / hf:// URI: staged here, published there when finished"
STORE_DATASET = "; or such a folder on an object store (s3://, gs://, hf://), read through a local copy"


def uri_scheme(text: str) -> Optional[str]:
    """The scheme of a URI (lower case), ``None`` for a plain path (``C:\\x`` included)."""
    match = _URI.match(str(text))
    return match.group(1).lower() if match else None


def normalised_uri(text: str) -> str:
    """``text`` with the ``//`` after its scheme restored where a ``Path`` collapsed it:
    ``file:/x`` was ``file:///x`` (no host), ``s3:/b/x`` was ``s3://b/x`` (the bucket)."""
    match = _URI.match(text)
    if not match or match.group(2):
        return text
    scheme = match.group(1)
    if scheme.lower() == "file":
        return f"{scheme}://{text[len(scheme) + 1:]}"
    return f"{scheme}://{text[match.end():]}"


_SECRET = re.compile(r"(?i)([?&][^=&]*(?:secret|token|password|credential)[^=&]*=)[^&]*")


def first_line(exc: Exception) -> str:
    """What a store's exception says, as one line of a one-line error (its type when it says nothing)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0][:300]


def shown_uri(uri: str) -> str:
    """``uri`` as messages, progress bars and records show it: the values of its secret query
    parameters (``secret_key``, ``session_token``, ...) replaced by ``***``."""
    return _SECRET.sub(r"\1***", uri)


@dataclass
class Store:
    """A folder on a ``pyarrow.fs`` file system: ``root`` on ``fs``, named ``uri`` in messages."""

    uri: str
    fs: Any  # pyarrow.fs.FileSystem
    root: str

    @classmethod
    def open(cls, uri: str) -> "Store":
        """``pyarrow.fs`` first (S3, GCS, HDFS, the Hub's ``hf://``), then fsspec (``memory://``,
        ``az://`` with adlfs, ...); ``ValueError`` naming the URI when neither knows it."""
        import pyarrow as pa
        from pyarrow.fs import FileSystem

        try:
            fs, root = FileSystem.from_uri(uri)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as arrow_error:
            import fsspec
            from pyarrow.fs import FSSpecHandler, PyFileSystem

            try:
                spec_fs, root = fsspec.core.url_to_fs(uri)
            except (ValueError, ImportError) as exc:
                raise ValueError(f"{shown_uri(uri)}: neither pyarrow ({arrow_error}) nor fsspec ({exc}) can open it") from None
            fs = PyFileSystem(FSSpecHandler(spec_fs))
        return cls(uri, fs, root.rstrip("/"))

    @property
    def shown(self) -> str:
        return shown_uri(self.uri)

    @property
    def shown_short(self) -> str:
        """The URI as progress bars name it: without its query (options, credentials)."""
        return self.shown.split("?")[0]

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def _info(self, name: str) -> Any:
        return self.fs.get_file_info(self.path(name))

    def exists(self, name: str) -> bool:
        from pyarrow.fs import FileType

        return self._info(name).type != FileType.NotFound

    def entries(self) -> list[str]:
        """The names directly inside the folder (none when it does not exist)."""
        from pyarrow.fs import FileSelector

        infos = self.fs.get_file_info(FileSelector(self.root, allow_not_found=True))
        return sorted({info.path.rstrip("/").rsplit("/", 1)[-1] for info in infos})

    def read_text(self, name: str) -> Optional[str]:
        """The UTF-8 text of the file ``name``, ``None`` when there is none."""
        from pyarrow.fs import FileType

        if self._info(name).type != FileType.File:
            return None
        with self.fs.open_input_stream(self.path(name)) as fh:
            return fh.read().decode("utf-8")

    def write_text(self, name: str, text: str) -> None:
        with self._output(name) as fh:
            fh.write(text.encode("utf-8"))

    def remove(self, name: str) -> None:
        """Remove the file or folder ``name`` (nothing when absent)."""
        from pyarrow.fs import FileType

        kind = self._info(name).type
        if kind == FileType.Directory:
            self.fs.delete_dir(self.path(name))
        elif kind == FileType.File:
            self.fs.delete_file(self.path(name))

    def _output(self, name: str) -> Any:
        """An output stream to the file ``name``. Its folders are made only where the file system
        needs them: on S3 or GCS ``create_dir`` would add an empty ``data/`` object beside the data."""
        try:
            return self.fs.open_output_stream(self.path(name))
        except FileNotFoundError:
            self.fs.create_dir(self.path(name).rsplit("/", 1)[0], recursive=True)
            return self.fs.open_output_stream(self.path(name))

    def upload(self, local: Path, name: str, on_bytes: Callable[[int], Any] = lambda n: None) -> None:
        """Copy the local file or folder ``local`` to ``name``, file by file in chunks
        (``on_bytes`` is told each chunk's size)."""
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in files:
            target = name if path == local else f"{name}/{path.relative_to(local).as_posix()}"
            with path.open("rb") as src, self._output(target) as dst:
                while chunk := src.read(COPY_CHUNK):
                    dst.write(chunk)
                    on_bytes(len(chunk))

    def download(self, name: str, local: Path, on_bytes: Callable[[int], Any] = lambda n: None) -> None:
        """Copy the file or folder ``name`` to the local path ``local`` (each file written beside
        and renamed into place; ``on_bytes`` is told each chunk's size)."""
        from pyarrow.fs import FileSelector, FileType

        info = self._info(name)
        if info.type == FileType.File:
            files = [(info.path, local)]
        else:
            found = self.fs.get_file_info(FileSelector(self.path(name), recursive=True, allow_not_found=True))
            base = self.path(name).rstrip("/") + "/"
            # a key is data: one such as "data/../../x" must not land outside ``local``
            files = [(f.path, inside(local, f.path[len(base):])) for f in found if f.type == FileType.File]
        for source, target in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.partial")  # ranks fetch at once
            with self.fs.open_input_stream(source) as src, partial.open("wb") as dst:
                while chunk := src.read(COPY_CHUNK):
                    dst.write(chunk)
                    on_bytes(len(chunk))
            partial.replace(target)


def staging_folder(uri: str) -> Path:
    """The local folder a run for ``uri`` works in, and the sibling file naming ``uri`` (written
    readable by its owner only: some fsspec back-ends take credentials in the query)."""
    key = hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16]
    root = cache_dir(STAGING)
    root.mkdir(parents=True, exist_ok=True)
    named = root / f"{key}.uri"
    if not named.is_file() or named.read_text(encoding="utf-8") != uri:
        fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(uri)
    return root / key


def output_folder(out: Path | str, error: Callable[[str], Exception]) -> Path:
    """The local folder an ``--out`` names: a path; a ``file://`` URI (resolved through
    ``pyarrow.fs``, as Ray Data and ``datasets`` resolve theirs); or, for any other URI
    (``s3://``, ``gs://``, ``hf://``, ...), the local folder its run is staged in before the run
    engine publishes it there (:mod:`idc_toolkit.runs.publish`). A URI that went through
    ``Path`` (``s3:/b/x``, one slash left) is recognised too, so it can never become a folder
    named ``s3:`` in the working directory."""
    scheme = uri_scheme(str(out))
    if scheme is None:
        return Path(out)
    uri = normalised_uri(str(out))
    if scheme != "file":
        try:
            Store.open(uri)
        except (ValueError, OSError) as exc:
            raise error(f"--out {shown_uri(uri)}: cannot be opened ({exc})") from None
        return staging_folder(uri)
    import pyarrow as pa
    from pyarrow.fs import FileSystem

    try:
        _, path = FileSystem.from_uri(uri)
    except pa.ArrowInvalid as exc:
        raise error(f"--out {uri}: not a valid file:// URI ({exc}); percent-encode spaces, or pass a plain path") from None
    return Path(path)


def store_of(folder: Path) -> Optional[Store]:
    """The destination whose run ``folder`` stages, ``None`` for an ordinary local folder."""
    folder = Path(folder)
    root = cache_dir(STAGING)
    named = root / f"{folder.name}.uri"
    if folder.parent.resolve() != root.resolve() or not named.is_file():
        return None
    return Store.open(named.read_text(encoding="utf-8"))


def _listing(store: Store) -> list[tuple[str, int, int]]:
    """``(path under the folder, size, mtime in ns)`` of every file of the folder but hidden ones
    (a published run's ``.idc_run/``); ``ValueError`` for a key that is not a plain path
    (``data/../../x``): refused, never copied elsewhere and never skipped unsaid."""
    from pyarrow.fs import FileSelector, FileType

    base = store.root + "/"
    found = []
    for info in store.fs.get_file_info(FileSelector(store.root, recursive=True, allow_not_found=True)):
        name = info.path[len(base):] if info.path.startswith(base) else info.path.lstrip("/")
        if info.type != FileType.File:
            continue
        if any(part in ("", ".", "..") for part in name.split("/")):
            raise ValueError(f"its object {name!r} is not a plain path")
        if not any(part.startswith(".") for part in name.split("/")):
            found.append((name, int(info.size or 0), int(info.mtime_ns or 0)))
    return sorted(found)


def input_folder(dataset: str, error: Callable[[str], Exception], progress: bool = False) -> str:
    """The folder a ``--dataset`` is read from: a path or a Hub id as given, a ``file://`` URI's
    folder, and for any other URI a local copy of the files the store holds now, at
    ``$IDC_CACHE/inputs/<hash of the URI>/<version>/<its name>``. The version is a hash of the
    store's listing (names, sizes, modification times), or, where the store gives no modification
    times, of the copied files' content (then every call copies). A new version gets a new copy,
    made beside and renamed into place whole, so a run that reads one version never sees a file of
    another; copies are kept (delete them freely when no run reads them). ``progress``: a byte bar
    while copying."""
    text = str(dataset)
    scheme = uri_scheme(text)
    if scheme is None:
        return text
    uri = normalised_uri(text)
    if scheme == "file":
        from pyarrow.fs import FileSystem

        return FileSystem.from_uri(uri)[1]

    def failed(what: str, exc: Exception) -> Exception:
        return error(f"--dataset {shown_uri(uri)}: {what} ({first_line(exc)})")

    try:
        store = Store.open(uri)
        listing = _listing(store)
    except (ValueError, OSError) as exc:
        raise failed("cannot be read", exc) from None
    if not listing:
        raise error(f"--dataset {shown_uri(uri)}: holds no files")
    name = store.root.rstrip("/").rsplit("/", 1)[-1] or "dataset"
    home = cache_dir("inputs", hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16])
    timed = all(mtime for _, _, mtime in listing)
    version = _digest(listing) if timed else None
    if version and (home / version / name).is_dir():
        return str(home / version / name)
    with _copy_lock(home):  # torchrun's ranks and --shard jobs on one machine: one of them copies
        if version and (home / version / name).is_dir():
            return str(home / version / name)
        return _copy(store, listing, home, name, version, progress, failed)


@contextmanager
def _copy_lock(home: Path) -> Iterator[None]:
    """Wait for the copy another process of this machine is making of the same URI (a blocking
    ``flock``, released by the kernel however that process ends)."""
    import fcntl

    home.mkdir(parents=True, exist_ok=True)
    with open(home / "copy.lock", "a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:  # a file system without flock: copies may then be made twice, never mixed
            pass
        yield


def _copy(store: Store, listing: list[tuple[str, int, int]], home: Path, name: str, version: Optional[str],
          progress: bool, failed: Callable[[str, Exception], Exception]) -> str:
    """Copy the listed files beside, then rename the copy into place as ``home/version/name``."""
    import json
    import shutil

    from tqdm.auto import tqdm

    timed = version is not None
    partial = home / f"copy.{os.getpid()}.{threading.get_ident()}.partial"
    shutil.rmtree(partial, ignore_errors=True)  # this thread's own, from an attempt that failed
    bar = tqdm(total=sum(size for _, size, _ in listing), unit="B", unit_scale=True, disable=not progress,
               desc=f"copying {store.shown_short}" + (" (once per version)" if timed else ""))
    try:
        for path, _, _ in listing:
            store.download(path, inside(partial / name, path), bar.update)  # a key never lands outside the copy
        if not timed:  # what the store cannot tell, the content does
            version = _digest([(path, size, content_sha256(partial / name / path)) for path, size, _ in listing])
        (partial / name / ".idc_copy.json").write_text(json.dumps({"uri": store.shown, "files": listing}, indent=1) + "\n")
        try:
            partial.rename(home / version)
        except OSError:  # another process copied the same version first: its copy serves
            if not (home / version / name).is_dir():
                raise
    except (OSError, ValueError) as exc:  # ValueError: a key that would land outside the copy
        raise failed("copying it failed", exc) from None
    finally:
        bar.close()
        shutil.rmtree(partial, ignore_errors=True)  # this thread's partial copy (gone when renamed into place)
    return str(home / version / name)


def _digest(value: Any) -> str:
    import json

    return hashlib.sha256(json.dumps(value).encode("utf-8")).hexdigest()[:16]

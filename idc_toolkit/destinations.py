"""An ``--out`` that is not a local folder: ``s3://``, ``gs://``, ``hf://``, or any URI that
``pyarrow.fs`` (as Ray Data writes) or fsspec (as ``datasets`` does) opens.

A resumable run folder needs locks and atomic renames, which object stores lack. So a run for
such an ``--out`` works in a local staging folder under the toolkit's cache
(:func:`staging_folder`: ``$IDC_CACHE/staging/<hash of the URI>/``), under every rule of the
run engine, and the run engine publishes the finished folder to the URI
(:mod:`idc_toolkit.runs.publish`). The staging folder's sibling ``<hash>.uri`` names its URI,
so whoever holds the staging folder finds its destination (:func:`destination_of`).

:class:`Destination` is the handful of file operations publishing needs, nothing more.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .cache import cache_dir

# a scheme, then ``:/`` and an optional second slash: ``Path("s3://b/x")`` leaves ``s3:/b/x``
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(/?)")
STAGING = "staging"
COPY_CHUNK = 8 << 20


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


@dataclass
class Destination:
    """A folder on a ``pyarrow.fs`` file system: ``root`` on ``fs``, named ``uri`` in messages."""

    uri: str
    fs: Any  # pyarrow.fs.FileSystem
    root: str

    @classmethod
    def open(cls, uri: str) -> "Destination":
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
                raise ValueError(f"{uri}: neither pyarrow ({arrow_error}) nor fsspec ({exc}) can open it") from None
            fs = PyFileSystem(FSSpecHandler(spec_fs))
        return cls(uri, fs, root.rstrip("/"))

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
        self._parent(name)
        with self.fs.open_output_stream(self.path(name)) as fh:
            fh.write(text.encode("utf-8"))

    def remove(self, name: str) -> None:
        """Remove the file or folder ``name`` (nothing when absent)."""
        from pyarrow.fs import FileType

        kind = self._info(name).type
        if kind == FileType.Directory:
            self.fs.delete_dir(self.path(name))
        elif kind == FileType.File:
            self.fs.delete_file(self.path(name))

    def _parent(self, name: str) -> None:
        parent = self.path(name).rsplit("/", 1)[0]
        if parent:
            self.fs.create_dir(parent, recursive=True)

    def upload(self, local: Path, name: str, on_bytes: Callable[[int], Any] = lambda n: None) -> None:
        """Copy the local file or folder ``local`` to ``name``, file by file in chunks
        (``on_bytes`` is told each chunk's size)."""
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in files:
            target = name if path == local else f"{name}/{path.relative_to(local).as_posix()}"
            self._parent(target)
            with path.open("rb") as src, self.fs.open_output_stream(self.path(target)) as dst:
                while chunk := src.read(COPY_CHUNK):
                    dst.write(chunk)
                    on_bytes(len(chunk))

    def download(self, name: str, local: Path) -> None:
        """Copy the file or folder ``name`` to the local path ``local`` (each file written beside
        and renamed into place)."""
        from pyarrow.fs import FileSelector, FileType

        info = self._info(name)
        if info.type == FileType.File:
            files = [(info.path, local)]
        else:
            found = self.fs.get_file_info(FileSelector(self.path(name), recursive=True, allow_not_found=True))
            base = self.path(name).rstrip("/") + "/"
            files = [(f.path, local / f.path[len(base):]) for f in found if f.type == FileType.File]
        for source, target in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            with self.fs.open_input_stream(source) as src, partial.open("wb") as dst:
                while chunk := src.read(COPY_CHUNK):
                    dst.write(chunk)
            partial.replace(target)


def staging_folder(uri: str) -> Path:
    """The local folder a run for ``uri`` works in, and the sibling file naming ``uri`` (written
    readable by its owner only: a URI may carry an S3 secret in its query)."""
    key = hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16]
    root = cache_dir(STAGING)
    root.mkdir(parents=True, exist_ok=True)
    named = root / f"{key}.uri"
    if not named.is_file() or named.read_text(encoding="utf-8") != uri:
        fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(uri)
    return root / key


def destination_of(folder: Path) -> Optional[Destination]:
    """The destination whose run ``folder`` stages, ``None`` for an ordinary local folder."""
    folder = Path(folder)
    root = cache_dir(STAGING)
    named = root / f"{folder.name}.uri"
    if folder.parent.resolve() != root.resolve() or not named.is_file():
        return None
    return Destination.open(named.read_text(encoding="utf-8"))

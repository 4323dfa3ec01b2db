"""The files and folders users hand the toolkit: text files (annotations, predictions,
references, category maps) read with one-line errors that name the file and what is wrong
with it, and file names made from ids that stay inside their folder. (The local folder an
``--out`` names is :func:`idc_toolkit.stores.output_folder`'s.)"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional


def read_text(path: Path | str, error: Callable[[str], Exception], what: str = "file") -> str:
    """The UTF-8 text of ``path``; ``error(message)`` is raised when it is missing or not UTF-8."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, expected a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line}); "
                    "save it as UTF-8") from None


class UnreadableJSON(ValueError):
    """Well-formed JSON that Python's reader cannot hold (the message says why)."""


def parse_json(text: str, **kwargs: Any) -> Any:
    """``json.loads(text)``; JSON Python cannot hold (nesting past the recursion limit, an integer of
    more digits than ``sys.get_int_max_str_digits()``) raises :class:`UnreadableJSON` saying so, as
    malformed JSON raises ``json.JSONDecodeError``; never a traceback of the reader's own."""
    import json
    import re
    import sys

    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UnreadableJSON("JSON nested deeper than Python's JSON reader can follow (RecursionError)") from None
    except ValueError as exc:  # Python refuses integers of more than 4300 digits
        if "digits" not in str(exc):
            raise
        digits = re.search(r"has (\d+) digits", str(exc))
        raise UnreadableJSON(f"a number of {digits.group(1) if digits else 'too many'} digits, more than Python reads "
                             f"({sys.get_int_max_str_digits()}: sys.get_int_max_str_digits())") from None


def read_json(path: Path | str, error: Callable[[str], Exception], what: str = "file") -> Any:
    """The JSON value of ``path`` (read by :func:`read_text`); ``error(message)`` names the line and
    column of malformed JSON, or why Python cannot hold it."""
    import json

    try:
        return parse_json(read_text(path, error, what))
    except json.JSONDecodeError as exc:
        raise error(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except UnreadableJSON as exc:
        raise error(f"{path}: {exc}") from None


def content_sha256(path: Path | str, on_bytes: Optional[Callable[[int], Any]] = None) -> str:
    """SHA-256 of a file's content, read in 8 MiB blocks; ``on_bytes`` is told each block's size
    (a progress bar)."""
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(8 << 20):
            digest.update(block)
            if on_bytes is not None:
                on_bytes(len(block))
    return digest.hexdigest()


def file_name_for(key: str, suffix: str = "") -> str:
    """A file name made from data (a pair id): path separators, ``..``, control and shell-
    hostile characters become ``_``, the text is cut to 80 characters, and a short hash of the
    whole id always follows, so no two ids share a name (``x y`` and ``x_y-887fcea6`` included:
    a name carrying the hash only where the id changed could be taken by another id written that
    way). Never a path: it cannot leave the folder it is joined to."""
    import hashlib
    import re

    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", str(key)).strip("._") or "pair"
    return f"{cleaned[:80]}-{hashlib.sha256(str(key).encode()).hexdigest()[:8]}{suffix}"


def inside(folder: Path | str, name: str) -> Path:
    """``folder / name``, refused (``ValueError``) when it would resolve outside ``folder``."""
    root = Path(folder).resolve()
    target = (root / name).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"{name!r} would be written outside {folder}")
    return target


@contextlib.contextmanager
def open_atomic(path: Path, mode: str = "w") -> Iterator[IO]:
    """A file written beside ``path`` (``mode`` "w": UTF-8 text, line ends as written; "wb":
    bytes) and renamed over it when the block ends: a reader sees the old file or the new one,
    never a torn one; a failure removes the file this call wrote, nothing else."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # this thread's own
    try:
        with (tmp.open(mode) if "b" in mode else tmp.open(mode, encoding="utf-8", newline="")) as fh:
            yield fh
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # the file this call opened above, never ``path``
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` beside ``path`` and rename it over (:func:`open_atomic`)."""
    with open_atomic(path) as fh:
        fh.write(text)

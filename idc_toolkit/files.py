"""Reading the text files users hand the toolkit (annotations, predictions, references,
category maps) with one-line errors that name the file and what is wrong with it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


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

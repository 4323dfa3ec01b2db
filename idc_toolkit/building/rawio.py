"""Reading raw release files: JSON with located errors, and images by content.

Images are copied into the dataset as the release's own encoded bytes (no decode/re-encode),
so this module checks them cheaply instead of decoding them:

* the format is sniffed from the magic bytes, never from the file suffix (IER mixes
  ``.jpg`` / ``.JPG`` / ``.png`` / ``.gif`` names, and some suffixes lie);
* ``fast`` verification catches truncation structurally: PNG chunks and CRCs are walked by
  Pillow's ``verify()`` up to ``IEND``; JPEG must end with the EOI marker; GIF with its
  trailer; any other format is fully decoded;
* ``full`` verification decodes every image (slower, catches corrupt pixel data too).
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any, Container, Optional

from PIL import Image as PILImage

from ..errors import BadImageError, RawFormatError

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def read_json(path: Path | str) -> Any:
    """Load a JSON file; a syntax error names the file, line, column and character offset."""
    from ..files import read_text

    path = Path(path)
    text = read_text(path, lambda message: RawFormatError(path, message.split(": ", 1)[1]), "annotation file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RawFormatError(
            path, f"malformed JSON at line {exc.lineno}, column {exc.colno} (char {exc.pos}): {exc.msg}"
        ) from None


def read_karpathy(path: Path | str, splits: Optional[Container[str]] = None) -> list:
    """The ``images`` records of a Karpathy-style caption file (``{"images": [{"filename", "split",
    "sentences": [{"raw", "tokens"}]}]}``, as LEVIR-CC, Dubai-CC and SECOND-CC ship theirs); with
    ``splits``, a record of any other split is refused, naming it."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise RawFormatError(path, "expected {\"images\": [...]} (Karpathy-style caption file)")
    if splits is not None:
        for i, img in enumerate(data["images"]):
            split = img.get("split") if isinstance(img, dict) else None
            if split not in splits:
                raise RawFormatError(path, f"unknown split value {split!r}; expected one of {sorted(splits)}", f"images[{i}]")
    return data["images"]


def sniff_image_format(data: bytes) -> str | None:
    """Image format from the magic bytes, or ``None`` when it is not a known image."""
    for magic, fmt in _MAGIC:
        if data.startswith(magic):
            return fmt
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def check_image_bytes(data: bytes, verify: str = "fast") -> str:
    """Check encoded image bytes and return the format; raise :class:`BadImageError` if bad."""
    if not data:
        raise BadImageError("empty file")
    fmt = sniff_image_format(data)
    if fmt is None:
        raise BadImageError("not a recognised image (unknown magic bytes)")
    try:
        if verify == "full":
            with PILImage.open(io.BytesIO(data)) as im:
                im.load()
        elif fmt == "PNG":
            _walk_png(data)
        elif fmt == "JPEG":
            if data.rstrip(b"\x00")[-2:] != b"\xff\xd9":
                raise BadImageError("truncated JPEG (no end-of-image marker)")
            with PILImage.open(io.BytesIO(data)):
                pass
        elif fmt == "GIF":
            if data.rstrip(b"\x00")[-1:] != b"\x3b":
                raise BadImageError("truncated GIF (no trailer)")
            with PILImage.open(io.BytesIO(data)):
                pass
        else:
            with PILImage.open(io.BytesIO(data)) as im:
                im.load()
    except BadImageError:
        raise
    except Exception as exc:  # Pillow raises many types for broken files
        raise BadImageError(f"unreadable {fmt}: {exc}") from None
    return fmt


def _walk_png(data: bytes) -> None:
    """Walk every PNG chunk, checking lengths and CRCs, up to IEND (what Pillow's verify()
    does, without its per-file overhead). Catches truncation and corrupted chunks."""
    view = memoryview(data)
    pos = 8
    first = True
    end = len(data)
    while True:
        if pos + 12 > end:
            raise BadImageError("truncated PNG (no IEND chunk)")
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        if first and ctype != b"IHDR":
            raise BadImageError("broken PNG (first chunk is not IHDR)")
        first = False
        stop = pos + 8 + length
        if stop + 4 > end:
            raise BadImageError(f"truncated PNG (chunk {ctype!r} runs past the end of the file)")
        (crc,) = struct.unpack(">I", data[stop : stop + 4])
        if zlib.crc32(view[pos + 4 : stop]) != crc:
            raise BadImageError(f"broken PNG (bad CRC in chunk {ctype!r})")
        if ctype == b"IEND":
            return
        pos = stop + 4


def read_image_bytes(path: Path, verify: str = "fast") -> bytes:
    """Read an image file's bytes after checking them (see module docstring)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadImageError("image file not found") from None
    except OSError as exc:
        raise BadImageError(f"cannot read image file: {exc}") from None
    check_image_bytes(data, verify)
    return data

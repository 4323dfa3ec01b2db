"""Reading raw release files: JSON with located errors, and images by content.

Images are copied into the dataset as the release's own encoded bytes (no decode/re-encode),
so this module checks them cheaply instead of decoding them:

* the format is sniffed from the magic bytes, never from the file suffix (IER mixes
  ``.jpg`` / ``.JPG`` / ``.png`` / ``.gif`` names, and some suffixes lie);
* ``fast`` verification catches truncation structurally: PNG chunks and CRCs are walked by
  Pillow's ``verify()`` up to ``IEND``; JPEG must end with the EOI marker; GIF with its
  trailer; any other format is fully decoded;
* ``full`` verification decodes every image (slower, catches corrupt pixel data too);
* either way an image whose header declares more pixels than Pillow's decompression-bomb limit
  (``PIL.Image.MAX_IMAGE_PIXELS``) is refused before anything is decoded.

A file read from a release (image or label) must resolve inside the raw folder, symbolic links
followed (:class:`RawRoot`).
"""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any, Container, Optional

from PIL import Image as PILImage

from ..errors import BadImageError, RawFormatError
from ..files import parse_json

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


#: byte-order marks of the encodings a text file may be saved in by mistake (UTF-32 first: its
#: little-endian mark starts with UTF-16's)
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def read_raw_text(path: Path | str, what: str = "annotation file") -> str:
    """A release's text file as UTF-8 (a UTF-8 byte-order mark dropped); UTF-16 / UTF-32 (named
    by their byte-order mark) and any other encoding are refused in one line naming the file."""
    from ..files import read_text

    path = Path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError:
        head = b""  # read_text names what is wrong with the file
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            raise RawFormatError(path, f"{encoding} text (it starts with a {encoding} byte-order mark); save it as UTF-8")
    text = read_text(path, lambda message: RawFormatError(path, message.split(": ", 1)[1]), what)
    return text[1:] if text.startswith("\ufeff") else text


def read_json(path: Path | str) -> Any:
    """Load a JSON file; a syntax error names the file, line, column and character offset."""
    path = Path(path)
    text = read_raw_text(path)
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise RawFormatError(
            path, f"malformed JSON at line {exc.lineno}, column {exc.colno} (char {exc.pos}): {exc.msg}"
        ) from None
    except ValueError as exc:
        raise RawFormatError(path, str(exc)) from None


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


def check_pixels(width: int, height: int) -> None:
    """Refuse a size over Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``; ``None``
    turns the check off, as it does in Pillow)."""
    limit = PILImage.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        raise BadImageError(f"{width} x {height} pixels, over Pillow's decompression-bomb limit of {limit} "
                            "(PIL.Image.MAX_IMAGE_PIXELS)")


def check_image_bytes(data: bytes, verify: str = "fast") -> str:
    """Check encoded image bytes and return the format; raise :class:`BadImageError` if bad."""
    return inspect_image_bytes(data, verify)[0]


def inspect_image_bytes(data: bytes, verify: str = "fast") -> tuple[str, tuple[int, int]]:
    """Check encoded image bytes (module docstring) and return their format and ``(width, height)``;
    raise :class:`BadImageError` if bad."""
    if not data:
        raise BadImageError("empty file")
    fmt = sniff_image_format(data)
    if fmt is None:
        raise BadImageError("not a recognised image (unknown magic bytes)")
    try:
        if fmt == "PNG":
            size = _walk_png(data)
            if verify == "full":
                with PILImage.open(io.BytesIO(data)) as im:
                    im.load()
            return fmt, size
        if verify != "full" and fmt == "JPEG" and data.rstrip(b"\x00")[-2:] != b"\xff\xd9":
            raise BadImageError("truncated JPEG (no end-of-image marker)")
        if verify != "full" and fmt == "GIF" and data.rstrip(b"\x00")[-1:] != b"\x3b":
            raise BadImageError("truncated GIF (no trailer)")
        with PILImage.open(io.BytesIO(data)) as im:  # reads the header only
            size = im.size
            check_pixels(*size)
            if verify == "full" or fmt not in ("JPEG", "GIF"):
                im.load()
        return fmt, size
    except BadImageError:
        raise
    except PILImage.DecompressionBombError as exc:  # Pillow's own refusal, at twice the limit
        raise BadImageError(f"over Pillow's decompression-bomb limit (PIL.Image.MAX_IMAGE_PIXELS): {exc}") from None
    except Exception as exc:  # Pillow raises many types for broken files
        raise BadImageError(f"unreadable {fmt}: {exc}") from None


def _walk_png(data: bytes) -> tuple[int, int]:
    """Walk every PNG chunk, checking lengths and CRCs, up to IEND (what Pillow's verify()
    does, without its per-file overhead), and return the size IHDR declares (checked against
    the pixel limit first). Catches truncation and corrupted chunks."""
    view = memoryview(data)
    pos = 8
    end = len(data)
    size = None
    while True:
        if pos + 12 > end:
            raise BadImageError("truncated PNG (no IEND chunk)")
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        if size is None:
            if ctype != b"IHDR" or length != 13 or pos + 16 > end:
                raise BadImageError("broken PNG (first chunk is not IHDR)")
            size = struct.unpack(">II", data[pos + 8 : pos + 16])
            check_pixels(*size)
        stop = pos + 8 + length
        if stop + 4 > end:
            raise BadImageError(f"truncated PNG (chunk {ctype!r} runs past the end of the file)")
        (crc,) = struct.unpack(">I", data[stop : stop + 4])
        if zlib.crc32(view[pos + 4 : stop]) != crc:
            raise BadImageError(f"broken PNG (bad CRC in chunk {ctype!r})")
        if ctype == b"IEND":
            return size
        pos = stop + 4


def image_size(data: bytes) -> Optional[tuple[int, int]]:
    """``(width, height)`` from an image's header, or ``None`` when it cannot be read."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            return im.size
    except Exception:  # Pillow raises many types for broken files
        return None


def image_file_size(path: Path) -> Optional[tuple[int, int]]:
    """An image file's ``(width, height)`` from its header, or ``None`` when it cannot be read (the
    build reports that image itself)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR" and len(head) == 24:
            return struct.unpack(">II", head[16:24])
        with PILImage.open(path) as im:
            return im.size
    except Exception:  # Pillow raises many types for broken files
        return None


class RawRoot:
    """The raw folder a build reads, and whether a path resolves inside it: an id with ``../``, an
    absolute path or a symbolic link to elsewhere would embed a file from outside the release."""

    def __init__(self, raw_dir: Path | str):
        self.root = os.path.realpath(raw_dir)
        self._inside = os.path.join(self.root, "")
        self._folders: dict[str, str] = {}

    def outside(self, path: Path | str) -> Optional[str]:
        """Why ``path`` is refused (it resolves outside the raw folder), or ``None``."""
        real = self._real_path(os.fspath(path))
        if real != self.root and not real.startswith(self._inside):  # strings: Path's parents took 3x realpath's time
            return f"{path} resolves outside the raw folder {self.root}: refused"
        return None

    def _real_path(self, path: str) -> str:
        """``os.path.realpath(path)``, each folder's real path looked up once (a release's images
        share a few folders: 5x faster on 57,000 paths)."""
        folder, name = os.path.split(path)
        # after a symbolic link, ``..`` climbs from the link's target: only realpath reads that right
        if name in ("", ".") or ".." in path.split(os.sep) or os.path.islink(path):
            return os.path.realpath(path)
        folder = folder or "."
        if folder not in self._folders:
            self._folders[folder] = os.path.realpath(folder)
        return os.path.join(self._folders[folder], name)


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


def box_problem(box: Any, size: Optional[tuple[int, int]] = None) -> Optional[str]:
    """Why ``box`` is not an ``[x0, y0, x1, y1]`` box of pixels (four finite numbers, not negative,
    x0 <= x1 and y0 <= y1, and with ``size`` = ``(width, height)`` inside the image), or ``None``."""
    import math

    if not isinstance(box, (list, tuple)) or len(box) != 4 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in box):
        return "not four numbers [x0, y0, x1, y1]"
    if not all(math.isfinite(v) for v in box):
        return "a coordinate is not finite"
    x0, y0, x1, y1 = box
    if min(box) < 0:
        return "a negative coordinate"
    if x0 > x1 or y0 > y1:
        return "x0 > x1" if x0 > x1 else "y0 > y1"
    if size is not None and (x1 > size[0] or y1 > size[1]):
        return f"outside the {size[0]} x {size[1]} before image"
    return None

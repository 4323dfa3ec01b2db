"""Ground-truth change labels of change-detection releases as the toolkit's mask columns.

A release's label becomes what ``idc-precompute masks`` writes (``change_mask``, ``change_boxes``,
``mask_source: annotation``; :data:`~idc_toolkit.schema.MASK_FEATURES`), so computed masks compare
against it and DAVIR trains on it, plus per-pixel class maps stored as PNGs of class indices.
A label file is read as the pair's images are (:func:`load_label`): inside the raw folder, its
header checked before any pixel is decoded, and of its pair's size.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional

from ..errors import BadImageError
from .rawio import RawRoot, image_file_size, inspect_image_bytes, sniff_image_format

#: formats whose compression changes pixel values: a mask's values would not survive it
LOSSY = ("JPEG", "WEBP")


class LabelError(ValueError):
    """Why a label file is refused; the builder skips its pair, naming ``file``."""

    def __init__(self, file: Path | str, reason: str):
        self.file = str(file)
        super().__init__(reason)


def load_label(path: Path, root: RawRoot, pair: Optional[Path] = None):
    """The pixels of the label file ``path`` (H x W or H x W x C); :class:`LabelError` when it resolves
    outside the raw folder (the images' rule), is no image, is lossy (JPEG, WebP), declares more
    pixels than Pillow's decompression-bomb limit, is cut short or corrupt, or is not of the size of
    ``pair`` (its before image; not compared where that image cannot be read: the build reports it)."""
    why = root.outside(path)
    if why is not None:
        raise LabelError(path, f"label {why}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelError(path, f"label: cannot read it ({exc.strerror})") from None
    fmt = sniff_image_format(data)
    if fmt is None:
        raise LabelError(path, "label: not an image (unknown magic bytes); labels are PNG files")
    if fmt in LOSSY:
        raise LabelError(path, f"label: a {fmt}, whose lossy compression changes a mask's values; save labels as PNG")
    try:
        size = inspect_image_bytes(data)[1]  # the header only, before any pixel is decoded
    except BadImageError as exc:
        raise LabelError(path, f"label: {exc}") from None
    expected = image_file_size(pair) if pair is not None else None
    if expected is not None and tuple(size) != tuple(expected):
        raise LabelError(path, f"label is {size[0]} x {size[1]} pixels, its before image is {expected[0]} x {expected[1]}: "
                               "a label must match its pair")
    try:
        return read_label(data)
    except Exception as exc:  # Pillow raises many types for broken files
        raise LabelError(path, f"label: unreadable {fmt} ({exc})") from None


def png_cell(array) -> dict[str, Any]:
    """An image cell holding ``array`` (uint8, H x W) as a lossless PNG."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return {"bytes": buf.getvalue(), "path": None}


def mask_columns(changed) -> dict[str, Any]:
    """``change_mask`` (255 = changed), one ``[x0, y0, x1, y1]`` box per 8-connected region and
    ``mask_source: annotation`` of a boolean H x W array."""
    import numpy as np
    from scipy import ndimage

    regions, _ = ndimage.label(changed, structure=np.ones((3, 3)))
    boxes = [[float(s[1].start), float(s[0].start), float(s[1].stop - 1), float(s[0].stop - 1)]
             for s in ndimage.find_objects(regions)]
    return {"change_mask": png_cell(changed.astype(np.uint8) * 255), "change_boxes": boxes, "mask_source": "annotation"}


def read_label(data: bytes):
    """A label image's pixels as a numpy array (H x W or H x W x C)."""
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)))


def first_channel(array):
    """A label's values: channel 0 of a colour label (as LEVIR-CD and LEVIR-MCI write theirs), the
    one channel of a grey one."""
    return array[..., 0] if array.ndim == 3 else array

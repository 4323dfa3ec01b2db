"""The pictures of one pair as the viewer and the paper figures show them.

``difference`` is ``|after - before|`` (after resized to the before image when their sizes
differ), stretched so that its 99th percentile is white, with the pair's ``change_mask``
outlined in :data:`MASK_COLOUR` and its ``change_boxes`` in :data:`BOX_COLOUR`; both colours
are pure hues that a difference image (grey) never contains, so the outline can be found in a
screenshot. Files are written atomically: a killed run leaves no half-written picture that a
resumed one would keep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..files import open_atomic

MASK_COLOUR = (255, 0, 255)
BOX_COLOUR = (0, 229, 255)


def thumbnail(image, size: int):
    """RGB, the longest side at most ``size`` pixels (never enlarged)."""
    image = image.convert("RGB")
    scale = min(1.0, size / max(image.size))
    if scale < 1.0:
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    return image


def mask_outline(mask, size: tuple[int, int]):
    """A boolean array (height, width) of the mask's boundary at ``size``: the pixels that a
    3x3 dilation of the mask adds or a 3x3 erosion removes (a band about 2 px wide)."""
    import numpy as np
    from PIL import Image, ImageFilter

    m = mask.convert("L").resize(size, Image.NEAREST).point(lambda v: 255 if v > 127 else 0)
    grown = np.asarray(m.filter(ImageFilter.MaxFilter(3))) > 127
    shrunk = np.asarray(m.filter(ImageFilter.MinFilter(3))) > 127
    return grown & ~shrunk


def difference(before, after, size: int, mask=None, boxes: Optional[Sequence[Sequence[float]]] = None):
    """The difference picture (see the module docstring) at most ``size`` px on its longest side."""
    import numpy as np
    from PIL import Image, ImageDraw

    b = before.convert("RGB")
    a = after.convert("RGB")
    if a.size != b.size:
        a = a.resize(b.size)
    diff = np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max(axis=2).astype(np.float32)
    top = float(np.percentile(diff, 99)) or 1.0
    grey = np.clip(diff * (255.0 / top), 0, 255).astype(np.uint8)
    picture = thumbnail(Image.fromarray(grey).convert("RGB"), size)
    pixels = np.asarray(picture).copy()
    if mask is not None:
        pixels[mask_outline(mask, picture.size)] = MASK_COLOUR
    picture = Image.fromarray(pixels)
    if boxes:
        draw = ImageDraw.Draw(picture)
        sx, sy = picture.width / after.width, picture.height / after.height
        for x0, y0, x1, y1 in boxes:
            draw.rectangle([x0 * sx, y0 * sy, x1 * sx, y1 * sy], outline=BOX_COLOUR, width=1)
    return picture


def save_atomic(image, path: Path, fmt: str) -> None:
    """``image`` to ``path`` through a temporary name in the same folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_atomic(path, "wb") as fh:
        image.save(fh, fmt, **({"quality": 90} if fmt == "JPEG" else {}))

"""Ground-truth change labels of change-detection releases as the toolkit's mask columns.

A release's label becomes what ``idc-precompute masks`` writes (``change_mask``, ``change_boxes``,
``mask_source: annotation``; :data:`~idc_toolkit.schema.MASK_FEATURES`), so computed masks compare
against it and DAVIR trains on it, plus per-pixel class maps stored as PNGs of class indices.
"""

from __future__ import annotations

import io
from typing import Any


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

"""``idc-precompute masks``: the change-mask columns of a built dataset.

Adds ``change_mask`` (a PNG, 255 = changed, at the after image's size), ``change_boxes``
(``[x0, y0, x1, y1]`` per cluster, after-image pixels) and ``mask_source`` (``sam`` or
``diff``). See :mod:`idc_toolkit.changemask` for the pipeline and its distractor handling.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional

import numpy as np
from PIL import Image

from .changemask import MaskParams, compute_change_mask
from .precompute import PassResult, pass_section, run_pass
from .schema import MASK_FEATURES


def _image(cell: dict[str, Any]) -> Image.Image:
    return Image.open(io.BytesIO(cell["bytes"]))


def _png(mask: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(mask.astype(np.uint8) * 255, "L").save(buf, "PNG", optimize=False)
    return buf.getvalue()


class MaskRow:
    """Row function of the pass (picklable when no SAM model is attached)."""

    def __init__(self, params: MaskParams, refiner: Optional[Any] = None):
        self.params, self.refiner = params, refiner

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        cm = compute_change_mask(_image(row["before"]), _image(row["after"]), self.params, self.refiner)
        return {
            "change_mask": {"bytes": _png(cm.mask), "path": None},
            "change_boxes": [[float(v) for v in box] for box in cm.boxes],
            "mask_source": cm.source,
        }


def add_change_masks(
    dataset: Path | str,
    out: Path | str,
    params: MaskParams = MaskParams(),
    sam_checkpoint: Optional[str] = None,
    sam_type: str = "vit_h",
    device: str = "auto",
    num_proc: int = 1,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
) -> PassResult:
    refiner = None
    if sam_checkpoint:
        from .sam_refine import SamRefiner, load_sam

        refiner = SamRefiner(load_sam(sam_checkpoint, sam_type, device))
        num_proc = 1  # the model stays in this process (one device)
        how = (f"Segment Anything (`{sam_type}`, checkpoint `{Path(sam_checkpoint).name}`) prompted with each cluster's box "
               f"and centre point on the after and the before image; the best of the 6 masks is kept when its IoU with the "
               f"cluster's region is at least tau, otherwise the cluster's diff region is kept.")
    else:
        how = ("No Segment Anything checkpoint was given: every mask is the union of the diff clusters' regions "
               "(`mask_source = diff`).")
    section = pass_section(
        "Change masks (idc-precompute masks)",
        [
            "Columns `change_mask` (PNG, 255 = changed, at the after image's size), `change_boxes` "
            "(`[x0, y0, x1, y1]` per change cluster, after-image pixels) and `mask_source` (`sam` or `diff`).",
            "",
            "Pipeline: both images at the working resolution; the before image relit to the after image's "
            "illumination (per-channel gain and offset fitted on unsaturated pixels, then clipped as a camera does), "
            "so a global brightness change cancels; the integer camera shift up to `max_shift` pixels that best "
            "aligns the images is compensated and only their overlap compared; pixels whose difference exceeds "
            "`delta` levels are clustered with DBSCAN (`eps`, `min_samples`); clusters under `min_region` pixels "
            "are dropped; each cluster's region is its pixels closed and hole-filled.",
            "",
            how,
        ],
        {**params.to_dict(), "sam_checkpoint": Path(sam_checkpoint).name if sam_checkpoint else None,
         "sam_type": sam_type if sam_checkpoint else None},
    )
    return run_pass(dataset, out, MASK_FEATURES, MaskRow(params, refiner), section, shard=shard, num_proc=num_proc,
                    progress=progress)

"""``idc-precompute masks``: the change-mask columns of a built dataset.

Adds ``change_mask`` (a PNG, 255 = changed, at the after image's size), ``change_boxes``
(``[x0, y0, x1, y1]`` per cluster, after-image pixels) and ``mask_source`` (``sam`` or
``diff``). See :mod:`idc_toolkit.masks.diff` for the pipeline and its distractor handling.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional

import numpy as np
from PIL import Image

from ..cards import pass_section
from ..options import taken, with_fields
from ..runs import ColumnPass, PassResult, path_content, run_column_pass
from ..runs.columns import inputs, run_args
from ..runs.fingerprint import recorded
from ..runs.rows import decode_image
from ..schema import MASK_FEATURES
from .diff import compute_change_mask
from .params import PIPELINE_REVISION, MaskParams, MasksArgs, file_name


def _png(mask: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(mask.astype(np.uint8) * 255, "L").save(buf, "PNG", optimize=False)
    return buf.getvalue()


class MaskColumns:
    """The pass's per-batch function; Segment Anything is loaded in :meth:`setup`, once per
    process or Ray actor (so the object itself stays small and picklable)."""

    def __init__(self, params: MaskParams, sam_checkpoint: Optional[str] = None, sam_type: str = "vit_h"):
        self.params, self.sam_checkpoint, self.sam_type = params, sam_checkpoint, sam_type
        self.refiner = None

    def setup(self, device: str) -> None:
        if self.sam_checkpoint and self.refiner is None:
            from .sam import SamRefiner, load_sam

            self.refiner = SamRefiner(load_sam(self.sam_checkpoint, self.sam_type, device))

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for row in rows:
            cm = compute_change_mask(decode_image(row["before"]), decode_image(row["after"]), self.params, self.refiner)
            out.append({
                "change_mask": {"bytes": _png(cm.mask), "path": None},
                "change_boxes": [[float(v) for v in box] for box in cm.boxes],
                "mask_source": cm.source,
            })
        return out


def add_change_masks(dataset: Optional[Path | str] = None, out: Optional[Path | str] = None,
                     params: Optional[MaskParams] = None, args: Optional[MasksArgs] = None, **fields: Any) -> PassResult:
    """Add ``change_mask``, ``change_boxes`` and ``mask_source`` to every split of ``dataset``.
    ``params``: the diff pipeline's :class:`~.params.MaskParams`; ``args``: the run's
    :class:`~.params.MasksArgs` (``dataset`` and ``out`` are its fields too). ``fields`` set
    either's fields by name (``delta=``, ``sam_checkpoint=``, ``rows_per_part=``, ``shard=``, ...;
    ``engine=`` also takes an :class:`~idc_toolkit.runs.EngineArgs`)."""
    from ..devices import resolve_device

    params = with_fields(MaskParams, params, **taken(fields, MaskParams))
    a = run_args(MasksArgs, args, **fields, **inputs(dataset, out))
    sam_checkpoint, sam_type = a.sam_checkpoint, a.sam_type
    if sam_checkpoint:
        from .sam import check_sam_arguments

        check_sam_arguments(sam_checkpoint, sam_type)  # before any row is read
        how = (f"Segment Anything (`{sam_type}`, checkpoint `{Path(sam_checkpoint).name}`) prompted with each cluster's box "
               f"and centre point on the after and the before image; the best of the 6 masks is kept when its IoU with the "
               f"cluster's region is at least tau; "
               + ("a cluster whose masks all miss tau keeps its diff region (`keep_unmatched`, our option)."
                  if params.keep_unmatched else "a cluster whose masks all miss tau is dropped (DAVIR §3.1)."))
    else:
        how = ("No Segment Anything checkpoint was given: every mask is the union of the diff clusters' regions "
               "(`mask_source = diff`).")
    # the card's parameters; the run's fingerprint adds recorded(a) beneath them
    run_params = {**recorded(params), "pipeline_revision": PIPELINE_REVISION, "sam_type": sam_type if sam_checkpoint else None,
                  "sam_checkpoint": file_name(sam_checkpoint), "sam_checkpoint_sha256": path_content(sam_checkpoint)}
    section = pass_section(
        "Change masks (idc-precompute masks)",
        [
            "Columns `change_mask` (PNG, 255 = changed, at the after image's size), `change_boxes` "
            "(`[x0, y0, x1, y1]` per change cluster, after-image pixels) and `mask_source` (`sam` or `diff`).",
            "",
            "Pipeline (diff half): both images at the working resolution (`resize`); the camera shift found "
            "on grey ranks (integer up to `max_shift` pixels, and its sub-pixel remainder) and only the overlap "
            "compared; the before image mapped through a per-channel tone curve (gain, offset, gamma, clipping) "
            "fitted by least trimmed squares on the pixels that did not change; the envelope distance (how far "
            "each image lies outside the other's 3x3 range, in luma and 3x3-smoothed chroma, a chroma plane counted "
            "where its unsmoothed envelope agrees) thresholded at max(`delta`, `noise_k` x the pair's median "
            "distance). On a clean pair (sub-pixel remainder under `clean_subpixel`, noise under `clean_noise`) the "
            "plain RGB difference also seeds; on any other pair the changed pixels grow `grow` steps into edge pixels "
            "whose envelope distance is above 0 and whose plain difference passes the threshold or `texture_grow_k` x "
            "the median of the pair's pixels of like texture. DBSCAN (`eps`, `min_samples`, computed exactly on the "
            "pixel grid; on a clean pair `clean_min_samples`, clusters under `clean_min_region` pixels dropped; on any "
            "other pair those under `prune_pixels` whose median plain difference is under `prune_k` x that of pixels "
            "of like texture dropped); with `fill_holes` each region closed 3x3 and hole-filled, without it not "
            "filled, and closed only where the pair is not clean (`pipeline_revision` names this pipeline's version).",
            "",
            "DAVIR §3.1 gives the steps (difference, DBSCAN, SAM with tau) but no values: every value here is "
            "idc-toolkit's choice, and the alignment, tone curve, envelope distance, growth and pruning are our "
            "additions (benchmarks/mask_quality.py, on 717 pairs made from 13 real photographs none of the values was "
            "chosen on, at four image sizes, with thin and tiny objects: mean IoU 0.87, 0.92 without "
            "`fill_holes`, against 0.25 for the recipe without them).",
            "",
            how,
        ],
        run_params,
    )
    device = a.device
    if a.engine == "local":  # under Ray, ray_placement turns the device asked for into the actors' placement
        # diff-only masks run on the CPU whatever the device: no torch to import
        device = resolve_device(device) if sam_checkpoint else "cpu"
    spec = ColumnPass("masks", MaskColumns(params, sam_checkpoint, sam_type), MASK_FEATURES, run_params, section)
    return run_column_pass(a.dataset, a.out, spec, a, device=device)

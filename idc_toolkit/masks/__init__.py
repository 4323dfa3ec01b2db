"""Change masks: where two images differ.

* :mod:`.align` — camera shift (integer and sub-pixel) and per-channel tone curves, fitted robustly;
* :mod:`.params` — the pipeline's parameters (defaults, checks, help) and the pass's run options;
* :mod:`.distances` — per-pixel distances, the adaptive threshold, texture;
* :mod:`.clustering` — exact grid DBSCAN, pruning, cluster regions;
* :mod:`.diff` — the pipeline: a pair's regime, its changed pixels, clusters, the change mask;
* :mod:`.sam` — Segment Anything refinement of the clusters at full resolution (DAVIR §3.1);
* :mod:`.column` — ``idc-precompute masks``: the mask columns of a dataset, on the run engine;
* :mod:`.fac` — DAVIR's soft patch mask (eq. 6) and attention loss, for training.
"""

from .column import MaskColumns, add_change_masks
from .diff import ChangeMask, compute_change_mask
from .params import MaskParams, MasksArgs

__all__ = ["MaskColumns", "add_change_masks", "ChangeMask", "MaskParams", "MasksArgs", "compute_change_mask"]

"""Change masks from pixel differences (DAVIR §3.1): the diff-only half of the mask pipeline.

    align (illumination, small camera shift) -> |before - after| -> threshold delta
    -> DBSCAN over changed pixels -> per cluster: filled region, box, centre point

The regions are the change mask when no Segment Anything checkpoint is given
(``mask_source = "diff"``); with one, :mod:`idc_toolkit.masks.sam` turns every cluster's box
and centre point into SAM prompts.

Distractors. The field's classic distractors are a global illumination change and a small
camera shift (CLEVR-Change's nsc pairs, real surveillance frames). The before image is relit
to the after image's illumination (:func:`relight`: a per-channel gain and offset fitted on
pixels unsaturated in both images, outliers left out, then clipped as a camera clips), so a
global brightness change cancels; the integer shift within ``max_shift`` pixels that best
aligns the two images is searched on a 2x downsampled grey image (:func:`best_shift`), and
only the overlap of the aligned images is compared.

DBSCAN. Running scikit-learn's DBSCAN over every changed pixel is slow (a radius query per
pixel). :func:`grid_dbscan` computes the same clustering on the pixel grid: neighbour counts
are one correlation with the eps-disc, core pixels are joined through the disc's offsets
(connected components), and a border pixel takes the lowest-numbered neighbouring cluster,
which is the cluster scikit-learn's expansion order reaches first. Labels equal
``sklearn.cluster.DBSCAN(eps, min_samples).fit(np.argwhere(mask)).labels_`` (tests check it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class MaskParams:
    """Parameters of the diff pipeline; all are recorded in the dataset card."""

    resize: int = 224  #: longest side of the working resolution (pixels)
    delta: float = 32.0  #: threshold on the absolute difference (0-255 levels, after relighting)
    eps: float = 2.0  #: DBSCAN neighbourhood radius (working-resolution pixels)
    min_samples: int = 6  #: DBSCAN core-point count, the point itself included
    max_shift: int = 4  #: largest camera shift searched (working-resolution pixels)
    tau: float = 0.5  #: IoU a SAM mask needs with its cluster's region to be kept
    #: with SAM: keep a cluster's diff region when no SAM mask reaches tau (our option); the
    #: paper (DAVIR §3.1) drops such clusters as background noise, the default
    keep_unmatched: bool = False
    min_region: int = 12  #: clusters with fewer pixels are dropped as noise

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Cluster:
    region: np.ndarray  #: bool, working resolution: the cluster's pixels, closed and hole-filled
    box: tuple[int, int, int, int]  #: x0, y0, x1, y1 (inclusive), working resolution
    point: tuple[int, int]  #: x, y: the cluster pixel nearest to its centroid


@dataclass
class ChangeMask:
    mask: np.ndarray  #: bool, at the after image's size
    boxes: list[list[float]]  #: [x0, y0, x1, y1] per kept cluster, after-image pixels
    source: str  #: "sam" when a SAM mask was kept for at least one cluster, else "diff"
    shift: tuple[int, int] = (0, 0)


def disc_offsets(eps: float) -> list[tuple[int, int]]:
    r = int(np.floor(eps))
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= eps * eps]


def overlap(h: int, w: int, dy: int, dx: int) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
    """Slices ``(src, dst)`` with ``dst_image[dst] <-> src_image[src]`` for a shift (dy, dx):
    pixel (y, x) of the source lands on (y + dy, x + dx); only the overlap is addressed."""
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    return (ys, xs), (yd, xd)


def _shifted(arr: np.ndarray, dy: int, dx: int, fill) -> np.ndarray:
    """``out[y, x] = arr[y + dy, x + dx]`` with ``fill`` outside the array."""
    out = np.full_like(arr, fill)
    src, dst = overlap(*arr.shape, -dy, -dx)
    out[dst] = arr[src]
    return out


def grid_dbscan(mask: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN of the True pixels of ``mask`` (Euclidean, on pixel coordinates), on the grid.

    Returns an int32 label image: -1 for background and noise, clusters numbered 0.. in the
    order scikit-learn numbers them (by their first core pixel in raster order).
    """
    from scipy.ndimage import correlate
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    h, w = mask.shape
    offsets = disc_offsets(eps)
    r = int(np.floor(eps))
    kernel = np.zeros((2 * r + 1, 2 * r + 1), dtype=np.int32)
    for dy, dx in offsets:
        kernel[dy + r, dx + r] = 1
    counts = correlate(mask.astype(np.int32), kernel, mode="constant", cval=0)
    core = mask & (counts >= min_samples)
    labels = np.full((h, w), -1, dtype=np.int32)
    n_core = int(core.sum())
    if n_core == 0:
        return labels
    index = np.full((h, w), -1, dtype=np.int64)
    index[core] = np.arange(n_core)
    src, dst = [], []
    for dy, dx in offsets:
        if (dy, dx) <= (0, 0):
            continue  # each undirected edge once
        neighbour = _shifted(index, dy, dx, -1)
        both = (index >= 0) & (neighbour >= 0)
        src.append(index[both])
        dst.append(neighbour[both])
    s = np.concatenate(src) if src else np.zeros(0, dtype=np.int64)
    d = np.concatenate(dst) if dst else np.zeros(0, dtype=np.int64)
    graph = coo_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n_core, n_core))
    _, comp = connected_components(graph, directed=False)
    # number clusters by their first core pixel in raster order, as scikit-learn does
    _, first = np.unique(comp, return_index=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    labels[core] = rank[comp].astype(np.int32)
    big = np.iinfo(np.int32).max
    core_labels = np.where(core, labels, big).astype(np.int32)
    best = np.full((h, w), big, dtype=np.int32)
    for dy, dx in offsets:
        np.minimum(best, _shifted(core_labels, dy, dx, big), out=best)
    border = mask & ~core & (best < big)
    labels[border] = best[border]
    return labels


def _grey_standardised(arr: np.ndarray) -> np.ndarray:
    """Grey image at half resolution, zero mean and unit variance (for the shift search: a
    global brightness gain or offset cancels)."""
    g = arr.mean(axis=2)[::2, ::2]
    return (g - g.mean()) / max(float(g.std()), 1e-3)


def working_pair(before: Image.Image, after: Image.Image, resize: int) -> tuple[np.ndarray, np.ndarray]:
    """Both images as float32 RGB arrays at the after image's aspect, longest side ``resize``."""
    w, h = after.size
    scale = min(1.0, resize / max(w, h))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    a = np.asarray(after.convert("RGB").resize(size, Image.BILINEAR), dtype=np.float32)
    b = np.asarray(before.convert("RGB").resize(size, Image.BILINEAR), dtype=np.float32)
    return b, a


def best_shift(b: np.ndarray, a: np.ndarray, max_shift: int) -> tuple[int, int]:
    """Integer (dy, dx) so that ``after[y, x] ~ before[y - dy, x - dx]``, searched at half size
    and refined at full size."""
    if max_shift <= 0:
        return 0, 0
    gb, ga = _grey_standardised(b), _grey_standardised(a)
    s = max(1, max_shift // 2)
    h, w = gb.shape
    best, best_cost = (0, 0), np.inf
    for dy in range(-s, s + 1):
        for dx in range(-s, s + 1):
            src, dst = overlap(h, w, dy, dx)
            cost = float(np.mean(np.abs(ga[dst] - gb[src])))
            if cost < best_cost - 1e-6 or (abs(cost - best_cost) <= 1e-6 and abs(dy) + abs(dx) < abs(best[0]) + abs(best[1])):
                best, best_cost = (2 * dy, 2 * dx), cost
    # refine at full resolution around the coarse estimate, (0, 0) included: the coarse grid
    # only holds even shifts, so a 1-pixel shift is found here or nowhere
    h, w = a.shape[:2]
    gb, ga = b.mean(axis=2), a.mean(axis=2)
    gb = (gb - gb.mean()) / max(float(gb.std()), 1e-3)
    ga = (ga - ga.mean()) / max(float(ga.std()), 1e-3)
    cy, cx = best
    best_cost = np.inf
    for dy in range(cy - 1, cy + 2):
        for dx in range(cx - 1, cx + 2):
            if abs(dy) > max_shift or abs(dx) > max_shift:
                continue
            src, dst = overlap(h, w, dy, dx)
            cost = float(np.mean(np.abs(ga[dst] - gb[src])))
            if cost < best_cost:
                best, best_cost = (dy, dx), cost
    return best


def relight(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``before`` under ``after``'s illumination: per channel ``clip(g * before + o, 0, 255)``.

    A global illumination change is a gain and offset per channel followed by the camera's
    clipping at 0 and 255, which is why the fit uses only pixels unsaturated in both images and
    the prediction is clipped again. The fit is a least-squares line (on every third pixel)
    refined twice with the pixels whose residual exceeds three robust deviations left out,
    so the changed region does not bend it."""
    out = np.empty_like(before)
    for c in range(before.shape[-1]):
        x, y = before[..., c].ravel()[::3], after[..., c].ravel()[::3]
        keep = (x > 3) & (x < 252) & (y > 3) & (y < 252)
        g, o = 1.0, 0.0
        for _ in range(3):
            xs, ys = x[keep], y[keep]
            if xs.size < 16 or float(xs.var()) < 1e-3:
                g, o = 1.0, float(np.median(y - x)) if x.size else 0.0
                break
            mx, my = float(xs.mean()), float(ys.mean())
            g = float(((xs - mx) * (ys - my)).mean() / (xs - mx).var())
            o = my - g * mx
            resid = np.abs(y - (g * x + o))
            keep &= resid <= 3 * 1.4826 * (float(np.median(resid[keep])) + 1.0)
        out[..., c] = np.clip(g * before[..., c] + o, 0, 255)
    return out


def changed_pixels(b: np.ndarray, a: np.ndarray, params: MaskParams) -> tuple[np.ndarray, tuple[int, int]]:
    """Boolean map of changed pixels (working resolution) and the camera shift compensated."""
    dy, dx = best_shift(b, a, params.max_shift)
    h, w = a.shape[:2]
    src, dst = overlap(h, w, dy, dx)
    after_overlap = a[dst]
    before_overlap = relight(b[src], after_overlap)
    changed = np.zeros((h, w), dtype=bool)
    changed[dst] = np.abs(after_overlap - before_overlap).max(axis=2) > params.delta
    return changed, (dy, dx)


def clusters_from_labels(labels: np.ndarray, params: MaskParams) -> list[Cluster]:
    """Region, box and centre point of every cluster with at least ``min_region`` pixels.

    The region is the cluster's pixels closed with a (2*ceil(eps)+1) square and hole-filled
    (a thresholded difference is often only the outline of a changed object); the work is
    done on each cluster's bounding box only."""
    from scipy.ndimage import binary_closing, binary_fill_holes, find_objects

    if labels.max() < 0:
        return []
    h, w = labels.shape
    sizes = np.bincount(labels[labels >= 0].ravel())
    boxes = find_objects(labels + 1)
    r = max(1, int(np.ceil(params.eps)))
    structure = np.ones((2 * r + 1, 2 * r + 1), dtype=bool)
    out = []
    for k, n in enumerate(sizes):
        if n < params.min_region or boxes[k] is None:
            continue
        ys_, xs_ = boxes[k]
        y0, y1 = max(0, ys_.start - r - 1), min(h, ys_.stop + r + 1)
        x0, x1 = max(0, xs_.start - r - 1), min(w, xs_.stop + r + 1)
        pixels = labels[y0:y1, x0:x1] == k
        padded = np.pad(pixels, r + 1)
        filled = binary_fill_holes(binary_closing(padded, structure=structure))[r + 1 : -r - 1, r + 1 : -r - 1] | pixels
        region = np.zeros((h, w), dtype=bool)
        region[y0:y1, x0:x1] = filled
        ys, xs = np.nonzero(pixels)
        cy, cx = ys.mean(), xs.mean()
        j = int(np.argmin((ys - cy) ** 2 + (xs - cx) ** 2))
        out.append(Cluster(region=region, box=(int(xs.min()) + x0, int(ys.min()) + y0, int(xs.max()) + x0, int(ys.max()) + y0),
                           point=(int(xs[j]) + x0, int(ys[j]) + y0)))
    return out


def diff_clusters(before: Image.Image, after: Image.Image, params: MaskParams) -> tuple[list[Cluster], tuple[int, int], tuple[int, int]]:
    """Clusters of changed pixels; also the camera shift and the working size (w, h)."""
    b, a = working_pair(before, after, params.resize)
    changed, shift = changed_pixels(b, a, params)
    labels = grid_dbscan(changed, params.eps, params.min_samples)
    return clusters_from_labels(labels, params), shift, (a.shape[1], a.shape[0])


def compute_change_mask(
    before: Image.Image, after: Image.Image, params: MaskParams = MaskParams(), refiner: Optional[object] = None
) -> ChangeMask:
    """The change mask of a pair at the after image's size; ``refiner`` is a SAM refiner."""
    clusters, shift, (w, h) = diff_clusters(before, after, params)
    source = "diff"
    regions = [c.region for c in clusters]
    if refiner is not None and clusters:
        refined = refiner.refine(before, after, clusters, (w, h), params.tau)  # type: ignore[attr-defined]
        if any(r is not None for r in refined):
            source = "sam"  # at least one cluster took its SAM mask
        if params.keep_unmatched:
            regions = [r if r is not None else c.region for r, c in zip(refined, clusters)]
        else:  # DAVIR: only clusters confirmed by a SAM mask survive
            clusters = [c for r, c in zip(refined, clusters) if r is not None]
            regions = [r for r in refined if r is not None]
    union = np.zeros((h, w), dtype=bool)
    for region in regions:
        union |= region
    out_w, out_h = after.size
    full = np.asarray(Image.fromarray(union.astype(np.uint8) * 255).resize((out_w, out_h), Image.NEAREST)) > 127
    sx, sy = out_w / w, out_h / h
    boxes = [[c.box[0] * sx, c.box[1] * sy, (c.box[2] + 1) * sx - 1, (c.box[3] + 1) * sy - 1] for c in clusters]
    return ChangeMask(mask=full, boxes=boxes, source=source, shift=shift)

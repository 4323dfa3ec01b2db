"""Grouping changed pixels: the exact grid DBSCAN (labels equal scikit-learn's), pruning of
clusters no clearer than their texture, and each cluster's region, box and centre."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .distances import grouped_medians
from .params import MaskParams


@dataclass
class Cluster:
    #: bool, working resolution: the cluster's pixels, closed 3x3 (not per pixel on a clean pair)
    #: and, with ``fill_holes``, hole-filled
    region: np.ndarray
    box: tuple[int, int, int, int]  #: x0, y0, x1, y1 (inclusive), working resolution
    point: tuple[int, int]  #: x, y: the cluster pixel nearest to its centroid


def disc_offsets(eps: float) -> list[tuple[int, int]]:
    r = int(np.floor(eps))
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= eps * eps]


def grid_dbscan(mask: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN of the True pixels of ``mask`` (Euclidean, on pixel coordinates), on the grid.

    Returns an int32 label image: -1 for background and noise, clusters numbered 0.. in the
    order scikit-learn numbers them (by their first core pixel in raster order).

    Every step reads the changed pixels' neighbours through the eps-disc's offsets in a padded
    image, so its cost follows the changed pixels, not the image (whole-image shifted copies
    and a correlation cost more than twice as much on the benchmark's masks).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    h, w = mask.shape
    offsets = disc_offsets(eps)
    r = int(np.floor(eps))
    labels = np.full((h, w), -1, dtype=np.int32)
    ys, xs = np.nonzero(mask)
    if len(ys) == 0:
        return labels
    py, px = ys + r, xs + r  # in the padded images
    padded = np.zeros((h + 2 * r, w + 2 * r), dtype=np.uint8)
    padded[py, px] = 1
    counts = np.zeros(len(ys), dtype=np.int32)
    for dy, dx in offsets:
        counts += padded[py + dy, px + dx]
    core = counts >= min_samples
    n_core = int(core.sum())
    if n_core == 0:
        return labels
    cy, cx = py[core], px[core]
    index = np.full(padded.shape, -1, dtype=np.int64)
    index[cy, cx] = np.arange(n_core)
    src, dst = [], []
    for dy, dx in offsets:
        if (dy, dx) <= (0, 0):
            continue  # each undirected edge once
        neighbour = index[cy + dy, cx + dx]
        found = neighbour >= 0
        src.append(np.flatnonzero(found))
        dst.append(neighbour[found])
    empty = np.zeros(0, dtype=np.int64)  # eps under one pixel: no offsets but (0, 0), no edges
    s, d = (np.concatenate(v) if v else empty for v in (src, dst))
    graph = coo_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n_core, n_core))
    _, comp = connected_components(graph, directed=False)
    # number clusters by their first core pixel in raster order, as scikit-learn does
    _, first = np.unique(comp, return_index=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    core_labels = rank[comp].astype(np.int32)
    labels[ys[core], xs[core]] = core_labels
    # a border pixel takes the lowest-numbered cluster among its core neighbours
    big = np.iinfo(np.int32).max
    label_image = np.full(padded.shape, big, dtype=np.int32)
    label_image[cy, cx] = core_labels
    by, bx = py[~core], px[~core]
    best = np.full(len(by), big, dtype=np.int32)
    for dy, dx in offsets:
        np.minimum(best, label_image[by + dy, bx + dx], out=best)
    reached = best < big
    labels[by[reached] - r, bx[reached] - r] = best[reached]
    return labels


def prune_clusters(labels: np.ndarray, excess: np.ndarray, params: MaskParams) -> np.ndarray:
    """``labels`` (from :func:`grid_dbscan`) without the clusters of under ``prune_pixels``
    pixels whose median ``excess`` is under ``prune_k``
    (:class:`MaskParams`): a distractor's residue on a textured region (stars, grass, a lattice
    tower under a sub-pixel shift, JPEG and noise) stands no clearer than the unchanged pixels of
    its texture, where a change does. Returns a new label image, the dropped clusters -1."""
    inside = labels >= 0
    if not inside.any():
        return labels
    found = labels[inside]
    n = int(found.max()) + 1
    sizes = np.bincount(found, minlength=n)
    medians = grouped_medians(found, excess[inside], n)
    dropped = (sizes > 0) & (sizes < params.prune_pixels) & (medians < params.prune_k)
    if not dropped.any():
        return labels
    out = labels.copy()
    out[inside & dropped[np.maximum(labels, 0)]] = -1
    return out


def clusters_from_labels(labels: np.ndarray, params: MaskParams, clean: bool = False) -> list[Cluster]:
    """Region, box and centre point of every cluster (on a ``clean`` pair, of every cluster with
    at least ``clean_min_region`` pixels; elsewhere DBSCAN's ``min_samples`` is the floor).

    With ``fill_holes`` the region is the whole object: the cluster's pixels closed with a 3x3
    square (a larger closing bridges the gaps of thin objects, legs or railings, and fills
    them, so it stays 3x3), then hole-filled. Without, a per-pixel mask: on a ``clean`` pair
    the cluster's pixels, on any other their 3x3 closing (see :class:`MaskParams`
    ``fill_holes`` for what each gains and costs). The work is done on each cluster's bounding
    box only."""
    from scipy.ndimage import binary_closing, binary_fill_holes, find_objects

    if labels.max() < 0:
        return []
    h, w = labels.shape
    sizes = np.bincount(labels[labels >= 0].ravel())
    boxes = find_objects(labels + 1)
    r = max(1, int(np.ceil(params.eps)))  # margin around each cluster's box
    structure = np.ones((3, 3), dtype=bool)
    out = []
    for k, n in enumerate(sizes):
        if (clean and n < params.clean_min_region) or boxes[k] is None:
            continue
        ys_, xs_ = boxes[k]
        y0, y1 = max(0, ys_.start - r - 1), min(h, ys_.stop + r + 1)
        x0, x1 = max(0, xs_.start - r - 1), min(w, xs_.stop + r + 1)
        pixels = labels[y0:y1, x0:x1] == k
        if params.fill_holes or not clean:
            closed = binary_closing(np.pad(pixels, r + 1), structure=structure)
            if params.fill_holes:
                closed = binary_fill_holes(closed)
            pixels_or_object = closed[r + 1 : -r - 1, r + 1 : -r - 1] | pixels
        else:
            pixels_or_object = pixels
        region = np.zeros((h, w), dtype=bool)
        region[y0:y1, x0:x1] = pixels_or_object
        ys, xs = np.nonzero(pixels)
        cy, cx = ys.mean(), xs.mean()
        j = int(np.argmin((ys - cy) ** 2 + (xs - cx) ** 2))
        out.append(Cluster(region=region, box=(int(xs.min()) + x0, int(ys.min()) + y0, int(xs.max()) + x0, int(ys.max()) + y0),
                           point=(int(xs[j]) + x0, int(ys[j]) + y0)))
    return out

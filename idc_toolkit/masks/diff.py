"""Change masks from pixel differences (DAVIR §3.1): the diff-only half of the mask pipeline.

    align (camera shift incl. sub-pixel, tone curve per channel; :mod:`.align`)
    -> envelope distance |after - before| -> threshold max(delta, noise_k * noise)
       (on clean pairs, and on still pairs with white noise, the plain difference seeds too)
    -> hysteresis growth into the partly covered edge pixels (further on clean pairs; on
       other pairs also against the plain difference of pixels of like texture)
    -> DBSCAN over changed pixels (looser on clean pairs; on other pairs small clusters that
       stand no clearer than pixels of like texture dropped) -> per cluster: region (the whole
    object: 3x3 closing, holes filled; or per pixel, its changed pixels, closed unless the
    pair is clean), box, centre point

The regions are the change mask when no Segment Anything checkpoint is given
(``mask_source = "diff"``); with one, :mod:`idc_toolkit.masks.sam` turns every cluster's box
and centre point into SAM prompts.

DAVIR's paper gives the steps (pixel difference, DBSCAN, SAM with IoU threshold tau) but none
of their parameters. Every value in :class:`MaskParams` is ours, chosen on
``benchmarks/mask_quality.py`` (pairs made from real photographs with exact ground truth);
the alignment and the envelope distance are our additions, without which camera shifts,
exposure and gamma changes, JPEG and sub-pixel misalignment light up the mask.

Threshold. The difference is the *envelope distance* (:func:`envelope_distance`), not the
plain difference: a pixel counts as changed only when it lies outside the 3x3 range of the
other image, which absorbs the residual sub-pixel misalignment and resampling of real photos.
The threshold adapts to the pair: ``max(delta, noise_k * noise)``, ``noise`` being the median
envelope distance, so a clean pair keeps a low floor (a low-contrast change is found)
and a noisy or recompressed one a higher bar.

DBSCAN. Running scikit-learn's DBSCAN over every changed pixel is slow (a radius query per
pixel). :func:`grid_dbscan` computes the same clustering on the pixel grid: each changed
pixel's neighbours are read through the eps-disc's offsets, core pixels are joined through
them (connected components), and a border pixel takes the lowest-numbered neighbouring cluster,
which is the cluster scikit-learn's expansion order reaches first. Labels equal
``sklearn.cluster.DBSCAN(eps, min_samples).fit(np.argwhere(mask)).labels_`` (tests check it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Callable, Optional

import numpy as np
from PIL import Image

from .. import checks
from .align import Alignment, align


#: the pipeline's revision: bumped whenever the same :class:`MaskParams` give other masks (2:
#: the plain difference in RGB, the clean-pair growth; 3: seeds by plain difference on clean
#: pairs; 4: seeds and growth by plain difference on still pairs with white noise; 5: seeds by
#: the directed envelope on pairs with a sub-pixel remainder; 6: clean pairs cluster with
#: ``clean_min_samples`` / ``clean_min_region``, their per-pixel masks (``fill_holes=False``)
#: are not closed, and the tone fit knows that its model clips; 7: on pairs with a sub-pixel
#: remainder the growth follows the directed envelope, ``subpixel_grow_k``; 8: on pairs that are not
#: clean the growth also follows the plain difference against pixels of like texture,
#: ``texture_grow_k``, and small clusters that stand no clearer than those pixels are dropped,
#: ``prune_k`` / ``prune_pixels``). A masks run records it, so a folder begun by another revision is
#: refused on resume instead of mixing two revisions' masks.
PIPELINE_REVISION = 8


def _param(default, help: str, check):
    """A numeric parameter: its help (the CLI's ``--name-with-dashes``, the docs' table) and range check."""
    return field(default=default, metadata={"help": help, "check": check})


def _switch(default: bool, help: str):
    """A switch: its help names the CLI flag that flips it."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class MaskParams:
    """Parameters of the diff pipeline; all are recorded in the dataset card."""

    #: why this value: benchmarks/mask_quality.md, `resize`
    resize: int = _param(512, 'working resolution (long side, pixels)', checks.positive_int)
    #: floor of the threshold on the envelope distance (0-255 levels, aligned)
    delta: float = _param(10.0, 'floor of the difference threshold (0-255 levels, after alignment)', checks.non_negative_float)
    #: the threshold is max(delta, noise_k * the pair's noise level)
    noise_k: float = _param(10.0, "threshold = max(delta, noise_k x the pair's noise level)", checks.non_negative_float)
    #: DBSCAN neighbourhood radius (working-resolution pixels)
    eps: float = _param(2.0, 'DBSCAN radius (pixels)', checks.positive_float)
    #: DBSCAN core-point count, the point itself included
    min_samples: int = _param(6, 'DBSCAN core-point neighbours', checks.positive_int)
    #: largest camera shift searched (working-resolution pixels)
    max_shift: int = _param(4, 'largest camera shift compensated (pixels)', checks.non_negative_int)
    #: also estimate the sub-pixel remainder of the shift (SAM prompts and clean pairs use it)
    subpixel: bool = _switch(True, '--no-subpixel: do not estimate the sub-pixel part of the camera shift (it maps SAM prompts and tells a clean pair)')
    #: IoU a SAM mask needs with its cluster's region to be kept
    tau: float = _param(0.5, 'SAM mask kept when its IoU with the cluster reaches this', checks.unit_interval)
    #: why this value: benchmarks/mask_quality.md, `keep_unmatched`
    keep_unmatched: bool = _switch(False, "--keep-unmatched: with SAM, keep a cluster's diff region when no SAM mask reaches --tau (default: drop it, as DAVIR)")
    #: clusters with fewer pixels are dropped as noise
    min_region: int = _param(12, 'clusters under this many pixels are dropped', checks.non_negative_int)
    #: why this value: benchmarks/mask_quality.md, `clean_min_samples`
    clean_min_samples: int = _param(3, 'DBSCAN core-point neighbours on a clean pair', checks.positive_int)
    clean_min_region: int = _param(4, '... and its smallest cluster', checks.non_negative_int)
    #: why this value: benchmarks/mask_quality.md, `grow`
    grow: int = _param(2, 'hysteresis steps into the partly covered edge pixels (0: none)', checks.non_negative_int)
    grow_ratio: float = _param(0.6, "a grown pixel's envelope distance must exceed this x the threshold", checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `clean_grow`
    clean_grow: int = _param(4, 'hysteresis steps on a clean pair, by plain difference alone (0: none)', checks.non_negative_int)
    clean_subpixel: float = _param(0.1, 'a pair is clean when its sub-pixel shift is under this (pixels, both axes) ...', checks.non_negative_float)
    clean_noise: float = _param(0.3, "... and its noise level under this (0-255 levels; its plain difference's median also at most delta / noise-k)", checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `white_ratio`
    white_ratio: float = _param(1.3, "a still pair's noise is white when its difference on textured pixels is under this x that on flat ones", checks.non_negative_float)
    white_seed_k: float = _param(5.0, 'on a still pair with white noise the plain difference seeds above this x its median ...', checks.non_negative_float)
    white_grow_k: float = _param(3.0, '... and the growth follows it above this x its median', checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `subpixel_seed_k`
    subpixel_seed_k: float = _param(1.25, 'on a pair with a sub-pixel shift, the directed envelope (2x2 toward the shift) seeds above this x its threshold (0: off)', checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `subpixel_grow_k`
    subpixel_grow_k: float = _param(1.0, '... and the growth also follows it above this x its threshold (0: off)', checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `texture_grow_k`
    texture_grow_k: float = _param(4.0, 'on a pair neither clean nor still with white noise, the growth also follows the plain difference above this x the median of pixels of like texture (0: off)', checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `prune_k`
    prune_k: float = _param(3.0, 'on a pair that is not clean, a small cluster whose median plain difference is under this x that of pixels of like texture is dropped (0: off) ...', checks.non_negative_float)
    prune_pixels: int = _param(200, '... when it has fewer pixels than this', checks.non_negative_int)
    #: why this value: benchmarks/mask_quality.md, `fill_holes`
    fill_holes: bool = _switch(True, '--no-fill-holes: per-pixel change masks, not hole-filled, closed 3x3 only where the pair is not clean (default: whole objects)')

    def __post_init__(self) -> None:
        for name, check in PARAM_CHECKS.items():  # refused where set, in one line naming it
            object.__setattr__(self, name, check(f"--{name.replace('_', '-')}", getattr(self, name)))

    def to_dict(self) -> dict:
        return asdict(self)


#: the range of every numeric :class:`MaskParams` field (``idc-precompute masks`` parses its
#: options with them too): a value outside makes every mask meaningless
#: the range check of each numeric field (the CLI's argument types, the dataclass's own check)
PARAM_CHECKS = {f.name: f.metadata["check"] for f in fields(MaskParams) if "check" in f.metadata}


@dataclass
class Cluster:
    #: bool, working resolution: the cluster's pixels, closed 3x3 (not per pixel on a clean pair)
    #: and, with ``fill_holes``, hole-filled
    region: np.ndarray
    box: tuple[int, int, int, int]  #: x0, y0, x1, y1 (inclusive), working resolution
    point: tuple[int, int]  #: x, y: the cluster pixel nearest to its centroid


@dataclass
class ChangeMask:
    mask: np.ndarray  #: bool, at the after image's size
    boxes: list[list[float]]  #: [x0, y0, x1, y1] per kept cluster, after-image pixels
    source: str  #: "sam" when a SAM mask was kept for at least one cluster, else "diff"
    shift: tuple[int, int] = (0, 0)  #: integer camera shift compensated (dy, dx), working pixels
    subpixel: tuple[float, float] = (0.0, 0.0)  #: its sub-pixel remainder


def disc_offsets(eps: float) -> list[tuple[int, int]]:
    r = int(np.floor(eps))
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= eps * eps]


def grid_dbscan(mask: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN of the True pixels of ``mask`` (Euclidean, on pixel coordinates), on the grid.

    Returns an int32 label image: -1 for background and noise, clusters numbered 0.. in the
    order scikit-learn numbers them (by their first core pixel in raster order).

    Every step reads the changed pixels' neighbours through the eps-disc's offsets in a padded
    image, so its cost follows the changed pixels, not the image (whole-image shifted copies
    and a correlation took 5.4 ms a pair on the benchmark's masks, these 2.1 ms; as fast on a
    mask 60% changed, measured).
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


def working_pair(before: Image.Image, after: Image.Image, resize: int) -> tuple[np.ndarray, np.ndarray]:
    """Both images as uint8 RGB arrays at the after image's aspect, longest side ``resize``."""
    w, h = after.size
    scale = min(1.0, resize / max(w, h))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    a = np.asarray(after.convert("RGB").resize(size, Image.BILINEAR))
    b = np.asarray(before.convert("RGB").resize(size, Image.BILINEAR))
    return b, a


def _pad_edge(x: np.ndarray) -> np.ndarray:
    """``np.pad(x, 1, mode="edge")`` of a 2-D plane, without ``np.pad``'s generic machinery,
    which cost a third of the pipeline's 3x3 filters at 224x224 (measured)."""
    h, w = x.shape
    p = np.empty((h + 2, w + 2), dtype=x.dtype)
    p[1:-1, 1:-1] = x
    p[0, 1:-1], p[-1, 1:-1] = x[0], x[-1]
    p[:, 0], p[:, -1] = p[:, 1], p[:, -2]
    return p


def _range3(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum over each pixel's 3x3 neighbourhood of a 2-D plane (edges
    repeated), as min/max of shifted views: 5x faster than ``scipy.ndimage`` min/max filters
    on 224x224 planes (measured)."""
    p = _pad_edge(x)
    lo_r = np.minimum(np.minimum(p[:, :-2], p[:, 1:-1]), p[:, 2:])
    hi_r = np.maximum(np.maximum(p[:, :-2], p[:, 1:-1]), p[:, 2:])
    return np.minimum(np.minimum(lo_r[:-2], lo_r[1:-1]), lo_r[2:]), np.maximum(np.maximum(hi_r[:-2], hi_r[1:-1]), hi_r[2:])


def _box3(x: np.ndarray) -> np.ndarray:
    p = _pad_edge(x)
    r = p[:, :-2] + p[:, 1:-1] + p[:, 2:]
    return (r[:-2] + r[1:-1] + r[2:]) * np.float32(1 / 9)


@dataclass
class Planes:
    """An image's Y, Cb, Cr planes (JPEG's, in levels), as they are (``raw``) and with both
    chroma planes averaged over 3x3 (``smooth``; luma is the same array in both)."""

    raw: list[np.ndarray]
    smooth: list[np.ndarray]


def luma_chroma(rgb: np.ndarray) -> Planes:
    """Cameras and JPEG store chroma at half resolution, so per-pixel colour at edges is not
    trustworthy: compared in RGB, a JPEG re-save alone masked up to 3% of a photo; with
    smoothed chroma, 0.1% (benchmarks/mask_quality.py). Computed once per image, both forms."""
    r, g, b = (rgb[..., c].astype(np.float32) for c in range(3))
    y = np.float32(0.299) * r + np.float32(0.587) * g + np.float32(0.114) * b
    cb, cr = b - y, r - y
    return Planes(raw=[y, cb * np.float32(0.5643), cr * np.float32(0.7133)],
                  smooth=[y, _box3(cb) * np.float32(0.5643), _box3(cr) * np.float32(0.7133)])


def envelope_distance(a: Planes, b: Planes) -> np.ndarray:
    """Per pixel, how far each image lies outside the 3x3 range of the other, in luma and
    smoothed chroma (max over the three planes and both directions). A difference that a
    shift under one pixel or resampling can explain stays inside the range and scores 0 (on
    the benchmark this beats resampling the before image by the sub-pixel shift, which blurs
    it); a changed object scores its full contrast, and taking both directions keeps the edge
    of an added (after) and of a removed (before) object.

    A chroma plane counts only where its unsmoothed envelope distance agrees (the smaller of
    the two): smoothing keeps JPEG's half-resolution chroma out of the mask, but alone it
    spreads a colour change one pixel beyond the object, which doubled the mask of a pole 2.5
    pixels wide (benchmarks/mask_quality.py)."""
    return _largest_over_planes(a, b, _envelope)


def _largest_over_planes(a: Planes, b: Planes, distance) -> np.ndarray:
    """Per pixel, the largest ``distance(plane_a, plane_b)`` over luma and the two smoothed
    chroma planes, a chroma plane counted where its unsmoothed ``distance`` agrees (the smaller
    of the two): how :func:`envelope_distance` and :func:`plane_distance` treat chroma."""
    out = np.zeros(a.raw[0].shape, dtype=np.float32)
    for plane, (pa, pb) in enumerate(zip(a.smooth, b.smooth)):
        d = distance(pa, pb)
        if plane:
            np.minimum(d, distance(a.raw[plane], b.raw[plane]), out=d)
        np.maximum(out, d, out=out)
    return out


def _outside(pa: np.ndarray, pb: np.ndarray, range_a: tuple, range_b: tuple) -> np.ndarray:
    """How far each image lies outside the other's range (lo, hi), the larger of the two."""
    (lo_a, hi_a), (lo_b, hi_b) = range_a, range_b
    return np.maximum(np.maximum(pa - hi_b, lo_b - pa), np.maximum(pb - hi_a, lo_a - pb))


def _envelope(pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    return _outside(pa, pb, _range3(pa), _range3(pb))


def _range_toward(x: np.ndarray, dy: float, dx: float) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum over each pixel and its neighbours one step against (dy, dx): the
    2x2 block between whose pixels the other image's value lies under a shift by (dy, dx) of
    less than a pixel (edges repeated)."""
    h, w = x.shape
    p = _pad_edge(x)
    ys, xs = 1 - (1 if dy > 0 else -1), 1 - (1 if dx > 0 else -1)
    block = (p[1:h + 1, 1:w + 1], p[ys:ys + h, 1:w + 1], p[1:h + 1, xs:xs + w], p[ys:ys + h, xs:xs + w])
    return np.minimum(np.minimum(block[0], block[1]), np.minimum(block[2], block[3])), \
        np.maximum(np.maximum(block[0], block[1]), np.maximum(block[2], block[3]))


def directed_envelope_distance(a: Planes, b: Planes, subpixel: tuple[float, float]) -> np.ndarray:
    """:func:`envelope_distance` with each image's range taken over the 2x2 block that the
    sub-pixel remainder ``subpixel`` (dy, dx) points to instead of the whole 3x3: the tolerance
    such a shift needs, and no more (the direction was measured: the opposite one lit
    distractor-only pairs up to 28%)."""
    dy, dx = subpixel
    return _largest_over_planes(a, b, lambda pa, pb: _outside(pa, pb, _range_toward(pa, -dy, -dx), _range_toward(pb, dy, dx)))


def threshold(params: MaskParams, distance: np.ndarray) -> tuple[float, float]:
    """``max(delta, noise_k * noise)`` and the pair's noise level, the median envelope
    distance: 0 on clean pairs (the floor ``delta`` decides, so a low-contrast change is
    found), a level or more on noisy or re-compressed ones. A change covering up to half of
    the image leaves the median among unchanged pixels (a 75th percentile did not: a third of
    the image recoloured raised the threshold above the change)."""
    noise = float(np.median(distance[::2, ::2])) if distance.size else 0.0
    return max(params.delta, params.noise_k * noise), noise


def plain_distance(after: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Per pixel, the largest absolute difference over the three RGB channels of the aligned
    images: what a pixel's change is, without the envelope's tolerance for misalignment. RGB,
    not luma and chroma: a change of one channel is its full size here (as in the benchmark's
    ground truth), where luma and scaled chroma shrink it (0.839 -> 0.851 mean IoU)."""
    d = np.abs(after - before)
    return np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2])  # 3x faster than .max(axis=2)


def plane_distance(a: Planes, b: Planes) -> np.ndarray:
    """Per pixel, the largest absolute difference over luma and the two chroma planes, a
    chroma plane smoothed and counted where its unsmoothed difference agrees: the envelope
    distance's planes without its 3x3 tolerance. Where sensor noise is white this is an exact
    per-pixel change measure, and JPEG's half-resolution chroma stays out of it (the RGB plain
    difference lit a saturated red rim under JPEG: 3.5% of a distractor-only pair)."""
    return _largest_over_planes(a, b, lambda pa, pb: np.abs(pa - pb))


def texture(rgb: np.ndarray) -> np.ndarray:
    """Per pixel, the largest 3x3 range over the three channels (levels)."""
    out = None
    for channel in range(3):
        lo, hi = _range3(rgb[..., channel].astype(np.float32))
        out = hi - lo if out is None else np.maximum(out, hi - lo)
    return out


def noise_is_white(plain: np.ndarray, tex: np.ndarray, ratio: float) -> bool:
    """Whether a pair's difference is as large where the before image is flattest (its lowest
    30% of :func:`texture`, ``tex``) as where it is most textured (its top 30%), within
    ``ratio``: sensor noise is; JPEG's blocking and ringing and resampling error gather at edges."""
    tex, plain = tex[::2, ::2], plain[::2, ::2]  # every 4th pixel, as the noise levels
    lo, hi = np.percentile(tex, [30, 70])
    flat = float(np.median(plain[tex <= lo]))
    return float(np.median(plain[tex >= hi])) <= ratio * max(flat, 1e-6)


def grouped_medians(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The median of ``values`` (>= 0) in each group ``0 .. n - 1`` of ``groups`` (NaN for an
    empty group), as ``np.median`` gives it, from one sort of ``group x span + value``: a
    lexsort, ``np.median`` per group or ``scipy.ndimage.median`` took 10-17x as long on the
    sizes used here (measured)."""
    if len(values) == 0:
        return np.full(n, np.nan)
    values = values.astype(np.float64)
    span = float(values.max()) + 1.0
    keys = np.sort(groups * span + values)  # exact: float32 values under 2^20 added to whole multiples
    counts = np.bincount(groups, minlength=n)
    starts = np.cumsum(counts) - counts
    lower = keys[np.clip(starts + (counts - 1) // 2, 0, len(keys) - 1)]
    upper = keys[np.clip(starts + counts // 2, 0, len(keys) - 1)]
    return np.where(counts > 0, (lower + upper) / 2 - np.arange(n) * span, np.nan)


def texture_level(plain: np.ndarray, tex: np.ndarray, bins: int = 16) -> np.ndarray:
    """Per pixel, the median of ``plain`` among the pair's pixels of like texture: ``tex`` (the
    smaller of the two images' :func:`texture`, so that a change's own outline does not count)
    cut at its ``1/bins .. (bins-1)/bins`` quantiles into classes, the quantiles and medians
    taken on every 4th pixel, as the noise levels. JPEG's ringing and a sub-pixel shift's
    resampling error grow with the texture, so a flat region's unchanged pixels differ by a
    level or two where a textured one's differ by tens; one pair-wide level serves neither. A
    change covering under half of a class leaves its median among unchanged pixels; a class
    with no sampled pixel takes the pair's median."""
    ps = plain[::2, ::2].ravel()
    edges = np.unique(np.sort(tex[::2, ::2].ravel())[(np.arange(1, bins) * ps.size) // bins])
    # each pixel's class: how many edges lie at or under its texture, by in-place comparisons
    # (10x faster than np.searchsorted, measured); the sampled pixels' classes are read from it
    classes, above = np.zeros(tex.shape, dtype=np.uint8), np.empty(tex.shape, dtype=bool)
    for edge in edges:
        np.greater_equal(tex, edge, out=above)
        classes += above.view(np.uint8)
    level = grouped_medians(classes[::2, ::2].ravel(), ps, len(edges) + 1)
    empty = np.isnan(level)
    if empty.any():
        level[empty] = np.median(ps)
    return level.astype(np.float32)[classes]


def grow(seeds: np.ndarray, allowed: np.ndarray, steps: int) -> np.ndarray:
    """Hysteresis: ``seeds`` grown, ``steps`` times, into the ``allowed`` 4-neighbours. The
    envelope distance finds a change only where the other image's 3x3 range cannot explain
    it, which misses the partly covered pixels at an object's edge; on an object 2.5 pixels
    wide that is half of it. :func:`changed_pixels` allows pixels whose plain difference
    passes the plain threshold (or, on a pair with a sub-pixel remainder, whose directed
    envelope distance passes ``subpixel_grow_k`` x its threshold, or, on a pair that is not
    clean, whose plain difference passes ``texture_grow_k`` x that of pixels of like texture)
    and, on a pair that is neither clean (no sub-pixel remainder, no noise:
    ``MaskParams.clean_*``) nor still with white noise, whose envelope distance is not near zero
    (a sub-pixel camera shift's edges are, and a growth by plain difference alone flooded them;
    the texture's bar on a still pair, which has no such edges, is not asked for it). Growth
    starts only from pixels the envelope found, so a distractor that leaves no seed adds nothing."""
    out = seeds.copy()
    for _ in range(steps):
        near = out.copy()
        near[1:] |= out[:-1]
        near[:-1] |= out[1:]
        near[:, 1:] |= out[:, :-1]
        near[:, :-1] |= out[:, 1:]
        new = near & allowed & ~out
        if not new.any():
            break
        out |= new
    return out


class PairRegime(Enum):
    """How a pair's changed pixels are told from its unchanged ones (:func:`pair_regime`)."""

    #: no sub-pixel remainder and no noise: the plain difference is exact (``MaskParams.clean_*``)
    CLEAN = "clean"
    #: no sub-pixel remainder, white noise: the plain difference holds up to that noise (``white_*``)
    WHITE_NOISE = "white_noise"
    #: no sub-pixel remainder, other noise (JPEG, coloured): the guarded growth, like texture (``texture_grow_k``)
    STILL = "still"
    #: a sub-pixel remainder, or none estimated: the directed envelope too (``subpixel_*``)
    SHIFTED = "shifted"


def pair_regime(params: MaskParams, subpixel: tuple[float, float], noise: float, plain_noise: float,
                white_noise: Callable[[], bool]) -> PairRegime:
    """The pair's regime, from its alignment's sub-pixel remainder, its noise level and its plain
    difference's median (``white_noise`` is asked only where it decides)."""
    still = params.subpixel and max(abs(v) for v in subpixel) < params.clean_subpixel
    if not still:
        return PairRegime.SHIFTED
    if noise < params.clean_noise and params.noise_k * plain_noise <= params.delta:
        return PairRegime.CLEAN
    return PairRegime.WHITE_NOISE if white_noise() else PairRegime.STILL


@dataclass
class ChangedPixels:
    """What :func:`changed_pixels` finds, at the working resolution."""

    mask: np.ndarray  #: bool: the changed pixels
    alignment: Alignment  #: the camera shift and tone curve removed
    regime: PairRegime = PairRegime.SHIFTED  #: how the pixels were told apart
    noise: float = 0.0  #: the pair's noise level (:func:`threshold`, levels)
    #: per pixel, the plain difference over the median plain difference of the pair's pixels of
    #: like texture (:func:`texture_level`, at least one level): how clear of the distractors'
    #: residue a pixel stands (:func:`prune_clusters`); None on a clean pair or with ``prune_k`` 0
    excess: Optional[np.ndarray] = None


def changed_pixels(b: np.ndarray, a: np.ndarray, params: MaskParams) -> ChangedPixels:
    """The changed pixels of a working pair and the alignment that was removed."""
    aligned, after_overlap, dst, alignment = align(b, a, params.max_shift, params.subpixel)
    h, w = a.shape[:2]
    changed = np.zeros((h, w), dtype=bool)
    planes_a, planes_b = luma_chroma(after_overlap), luma_chroma(aligned)
    distance = envelope_distance(planes_a, planes_b)
    cut, noise = threshold(params, distance)
    seeds = distance > cut
    plain = plain_distance(after_overlap, aligned)
    plain_noise = float(np.median(plain[::2, ::2]))
    textures: dict[str, np.ndarray] = {}

    def texture_before() -> np.ndarray:  # computed once, where a step or the white-noise test asks for it
        if "before" not in textures:
            textures["before"] = texture(aligned)
        return textures["before"]

    regime = pair_regime(params, alignment.subpixel, noise, plain_noise,
                         lambda: noise_is_white(plain, texture_before(), params.white_ratio))
    clean, still = regime is PairRegime.CLEAN, regime is not PairRegime.SHIFTED
    steps = params.clean_grow if clean else params.grow
    allowed = plain > max(params.delta, params.noise_k * plain_noise)
    classes = not clean and bool(params.texture_grow_k or params.prune_k)  # does a step ask for texture classes
    level = texture_level(plain, np.minimum(texture_before(), texture(after_overlap))) if classes else None
    if clean:
        # on a clean pair the plain difference is exact, so it seeds too, at twice the growth's
        # bar (hysteresis): a thin recoloured texture lies inside the other image's 3x3 range
        # and left legs without any envelope seed (clean pairs 0.937 -> 0.942 mean IoU, < 1%
        # 0.913 -> 0.923, the distractor-only maximum unchanged; at the growth's own bar 3.5%)
        seeds |= plain > max(params.delta, 2 * params.noise_k * plain_noise)
    elif regime is PairRegime.WHITE_NOISE:
        # white noise on an aligned pair: the plain difference is exact up to that noise
        # (MaskParams.white_*)
        planes = plane_distance(planes_a, planes_b)
        white = float(np.median(planes[::2, ::2]))
        seeds |= planes > max(params.delta, params.white_seed_k * white)
        allowed = planes > max(params.delta, params.white_grow_k * white)
    else:
        if params.subpixel and not still and (params.subpixel_seed_k or params.subpixel_grow_k):
            # a sub-pixel remainder: the directed envelope seeds, and the growth also follows it
            # (MaskParams.subpixel_seed_k, subpixel_grow_k)
            directed = directed_envelope_distance(planes_a, planes_b, alignment.subpixel)
            directed_cut = threshold(params, directed)[0]
            if params.subpixel_seed_k:
                seeds |= directed > params.subpixel_seed_k * directed_cut
            if params.subpixel_grow_k:
                allowed |= directed > params.subpixel_grow_k * directed_cut
        guard = distance > params.grow_ratio * cut
        allowed &= guard
        if params.texture_grow_k:
            # the plain difference against pixels of like texture (MaskParams.texture_grow_k)
            over = plain > np.maximum(np.float32(params.delta), np.float32(params.texture_grow_k) * level)
            allowed |= over if still else over & guard
    if steps and seeds.any():
        seeds = grow(seeds, allowed, steps)
    changed[dst] = seeds
    excess = None
    if level is not None and params.prune_k:
        excess = np.zeros((h, w), dtype=np.float32)
        excess[dst] = plain / np.maximum(level, np.float32(1))
    return ChangedPixels(changed, alignment, regime, noise, excess)


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
    """Region, box and centre point of every cluster with at least ``min_region`` pixels.

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
        if n < params.min_region or boxes[k] is None:
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


def diff_clusters(before: Image.Image, after: Image.Image, params: MaskParams) -> tuple[list[Cluster], Alignment, tuple[int, int]]:
    """Clusters of changed pixels; also the alignment removed and the working size (w, h)."""
    b, a = working_pair(before, after, params.resize)
    found = changed_pixels(b, a, params)
    clean = found.regime is PairRegime.CLEAN
    if clean:  # nothing but the change to remove (MaskParams.clean_min_samples)
        params = replace(params, min_samples=params.clean_min_samples, min_region=params.clean_min_region)
    labels = grid_dbscan(found.mask, params.eps, params.min_samples)
    if found.excess is not None:
        labels = prune_clusters(labels, found.excess, params)
    return clusters_from_labels(labels, params, clean), found.alignment, (a.shape[1], a.shape[0])


def upsample(region: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A working-resolution bool map at ``size`` (w, h), nearest neighbour."""
    return np.asarray(Image.fromarray(region.astype(np.uint8) * 255).resize(size, Image.NEAREST)) > 127


def compute_change_mask(
    before: Image.Image, after: Image.Image, params: MaskParams = MaskParams(), refiner: Optional[object] = None
) -> ChangeMask:
    """The change mask of a pair at the after image's size; ``refiner`` is a SAM refiner
    (:class:`~idc_toolkit.masks.sam.SamRefiner`), which answers at the images' own resolution."""
    clusters, alignment, (w, h) = diff_clusters(before, after, params)
    out_size = after.size
    source = "diff"
    regions = [upsample(c.region, out_size) for c in clusters]
    if refiner is not None and clusters:
        refined = refiner.refine(before, after, clusters, (w, h), params.tau, alignment)  # type: ignore[attr-defined]
        if any(r is not None for r in refined):
            source = "sam"  # at least one cluster took its SAM mask
        if params.keep_unmatched:
            regions = [r if r is not None else region for r, region in zip(refined, regions)]
        else:  # DAVIR: only clusters confirmed by a SAM mask survive
            clusters = [c for r, c in zip(refined, clusters) if r is not None]
            regions = [r for r in refined if r is not None]
    union = np.zeros((out_size[1], out_size[0]), dtype=bool)
    for region in regions:
        union |= region
    sx, sy = out_size[0] / w, out_size[1] / h
    boxes = [[c.box[0] * sx, c.box[1] * sy, (c.box[2] + 1) * sx - 1, (c.box[3] + 1) * sy - 1] for c in clusters]
    return ChangeMask(mask=union, boxes=boxes, source=source, shift=alignment.shift, subpixel=alignment.subpixel)

"""Per-pixel distances of an aligned pair: the working resolution, the envelope distance (a pixel
outside the other image's 3x3 range), the plain difference, the adaptive threshold, texture and
its per-class medians."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from .params import MaskParams


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
    of the two): how :func:`envelope_distance` treats chroma."""
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
    return np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2])  # chained maxima: faster than .max(axis=2)


def texture(rgb: np.ndarray) -> np.ndarray:
    """Per pixel, the largest 3x3 range over the three channels (levels)."""
    out = None
    for channel in range(3):
        lo, hi = _range3(rgb[..., channel].astype(np.float32))
        out = hi - lo if out is None else np.maximum(out, hi - lo)
    return out


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
    # (faster than np.searchsorted: benchmarks/README.md); the sampled pixels' classes are read from it
    classes, above = np.zeros(tex.shape, dtype=np.uint8), np.empty(tex.shape, dtype=bool)
    for edge in edges:
        np.greater_equal(tex, edge, out=above)
        classes += above.view(np.uint8)
    level = grouped_medians(classes[::2, ::2].ravel(), ps, len(edges) + 1)
    empty = np.isnan(level)
    if empty.any():
        level[empty] = np.median(ps)
    return level.astype(np.float32)[classes]

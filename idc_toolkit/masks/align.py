"""Photometric and geometric alignment of a pair before its difference is thresholded.

Real pairs differ by more than the change: the camera moved a little (often by a fraction of a
pixel after resizing), the exposure, white balance or tone curve changed, the file was
re-compressed. Each of these lights up a plain ``|after - before| > delta`` map. This module
removes them, in the order the pipeline applies them:

1. :func:`camera_shift` — the translation, at full working resolution, integer part and
   sub-pixel part. Both images are first turned into grey *ranks* (histogram equalisation),
   which any monotone tone change leaves unchanged, so the search is not fooled by gamma or
   exposure. The integer part minimises a truncated L1 cost (a changed region adds at most the
   truncation per pixel, so up to a third of the image changed cannot move the minimum), on a
   2x coarse grid then at full size around it (1-pixel shifts included). The sub-pixel part
   is two Lucas-Kanade steps on the pixels the truncation did not clip.
2. :func:`fit_tone` — per channel ``after ≈ clip(a · 255 (before/255)^γ + b, 0, 255)``: gain,
   offset, gamma and the camera's clipping. The fit is a least-trimmed-squares estimate: from
   two starts (identity, plain fit) it keeps refitting on the half of the pixels that fit
   best (all channels together decide which pixels those are, so a change in one channel
   removes the pixel from every fit), then on the pixels within 3 robust deviations. Pixels
   clipped in the after image count as fitted when the model clips them too, and pixels
   clipped in the before image only bound the prediction from one side (their true value is
   unknown), so neither bends the curve. The last refits know that the model clips
   (:func:`_fit` with ``clip_aware``): a brightened photograph's levels just under the clipping
   point hold after pixels a little under 255 (noise, JPEG), and a curve that does not clip
   bends to pass through them, flattening everywhere else (a gift box under gain 1.225 and
   gamma 1.5 was fitted 49 -> 38 and 204 -> 214 where its pixels say 30 and 245).
The sub-pixel remainder is reported (Segment Anything's prompts for the before image are
mapped with it) but the before image is not resampled by it: the comparison that follows
(:func:`~.diff.envelope_distance`) tolerates any shift under a pixel, and resampling blurs the
before image, which on the benchmark's sub-pixel pairs masked more, not less.

The fitted models are returned with the pair (:class:`Alignment`) and the masks pass records
nothing else: the pipeline is a pure function of the two images and :class:`~.diff.MaskParams`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: gammas tried by :func:`fit_tone` (0.4-2.5, log-spaced); a and b are closed-form for each
GAMMAS = np.exp(np.linspace(np.log(0.4), np.log(2.5), 25))
_LEVELS = np.arange(256, dtype=np.float64)
_CURVES = 255.0 * (_LEVELS / 255.0)[None, :] ** GAMMAS[:, None]  #: (G, 256): 255 (x/255)^γ
_CURVES_SQ = _CURVES * _CURVES
_CHANNELS = np.arange(3)


@dataclass
class Alignment:
    shift: tuple[int, int]  #: integer (dy, dx): after[y, x] ~ before[y - dy, x - dx]
    subpixel: tuple[float, float]  #: remainder in (-1, 1), same convention
    tone: np.ndarray  #: (3, 256) lookup table, before level -> after level, per channel


def overlap(h: int, w: int, dy: int, dx: int) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
    """Slices ``(src, dst)`` with ``dst_image[dst] <-> src_image[src]`` for a shift (dy, dx):
    pixel (y, x) of the source lands on (y + dy, x + dx); only the overlap is addressed."""
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    return (ys, xs), (yd, xd)


def grey_ranks(rgb: np.ndarray) -> np.ndarray:
    """Grey levels replaced by their rank in the image, in [0, 1]: equal for any monotone tone
    change of the same scene (exposure, contrast, gamma, clipping aside)."""
    grey = (rgb[..., 0].astype(np.uint16) * 77 + rgb[..., 1].astype(np.uint16) * 150 + rgb[..., 2].astype(np.uint16) * 29) >> 6
    hist = np.bincount(grey.ravel(), minlength=1024).astype(np.float64)
    cdf = (np.cumsum(hist) - hist / 2) / grey.size
    return cdf.astype(np.float32)[grey]  # cast before the gather: the same values, half the bytes moved


#: a pixel's cost is capped here (rank units): a changed pixel adds at most this much
_TRUNCATE = 0.15


def _cost(gb: np.ndarray, ga: np.ndarray, dy: int, dx: int) -> float:
    src, dst = overlap(*ga.shape, dy, dx)
    d = np.subtract(ga[dst], gb[src])  # in place from here: a third faster, the same float32 sum
    np.abs(d, out=d)
    np.minimum(d, _TRUNCATE, out=d)
    return float(d.sum() / d.size)


def _integer_shift(gb: np.ndarray, ga: np.ndarray, max_shift: int) -> tuple[int, int]:
    """Best integer shift: coarse grid, then a descent at full resolution."""
    h, w = ga.shape
    h2, w2 = h // 2 * 2, w // 2 * 2
    cb = gb[:h2, :w2].reshape(h2 // 2, 2, w2 // 2, 2).mean(axis=(1, 3))
    ca = ga[:h2, :w2].reshape(h2 // 2, 2, w2 // 2, 2).mean(axis=(1, 3))
    s = (max_shift + 1) // 2
    coarse = min(((dy, dx) for dy in range(-s, s + 1) for dx in range(-s, s + 1)),
                 key=lambda d: (round(_cost(cb, ca, *d), 9), abs(d[0]) + abs(d[1])))
    costs: dict[tuple[int, int], float] = {}

    def cost(dy: int, dx: int) -> float:
        if (dy, dx) not in costs:
            costs[dy, dx] = _cost(gb, ga, dy, dx) if max(abs(dy), abs(dx)) <= max_shift else np.inf
        return costs[dy, dx]

    best = (2 * coarse[0], 2 * coarse[1])
    for _ in range(max_shift + 1):  # descend at full resolution until a 3x3 minimum
        cand = min(((best[0] + i, best[1] + j) for i in (-1, 0, 1) for j in (-1, 0, 1)),
                   key=lambda d: (round(cost(*d), 9), abs(d[0]) + abs(d[1])))
        if cand == best:
            break
        best = cand
    return best


def _lucas_kanade(gb: np.ndarray, ga: np.ndarray, shift: tuple[int, int]) -> tuple[float, float]:
    """Sub-pixel remainder (dy, dx) of the shift, two Gauss-Newton steps on unclipped pixels."""
    src, dst = overlap(*ga.shape, *shift)
    if -(-(src[0].stop - src[0].start) // 2) * -(-(src[1].stop - src[1].start) // 2) < 64:
        return 0.0, 0.0  # fewer samples than a fit takes (below): np.gradient refuses a 1-pixel side
    # every 4th pixel: as precise, 4x cheaper. Each gradient is taken along its axis on the rows
    # or columns kept (np.gradient's values there, bit for bit, for half the work)
    b = gb[src]
    gy = np.gradient(b[:, ::2].astype(np.float64), axis=0)[::2]
    gx = np.gradient(b[::2].astype(np.float64), axis=1)[:, ::2]
    b, a = b[::2, ::2].astype(np.float64), ga[dst][::2, ::2].astype(np.float64)
    u = np.zeros(2)
    for _ in range(2):
        # after(y, x) = before(y - dy, x - dx): linearised, a ~ b - dy*gy - dx*gx
        pred = b - u[0] * gy - u[1] * gx
        r = a - pred
        keep = np.abs(r) < _TRUNCATE
        if keep.sum() < 64:
            return 0.0, 0.0
        J = np.stack([-gy[keep], -gx[keep]], axis=1)
        H = J.T @ J
        if np.linalg.cond(H) > 1e6:
            return 0.0, 0.0
        u = u + np.linalg.solve(H, J.T @ r[keep])
        u = np.clip(u, -1.0, 1.0)
    return float(u[0]), float(u[1])


def camera_shift(before: np.ndarray, after: np.ndarray, max_shift: int, subpixel: bool = True
                 ) -> tuple[tuple[int, int], tuple[float, float]]:
    """Integer and sub-pixel camera shift between two uint8 RGB images of the same size."""
    max_shift = min(max_shift, min(before.shape[:2]) // 4)  # every shift searched keeps an overlap at half resolution
    if max_shift <= 0:
        return (0, 0), (0.0, 0.0)
    gb, ga = grey_ranks(before), grey_ranks(after)
    best = _integer_shift(gb, ga, max_shift)
    frac = _lucas_kanade(gb, ga, best) if subpixel else (0.0, 0.0)
    return best, frac


def _fit_channel(n: np.ndarray, sy: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares of y on 255 (x/255)^γ for every γ in GAMMAS, from per-level
    counts ``n`` and sums of y ``sy``; returns the (a, b, γ) with the smallest error."""
    s0, s1, s2 = n.sum(), _CURVES @ n, _CURVES_SQ @ n
    sy_, sfy = sy.sum(), _CURVES @ sy
    det = s0 * s2 - s1 * s1
    ok = det > 1e-9
    a = np.where(ok, (s0 * sfy - s1 * sy_) / np.where(ok, det, 1), 1.0)
    b = (sy_ - a * s1) / max(s0, 1e-9)
    # sum of squared errors up to the constant sum(y^2)
    sse = -2 * a * sfy - 2 * b * sy_ + a * a * s2 + 2 * a * b * s1 + b * b * s0
    sse = np.where(ok, sse, np.inf)
    j = int(np.argmin(sse))
    if not np.isfinite(sse[j]):
        return 1.0, float(sy_ / max(s0, 1e-9) - (n @ _LEVELS) / max(s0, 1e-9)), 1.0
    return float(a[j]), float(b[j]), float(GAMMAS[j])


def _lut(a: float, b: float, g: float) -> np.ndarray:
    return np.clip(a * 255.0 * (_LEVELS / 255.0) ** g + b, 0, 255)


@dataclass
class _Samples:
    """:func:`fit_tone`'s sampled pixels, and what each of its fits and residuals asks of them,
    computed once a pair rather than in every fit: all arrays are (N, 3), one row a pixel, one
    column a channel."""

    y: np.ndarray  #: after levels (float64)
    flat: np.ndarray  #: before level + 256 x channel: the pixel's bin in a (3, 256) table, raveled
    top: np.ndarray  #: before clipped high (>= 254): its true level may be higher
    bottom: np.ndarray  #: before clipped low (<= 1)
    slope: np.ndarray  #: neither image clipped: the pixels a curve's slope is fitted to
    bound_high: np.ndarray  #: before unclipped, after clipped high: a bound for a clip-aware fit
    bound_low: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray) -> "_Samples":
        inside = (x > 1) & (x < 254)
        return cls(y=y, flat=x.astype(np.intp) + _CHANNELS * 256, top=x >= 254, bottom=x <= 1,
                   slope=inside & (y > 1) & (y < 254), bound_high=inside & (y >= 254), bound_low=inside & (y <= 1))


def _residuals(s: _Samples, luts: np.ndarray) -> np.ndarray:
    """Per pixel, the largest |y - T(x)| over its channels; a before pixel clipped at 0 or 255
    only bounds its prediction from one side (its true level is unknown)."""
    r = s.y - luts.ravel()[s.flat]  # luts[c, x[i, c]]
    np.minimum(r, 0, out=r, where=s.top)  # true level >= 254: after may be brighter
    np.maximum(r, 0, out=r, where=s.bottom)
    np.abs(r, out=r)
    return np.maximum(np.maximum(r[:, 0], r[:, 1]), r[:, 2])  # .max(axis=1) took 27x as long on (N, 3)


#: rounds of :func:`_fit`'s clip-aware refit (it stops earlier once the curve stays the same;
#: more gave the same masks on benchmarks/mask_quality.py)
CLIP_ROUNDS = 2


def _fit(s: _Samples, keep: np.ndarray, clip_aware: bool = False) -> np.ndarray:
    """Per-channel curves fitted to the ``keep`` pixels. Pixels clipped in either image carry no
    slope and are left out; with ``clip_aware`` the fit also knows that its model clips: an
    after pixel clipped at 255 (0) counts at that level where the curve would put it under
    254 (above 1), a bound, and the unclipped pixels of levels the curve takes to 254 or more (1
    or less) leave the fit, since the clip explains them (refitted up to ``CLIP_ROUNDS`` times).
    Without it, a brightened photograph's levels just under the clipping point (after pixels
    at 245-253 through noise and JPEG) pulled the curve down there and flattened it everywhere
    (per-pixel masks on benchmarks/mask_quality.py: pairs under all distractors combined
    0.671 -> 0.691, 224x224 0.887 -> 0.897, the distractor-only maximum 1.95% -> 1.72%)."""
    keep = keep[:, None]
    use = s.slope & keep
    # the three channels' level counts and sums in one bincount each (channel c in bins
    # c*256..c*256+255; each bin still sums its pixels in order, so the sums are the per-channel
    # loop's, bit for bit): the loop's small calls were a fifth of the pipeline at 224x224
    bins = s.flat[use]
    n = np.bincount(bins, minlength=768).astype(np.float64).reshape(3, 256)
    sy = np.bincount(bins, weights=s.y[use], minlength=768).reshape(3, 256)
    if clip_aware:  # the after pixels clipped high and low, per channel and level: the bounds
        high, low = (np.bincount(s.flat[bound & keep], minlength=768).astype(np.float64).reshape(3, 256)
                     for bound in (s.bound_high, s.bound_low))
    luts = np.empty((3, 256))
    for c in range(3):
        if n[c].sum() < 16:
            luts[c] = _LEVELS
            continue
        lut = _lut(*_fit_channel(n[c], sy[c]))
        luts[c] = _clip_aware_refit(lut, n[c], sy[c], high[c], low[c]) if clip_aware else lut
    return luts


def _clip_aware_refit(lut: np.ndarray, n: np.ndarray, sy: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """:func:`_fit`'s clip-aware rounds for one channel (per-level counts and sums of the
    unclipped pixels, counts of the after pixels clipped high and low)."""
    for _ in range(CLIP_ROUNDS):
        unsaturated = (lut > 1) & (lut < 254)
        if not high.any() and not low.any() and unsaturated[n > 0].all():
            break  # nothing clipped, and the curve clips no level it is fitted to: the plain fit
        bound_high = np.where(lut < 254, high, 0.0)
        bound_low = np.where(lut > 1, low, 0.0)
        counts = np.where(unsaturated, n, 0.0) + bound_high + bound_low
        if counts.sum() < 16:
            break
        new = _lut(*_fit_channel(counts, np.where(unsaturated, sy, 0.0) + 254 * bound_high + bound_low))
        if np.array_equal(new, lut):
            break
        lut = new
    return lut


def fit_tone(before: np.ndarray, after: np.ndarray, sample: int = 4) -> np.ndarray:
    """Per-channel tone curves (3, 256) mapping ``before`` to ``after`` (aligned uint8 RGB);
    see the module docstring."""
    x = before[::sample, ::sample].reshape(-1, 3)
    if len(x) < 32:
        return np.tile(_LEVELS, (3, 1))
    s = _Samples.of(x, after[::sample, ::sample].reshape(-1, 3).astype(np.float64))
    starts = [np.tile(_LEVELS, (3, 1)), _fit(s, np.ones(len(x), dtype=bool))]
    best, best_cost = starts[0], np.inf
    half = len(x) // 2
    for luts in starts:
        # concentration steps of least trimmed squares, the second one clip-aware (here, not in
        # every fit: there it cost most of the tone fit for no better masks)
        for clip_aware in (False, True):
            score = _residuals(s, luts)
            keep = score <= np.partition(score, half)[half]
            luts = _fit(s, keep, clip_aware)
        score = _residuals(s, luts)
        trimmed = float(np.partition(score, half)[:half].sum())
        if trimmed < best_cost:
            best, best_cost = luts, trimmed
    score = _residuals(s, best)
    sigma = 1.4826 * float(np.median(score)) + 0.5
    return _fit(s, score <= 3 * sigma + 1, clip_aware=True)


def apply_tone(image: np.ndarray, luts: np.ndarray) -> np.ndarray:
    """``image`` (uint8 RGB) through the per-channel curves, as float32."""
    out = np.empty(image.shape, dtype=np.float32)
    for c in range(3):
        out[..., c] = luts[c].astype(np.float32)[image[..., c]]
    return out


def align(before: np.ndarray, after: np.ndarray, max_shift: int, subpixel: bool = True
          ) -> tuple[np.ndarray, np.ndarray, tuple[slice, slice], Alignment]:
    """The before image under the after image's tone curves (float32, on the overlap), the
    after image's overlap (float32), the overlap's slices in after coordinates, and the
    fitted :class:`Alignment`."""
    h, w = after.shape[:2]
    shift, frac = camera_shift(before, after, max_shift, subpixel)
    src, dst = overlap(h, w, *shift)
    b, a = before[src], after[dst]
    luts = fit_tone(b, a)
    return apply_tone(b, luts), a.astype(np.float32), dst, Alignment(shift=shift, subpixel=frac, tone=luts)

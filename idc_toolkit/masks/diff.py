"""Change masks from pixel differences (DAVIR §3.1): the diff-only half of the mask pipeline.

    align (camera shift incl. sub-pixel, tone curve per channel; :mod:`.align`)
    -> envelope distance |after - before| -> threshold max(delta, noise_k * noise)
       (on clean pairs the plain difference seeds too)
    -> on other pairs, hysteresis growth into the partly covered edge pixels (also against the
       plain difference of pixels of like texture)
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

from dataclasses import dataclass, replace
from enum import Enum
from typing import Optional

import numpy as np
from PIL import Image

from .align import Alignment, align
from .clustering import Cluster, clusters_from_labels, grid_dbscan, prune_clusters
from .distances import envelope_distance, luma_chroma, plain_distance, texture, texture_level, threshold, working_pair
from .params import MaskParams


@dataclass
class ChangeMask:
    mask: np.ndarray  #: bool, at the after image's size
    boxes: list[list[float]]  #: [x0, y0, x1, y1] per kept cluster, after-image pixels
    source: str  #: "sam" when a SAM mask was kept for at least one cluster, else "diff"
    shift: tuple[int, int] = (0, 0)  #: integer camera shift compensated (dy, dx), working pixels
    subpixel: tuple[float, float] = (0.0, 0.0)  #: its sub-pixel remainder


def grow(seeds: np.ndarray, allowed: np.ndarray, steps: int) -> np.ndarray:
    """Hysteresis: ``seeds`` grown, ``steps`` times, into the ``allowed`` 4-neighbours. The
    envelope distance finds a change only where the other image's 3x3 range cannot explain
    it, which misses the partly covered pixels at an object's edge; on an object 2.5 pixels
    wide that is half of it. On a pair that is not clean (``MaskParams.clean_*``),
    :func:`changed_pixels` allows pixels whose plain difference passes the plain threshold, or
    ``texture_grow_k`` x that of pixels of like texture, and whose envelope distance is not zero
    (a sub-pixel camera shift's edges lie within the other image's range, and a growth by plain
    difference alone flooded them; the texture's bar on a still pair, which has no such edges,
    does not ask it). Growth starts only from pixels the envelope found, so a distractor that
    leaves no seed adds nothing."""
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
    #: no sub-pixel remainder, some noise (JPEG, sensor): the growth also against pixels of like texture
    STILL = "still"
    #: a sub-pixel remainder, or none estimated: the growth only where the envelope does not explain a pixel
    SHIFTED = "shifted"


def pair_regime(params: MaskParams, subpixel: tuple[float, float], noise: float, plain_noise: float) -> PairRegime:
    """The pair's regime, from its alignment's sub-pixel remainder, its noise level and its plain
    difference's median."""
    still = params.subpixel and max(abs(v) for v in subpixel) < params.clean_subpixel
    if not still:
        return PairRegime.SHIFTED
    if noise < params.clean_noise and params.noise_k * plain_noise <= params.delta:
        return PairRegime.CLEAN
    return PairRegime.STILL


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
    regime = pair_regime(params, alignment.subpixel, noise, plain_noise)
    clean, still = regime is PairRegime.CLEAN, regime is not PairRegime.SHIFTED
    classes = not clean and bool(params.texture_grow_k or params.prune_k)  # does a step ask for texture classes
    level = texture_level(plain, np.minimum(texture(aligned), texture(after_overlap))) if classes else None
    if clean:
        # on a clean pair the plain difference is exact, so it seeds too, at twice the noise
        # bar: a thin recoloured texture lies inside the other image's 3x3 range and left legs
        # without any envelope seed; nothing grows (a growth did not earn its step: mask_quality.md)
        seeds |= plain > max(params.delta, 2 * params.noise_k * plain_noise)
    else:
        # the growth enters the partly covered edge pixels: over the plain bar, and not explained
        # by the other image's 3x3 range (a sub-pixel shift's edges are; unguarded, they flooded)
        explained = distance <= 0
        allowed = (plain > max(params.delta, params.noise_k * plain_noise)) & ~explained
        if params.texture_grow_k:
            # the plain difference against pixels of like texture (MaskParams.texture_grow_k)
            over = plain > np.maximum(np.float32(params.delta), np.float32(params.texture_grow_k) * level)
            allowed |= over if still else over & ~explained
        if params.grow and seeds.any():
            seeds = grow(seeds, allowed, params.grow)
    changed[dst] = seeds
    excess = None
    if level is not None and params.prune_k:
        excess = np.zeros((h, w), dtype=np.float32)
        excess[dst] = plain / np.maximum(level, np.float32(1))
    return ChangedPixels(changed, alignment, regime, noise, excess)


def diff_clusters(before: Image.Image, after: Image.Image, params: MaskParams) -> tuple[list[Cluster], Alignment, tuple[int, int]]:
    """Clusters of changed pixels; also the alignment removed and the working size (w, h)."""
    b, a = working_pair(before, after, params.resize)
    found = changed_pixels(b, a, params)
    clean = found.regime is PairRegime.CLEAN
    if clean:  # nothing but the change to remove (MaskParams.clean_min_samples)
        params = replace(params, min_samples=params.clean_min_samples)
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

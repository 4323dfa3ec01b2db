"""Change masks on real photographs (scikit-image, scikit-learn, matplotlib sample images), one
test per failure the old pipeline had, with ground truth constructed here; and Segment
Anything prompts mapped into each image's own pixels."""

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.masks.align import fit_tone
from idc_toolkit.masks.diff import compute_change_mask
from idc_toolkit.masks.params import MaskParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
photo_pairs = pytest.importorskip("photo_pairs")
pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def photos():
    return [np.asarray(p) for p in photo_pairs.photographs()]


def _photo(photos, k, size=224):
    return np.asarray(Image.fromarray(photos[k]).resize((size, size), Image.LANCZOS))


def _iou(a, b):
    return float((a & b).sum() / max(1, (a | b).sum()))


def _ellipse(size, cy, cx, ry, rx):
    yy, xx = np.mgrid[0:size, 0:size]
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1


@pytest.mark.parametrize("photo", range(8))
def test_subpixel_camera_shift_masks_nothing_and_is_estimated(photos, photo):
    """A half-pixel camera move (the after crop moved by a fraction of an output pixel; masts,
    lattices and glasses included) masks under 0.3% of the image, and the estimated shift is
    within 0.25 px of the true one."""
    pair = photo_pairs.photo_pair(photo, "none", "subpixel", 224, 0, photos)
    m = compute_change_mask(pair.before, pair.after)
    assert m.mask.mean() < 0.003, m.mask.mean()
    dy, dx = pair.shift
    assert abs(m.shift[0] + m.subpixel[0] - dy) < 0.25 and abs(m.shift[1] + m.subpixel[1] - dx) < 0.25, (m.shift, m.subpixel, pair.shift)


def test_a_third_of_the_image_recoloured_under_a_brightness_change(photos):
    """Flower photo, brightness x1.2 (clipped) and a recoloured ellipse covering a third of the
    image: the red tone curve is still the x1.2 gain (the change does not bend the fit) and the
    mask is the ellipse, not the whole flower."""
    before = _photo(photos, 6)
    region = _ellipse(224, 112, 112, 85, 65)  # 0.35 of the image
    assert 0.3 < region.mean() < 0.36
    edited = before.astype(np.float32)
    edited[region] = 0.4 * edited[region] + 0.6 * (255 - edited[region].mean(axis=0))
    after = np.clip(edited * 1.2, 0, 255).astype(np.uint8)
    luts = fit_tone(before, after)
    for level in (40, 80, 120, 160, 200):
        assert abs(luts[0][level] - min(255, 1.2 * level)) < 4, (level, luts[0][level])
    truth = np.abs(after.astype(int) - np.clip(before * 1.2, 0, 255).astype(int)).max(axis=2) > 10
    pred = compute_change_mask(Image.fromarray(before), Image.fromarray(after)).mask
    assert _iou(truth, pred) >= 0.9 and (pred & ~truth).mean() < 0.01


def test_large_object_removed_from_a_night_photo_keeps_the_identity_tone(photos):
    """Rocket at night, no lighting change, a large bright object present only in the before
    image: the fitted curves stay the identity and the rocket is not flagged."""
    after = _photo(photos, 3)
    before = after.copy()
    region = _ellipse(224, 80, 150, 60, 55)  # 0.2 of the image
    before[region] = _photo(photos, 6)[region]
    luts = fit_tone(before, after)
    for c in range(3):
        assert np.abs(luts[c][20:236] - np.arange(20, 236)).max() < 3
    pred = compute_change_mask(Image.fromarray(before), Image.fromarray(after)).mask
    truth = np.abs(after.astype(int) - before.astype(int)).max(axis=2) > 10
    assert _iou(truth, pred) >= 0.9 and (pred & ~truth).mean() < 0.005


@pytest.mark.parametrize("gamma", [0.65, 0.7, 1.5])
def test_gamma_change_alone_masks_nothing(photos, gamma):
    """Astronaut photo (a black helmet, a white suit) under gamma: no mask."""
    before = _photo(photos, 0)
    after = (255 * (before / 255.0) ** gamma).round().astype(np.uint8)
    pred = compute_change_mask(Image.fromarray(before), Image.fromarray(after)).mask
    assert pred.mean() < 0.003, pred.mean()


def test_low_contrast_change_is_found(photos):
    """A grey coin 22 levels brighter than a grey photo region: found (the old fixed delta of
    32 found 29% of such a coin)."""
    before = _photo(photos, 1)  # coffee
    region = _ellipse(224, 60, 170, 18, 18)
    after = before.astype(np.int16)
    after[region] += 22
    after = np.clip(after, 0, 255).astype(np.uint8)
    truth = np.abs(after.astype(int) - before.astype(int)).max(axis=2) > 10
    pred = compute_change_mask(Image.fromarray(before), Image.fromarray(after)).mask
    assert (pred & truth).sum() / truth.sum() >= 0.8 and _iou(truth, pred) >= 0.75


def test_thin_object_is_not_grown_into_its_gaps(photos):
    """A table on thin legs added to a photo: the gaps between the legs stay unmasked."""
    pair = photo_pairs.photo_pair(1, "thin", "none", 224, 0, photos)
    pred = compute_change_mask(pair.before, pair.after).mask
    precision = (pred & pair.truth).sum() / max(1, pred.sum())
    assert precision >= 0.95 and _iou(pair.truth, pred) >= 0.95  # measured 0.979 and 0.979


@pytest.mark.parametrize("change", ["add", "drop", "colour", "move"])
def test_change_under_a_gamma_change(photos, change):
    """A change under a gamma change of the after image: a clean pair once the tone curve is
    fitted, so the mask grows to the change's edge by the plain difference."""
    pair = photo_pairs.photo_pair(2, change, "gamma", 224, 0, photos)
    pred = compute_change_mask(pair.before, pair.after).mask
    assert _iou(pair.truth, pred) >= 0.95  # measured 0.970-1.000


@pytest.mark.parametrize("change, floor", [("add", 0.9), ("drop", 0.9), ("colour", 0.9)])
def test_change_under_combined_distractors(photos, change, floor):
    """Brightness + gamma + sensor noise + JPEG + sub-pixel shift, with a change: not a clean
    pair, so only the guarded growth runs (measured 0.926, 0.949, 0.960; a move under all of
    them is 0.52, the benchmark's weakest cell)."""
    pair = photo_pairs.photo_pair(2, change, "combined", 224, 0, photos)
    pred = compute_change_mask(pair.before, pair.after).mask
    assert _iou(pair.truth, pred) >= floor


class _EchoSam:
    """A SamRefiner whose 'model' returns, for each prompt, the prompt's box filled: so the
    masks show where the prompts landed in each image's own pixels."""

    def __new__(cls):
        from idc_toolkit.masks.sam import SamRefiner

        obj = object.__new__(SamRefiner)
        obj.seen = []

        def candidates(image, boxes, points):
            obj.seen.append((image.shape, boxes.copy(), points.copy()))
            out = np.zeros((len(boxes), 3) + image.shape[:2], dtype=bool)
            for k, (x0, y0, x1, y1) in enumerate(np.round(boxes).astype(int)):
                out[k, :, max(0, y0):y1, max(0, x0):x1] = True
            return out

        obj._candidates = candidates
        return obj


def test_sam_prompts_are_mapped_into_each_image_at_full_resolution(photos):
    """The before image is twice the after image's size and the camera moved by 3 working
    pixels: the before prompts land on the object in the before image's own pixels, and the
    before masks come back in after-image pixels."""
    scene = _photo(photos, 5, 460)
    obj = np.zeros((460, 460), dtype=bool)
    obj[200:260, 120:200] = True
    edited = scene.copy()
    edited[obj] = (20, 200, 40)
    # before: 448 px crop at x offset 6 (scene pixels), shown at 448; after: crop at offset 0, at 224
    before = Image.fromarray(edited[0:448, 6:454])
    after = Image.fromarray(scene[0:448, 0:448]).resize((224, 224), Image.LANCZOS)  # object removed
    refiner = _EchoSam()
    m = compute_change_mask(before, after, MaskParams(), refiner)
    assert m.shift == (0, 3)  # after[y, x] ~ before[y, x - 3]: content moved right by 3 working pixels
    (shape_a, boxes_a, _), (shape_b, boxes_b, points_b) = refiner.seen
    assert shape_a[:2] == (224, 224) and shape_b[:2] == (448, 448)
    # the object, in before-image pixels: rows 200-260, columns 114-194 (the diff region is a few
    # working pixels wider than the object: resampling and chroma smoothing)
    big = int(np.argmax([(b[2] - b[0]) * (b[3] - b[1]) for b in boxes_b]))
    x0, y0, x1, y1 = boxes_b[big]
    assert abs(x0 - 114) <= 8 and abs(x1 - 194) <= 8 and abs(y0 - 200) <= 8 and abs(y1 - 260) <= 8, boxes_b[big]
    ax0, ay0, ax1, ay1 = boxes_a[big]  # the same cluster in after-image pixels: moved by the shift, scaled by 2
    assert (x0, x1) == pytest.approx(((ax0 - 3 - m.subpixel[1]) * 2, (ax1 - 3 - m.subpixel[1]) * 2))
    assert 114 <= points_b[big][0] <= 194 and 200 <= points_b[big][1] <= 260
    # the kept mask is in after-image pixels, where the object was: rows 100-130, columns 60-100
    assert m.mask.shape == (224, 224) and m.source == "sam"
    lab = np.asarray(m.mask)
    ys, xs = np.nonzero(lab[90:140, 50:110])
    assert abs(ys.min() + 90 - 100) <= 4 and abs(ys.max() + 90 - 129) <= 4 and abs(xs.min() + 50 - 60) <= 4 and abs(xs.max() + 50 - 99) <= 4


def test_tiny_sam_runs_on_full_resolution_images_of_different_sizes(photos):
    torch = pytest.importorskip("torch")
    pytest.importorskip("segment_anything")
    from idc_toolkit.masks.sam import SamRefiner, build_tiny_sam

    torch.manual_seed(0)
    refiner = SamRefiner(build_tiny_sam().eval())
    before = Image.fromarray(_photo(photos, 2, 300))
    after_arr = _photo(photos, 2, 300).copy()
    after_arr[100:160, 120:200] = (250, 20, 20)
    after = Image.fromarray(after_arr).resize((200, 200), Image.LANCZOS)
    m = compute_change_mask(before, after, MaskParams(keep_unmatched=True), refiner)
    assert m.mask.shape == (200, 200) and m.mask[90:100, 100:120].any()


@pytest.mark.parametrize("name, shape, size, seed, fill_holes, floor", [
    ("chelsea.png", "pole", (480, 320), 1, True, 0.9),  # measured 0.925 (0.621 working at 224 px)
    ("coffee.png", "pole", (224, 224), 2, True, 0.95),  # 0.995 (0.929 before the clean-pair growth)
    ("astronaut.png", "legs", (448, 448), 3, True, 0.95),  # 0.977 (0.709 at 224 px)
    ("rocket.jpg", "text", (320, 480), 4, True, 0.78),  # 0.803: the counters are filled (0.661 at 224 px)
    ("rocket.jpg", "text", (320, 480), 4, False, 0.88),  # 0.909 with the counters left open
])
def test_thin_objects_on_non_square_photographs_are_tight(name, shape, size, seed, fill_holes, floor):
    """A pole 2.5 px wide, a body on thin legs, printed letters (0.6% of the image) pasted into
    real photographs at non-square and larger sizes: the mask covers the change and little
    else, because it is computed at the image's own resolution (up to 512 px) and grown from
    the envelope's pixels into the partly covered edge pixels."""
    photos = dict(photo_pairs.all_photographs())
    pair = photo_pairs.shaped_pair((name, photos[name]), photos["china.jpg"], "add", shape, 0.006, "none", size,
                                   np.random.default_rng(seed))
    mask = compute_change_mask(pair.before, pair.after, MaskParams(fill_holes=fill_holes)).mask
    iou = (pair.truth & mask).sum() / (pair.truth | mask).sum()
    assert iou >= floor, iou


@pytest.mark.parametrize("name, shape, seed, floor", [
    ("china.jpg", "legs", 0, 0.9),  # measured 0.928 (0.558 when only the envelope seeded)
    ("grace_hopper.jpg", "pole", 3, 0.93),  # 0.970 (0.793)
])
def test_a_thin_recoloured_texture_under_a_brightness_change_is_found(name, shape, seed, floor):
    """The photograph's own texture recoloured (RGB -> GBR) on thin legs or a pole, under a
    brightness change, at 224 px: the recoloured pixels lie inside the other image's 3x3
    range, so the envelope seeds only parts of it; on such a clean pair the plain difference
    seeds too."""
    photos = dict(photo_pairs.all_photographs())
    pair = photo_pairs.shaped_pair((name, photos[name]), photos["china.jpg"], "textured_recolour", shape, 0.008, "none",
                                   (224, 224), np.random.default_rng(seed))
    mask = compute_change_mask(pair.before, pair.after, MaskParams()).mask
    assert pair.distractor == "brightness" and pair.truth.sum() > 150
    assert _iou(pair.truth, mask) >= floor, _iou(pair.truth, mask)


@pytest.mark.parametrize("name, gain, gamma, measured, before_fix", [
    ("Minduka_Present_Blue_Pack.png", 1.225, 1.5, 1.25, 3.81),
    ("Minduka_Present_Blue_Pack.png", 1.25, 0.75, 0.91, 2.60),
    ("coffee.png", 1.225, 1.5, 1.55, 4.14),
    ("coffee.png", 1.25, 0.75, 1.27, 2.66),
    ("astronaut.png", 1.225, 1.5, 1.50, 4.31),
    ("astronaut.png", 1.25, 0.75, 1.34, 3.07),
])
def test_the_tone_fit_knows_the_camera_clips_a_brightened_photograph(name, gain, gamma, measured, before_fix):
    """A photograph brightened (gain, then gamma, clipped at 255 as a camera does), with sensor
    noise and JPEG on top: levels just under the clipping point hold after pixels a little
    under 255, and a fit that ignored that its model clips bent the whole curve to pass through
    them. Ground truth: the tone applied here; measured as the mean over the photograph's
    pixels of |fitted - true level| (the fit before the clip-aware refits: ``before_fix``)."""
    import io

    photos = dict(photo_pairs.all_photographs())
    before = np.asarray(Image.fromarray(photos[name]).resize((224, 224), Image.LANCZOS))
    true = np.clip(255 * (np.clip(np.arange(256) * gain, 0, 255) / 255) ** gamma, 0, 255)
    noisy = true[before] + np.random.default_rng(0).normal(0, 3.0, before.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(np.round(noisy), 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=75)
    after = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    luts = fit_tone(before, after)
    fitted = np.stack([luts[c][before[..., c]] for c in range(3)], axis=-1)
    error = float(np.abs(fitted - true[before]).mean())
    assert error <= 2.0, (error, measured, before_fix)


@pytest.mark.parametrize("name, seed, floor", [
    ("chelsea.png", 2, 0.97),  # measured 1.000 (0.766 when per-pixel regions were closed)
    ("coffee.png", 2, 0.97),  # 0.992 (0.765)
    ("motorcycle_left.png", 2, 0.95),  # 0.983 (0.779)
])
def test_per_pixel_masks_of_a_clean_pair_are_not_closed(name, seed, floor):
    """The photograph's own texture recoloured (RGB -> GBR) on thin legs, 0.5% of a 224 px
    image, under a brightness change (a clean pair once the tone is fitted): grey pixels
    between the coloured ones do not change, so the per-pixel truth has gaps that a 3x3
    closing filled. There per-pixel masks (``fill_holes=False``) are the changed pixels themselves."""
    photos = dict(photo_pairs.all_photographs())
    pair = photo_pairs.shaped_pair((name, photos[name]), photos[name], "textured_recolour", "legs", 0.005, "none",
                                   (224, 224), np.random.default_rng(seed))
    mask = compute_change_mask(pair.before, pair.after, MaskParams(fill_holes=False)).mask
    assert _iou(pair.truth, mask) >= floor, _iou(pair.truth, mask)


def test_per_pixel_masks_of_a_noisy_pair_are_closed(monkeypatch):
    """A body on thin legs (2% of a 320x480 image) added under JPEG, sensor noise or a
    sub-pixel camera shift: a one-pixel gap in a cluster there is more often a change the noise
    hid than an unchanged pixel, so per-pixel masks of pairs that are not clean are closed 3x3
    (measured 0.885 mean IoU, 0.876 with the clusters' pixels alone, as on a clean pair; in
    revision 7 0.856 and 0.834: the growth against pixels of like texture now fills part of
    what the closing filled, and the benchmark's 1-4% class still gains 0.003 by the closing)."""
    from idc_toolkit.masks import diff

    photos = dict(photo_pairs.all_photographs())
    pairs = [photo_pairs.shaped_pair(("astronaut.png", photos["astronaut.png"]), photos["china.jpg"], "add", "legs", 0.02,
                                     distractor, (320, 480), np.random.default_rng(1)) for distractor in ("jpeg", "noise", "subpixel")]

    def mean_iou():
        return float(np.mean([_iou(p.truth, compute_change_mask(p.before, p.after, MaskParams(fill_holes=False)).mask)
                              for p in pairs]))

    closed = mean_iou()
    as_if_clean = diff.clusters_from_labels
    monkeypatch.setattr(diff, "clusters_from_labels", lambda labels, params, clean=False: as_if_clean(labels, params, True))
    assert closed >= 0.88 and closed - mean_iou() >= 0.005, closed


def test_a_clean_pair_keeps_a_change_that_breaks_into_small_groups():
    """The same recolouring where only 28 pixels change, in groups of a few pixels: on a clean
    pair there is no noise for DBSCAN to remove, so its clean thresholds keep them (measured
    0.812; 0.571 with the noisy pairs' min_samples 6 and min_region 12, asserted below)."""
    photos = dict(photo_pairs.all_photographs())
    pair = photo_pairs.shaped_pair(("grace_hopper.jpg", photos["grace_hopper.jpg"]), photos["grace_hopper.jpg"],
                                   "textured_recolour", "legs", 0.005, "none", (224, 224), np.random.default_rng(0))
    ious = [_iou(pair.truth, compute_change_mask(pair.before, pair.after, MaskParams(fill_holes=False, **kw)).mask)
            for kw in ({}, {"clean_min_samples": 6, "clean_min_region": 12})]
    assert ious[0] >= 0.78 and ious[1] < 0.65, ious


@pytest.mark.parametrize("name, shape, change, seed, floor", [
    ("chelsea.png", "pole", "add", 0, 0.93),  # floors a regression falls under and noise does not
    ("coffee.png", "pole", "add", 0, 0.82),
    ("astronaut.png", "pole", "add", 0, 0.95),
])
def test_a_pole_under_white_sensor_noise_keeps_its_edges(name, shape, change, seed, floor):
    """A pole 2.5 px wide pasted into a photograph at 224 px, the after image with sensor noise
    (sigma 3): the partly covered edge pixels, which the envelope's 3x3 tolerance gives away, are
    grown into by the plain difference against pixels of like texture (revision 8 had a path of
    its own for white noise)."""
    photos = dict(photo_pairs.all_photographs())
    pair = photo_pairs.shaped_pair((name, photos[name]), photos["china.jpg"], change, shape, 0.006, "noise", (224, 224),
                                   np.random.default_rng(seed))
    mask = compute_change_mask(pair.before, pair.after, MaskParams()).mask
    assert _iou(pair.truth, mask) >= floor, _iou(pair.truth, mask)


@pytest.mark.parametrize("distractor", ["jpeg", "noise"])
def test_a_saturated_rim_under_jpeg_or_noise_masks_almost_nothing(distractor):
    """The retina photograph's saturated red rim on black, aligned: JPEG's half-resolution
    chroma rings along it, which an RGB plain difference masked (3.5% of the image); the
    white-noise path compares luma and smoothed chroma."""
    photos = photo_pairs.all_photographs()
    pair = photo_pairs.distractor_pair(photos, [name for name, _ in photos].index("retina.jpg"), distractor,
                                       (224, 224))  # the benchmark's own pair
    area = compute_change_mask(pair.before, pair.after, MaskParams()).mask.mean()
    assert area <= 0.005, area  # measured 0.38% under JPEG (3.47% by RGB plain difference), 0 under noise


@pytest.mark.parametrize("cell, j, share_class, change, shape, size, photo, floor, gain", [
    # floor and gain a regression falls under and noise does not (figures: benchmarks/mask_quality.md)
    (28, 0, 0, "drop", "text", (224, 224), "moon.png", 0.55, 0.015),
    (281, 0, 1, "low_contrast", "pole", (480, 320), "moon.png", 0.69, 0.15),
])
def test_small_changes_under_all_distractors_grow_past_the_pair_wide_bar(cell, j, share_class, change, shape, size,
                                                                        photo, floor, gain):
    """Two of the benchmark's < 1% pairs under all distractors combined (sub-pixel shift, tone,
    noise, JPEG), per pixel: the shift's resampling of the photograph lifts the plain
    difference's median, and with it the growth's pair-wide bar (``noise_k`` x that) above the
    change's edges. The growth also follows the plain difference against pixels of like texture
    (``texture_grow_k``), which recovers edges that the pair-wide bar shut out."""
    pair = photo_pairs.cell_pair(photo_pairs.all_photographs(), cell, j, change, shape, photo_pairs.SHARE_RANGES[share_class],
                                 size)  # the benchmark's own pair
    assert (pair.photo_name, pair.distractor, pair.size_class) == (photo, "combined", "< 1%")
    textured, plain_only = (
        _iou(pair.truth, compute_change_mask(pair.before, pair.after, MaskParams(fill_holes=False, **off)).mask)
        for off in ({}, {"texture_grow_k": 0.0}))
    assert textured >= floor and textured >= plain_only + gain, (textured, plain_only)


@pytest.mark.parametrize("cell, j, share_class, change, floor", [
    (345, 1, 1, "colour", 0.53),  # measured 0.558 (0.134 by the pair-wide bar alone)
    (312, 1, 0, "drop", 0.80),  # 0.838 (0.623)
])
def test_a_pole_on_gravel_under_jpeg_grows_against_pixels_of_like_texture(cell, j, share_class, change, floor):
    """Two of the benchmark's < 1% pairs: a pole 2.5 px wide recoloured or removed on a gravel
    photograph at 320x480, re-saved as JPEG. JPEG's ringing on the gravel lifts the plain
    difference's median, and with it the growth's pair-wide bar, above the pole's edges; the
    growth also follows the plain difference against pixels of like texture
    (``texture_grow_k``), asserted against the masks without it."""
    pair = photo_pairs.cell_pair(photo_pairs.all_photographs(), cell, j, change, "pole",
                                 photo_pairs.SHARE_RANGES[share_class], (320, 480))  # the benchmark's own pair
    assert (pair.photo_name, pair.distractor, pair.size_class) == ("gravel.png", "jpeg", "< 1%")
    grown, without = (_iou(pair.truth, compute_change_mask(pair.before, pair.after, MaskParams(texture_grow_k=k)).mask)
                      for k in (MaskParams().texture_grow_k, 0.0))
    assert grown >= floor and grown >= without + 0.15, (grown, without)


@pytest.mark.parametrize("photo, most", [
    ("grass.png", 0.001),  # measured 0.0% of the image (1.78% without the pruning)
    ("hubble_deep_field.jpg", 0.012),  # 0.98% (1.77%): the stars that stay stand clear of their texture
])
def test_distractor_residue_on_textured_photographs_is_pruned(photo, most):
    """The benchmark's two worst distractor-only pairs: grass and a star field at 224 px under
    all distractors combined (sub-pixel shift, tone, noise, JPEG). What the distractors leave
    forms small clusters that stand no clearer than the unchanged pixels of their texture
    (``prune_k``, ``prune_pixels``), asserted against the masks without the pruning."""
    photos = photo_pairs.all_photographs()
    pair = photo_pairs.distractor_pair(photos, [name for name, _ in photos].index(photo), "combined", (224, 224))
    pruned, kept = (compute_change_mask(pair.before, pair.after, MaskParams(prune_k=k)).mask.mean()
                    for k in (MaskParams().prune_k, 0.0))
    assert pruned <= most and kept >= pruned + 0.007, (pruned, kept)


@pytest.mark.parametrize("cell, j, change, shape, size, photo, distractor, floor", [
    # the lattice towers' residue; revision 9's floor is lower (benchmarks/mask_quality.md, revision 9)
    (96, 0, "add", "blob", (448, 448), "rocket.jpg", "combined", 0.54),
    (20, 0, "drop", "legs", (224, 224), "china.jpg", "subpixel", 0.85),  # 0.873 (0.481)
])
def test_a_small_change_keeps_its_clusters_and_loses_the_residue_around_it(cell, j, change, shape, size, photo,
                                                                          distractor, floor):
    """Two of the benchmark's < 1% pairs where the change is found but the distractors' residue
    elsewhere halved the IoU: the pruning drops the residue and keeps the change's clusters."""
    pair = photo_pairs.cell_pair(photo_pairs.all_photographs(), cell, j, change, shape, photo_pairs.SHARE_RANGES[0],
                                 size)  # the benchmark's own pair
    assert (pair.photo_name, pair.distractor, pair.size_class) == (photo, distractor, "< 1%")
    pruned, kept = (_iou(pair.truth, compute_change_mask(pair.before, pair.after, MaskParams(prune_k=k)).mask)
                    for k in (MaskParams().prune_k, 0.0))
    assert pruned >= floor and pruned >= kept + 0.3, (pruned, kept)

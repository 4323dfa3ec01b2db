"""Diff-only change masks on pairs made from real photographs, next to DAVIR's naive recipe.

Two sets of photographs: the *tuning* set, the 22 real photographs that ship inside the installed
packages (scikit-image's photographs, scikit-learn's and matplotlib's sample photos), on which
every parameter was chosen; and the *held-out* set (the default, what is reported), 13 photographs
none was ever chosen on, fetched once from package archives on PyPI (``photo_pairs.HELDOUT_PHOTOS``:
Pillow's test photographs, scipy 1.9's face and ascent, PyWavelets' aerial photograph), with its
own donors and its own draw (seed 1). Pairs (``photo_pairs.wide_pairs``), at four image
sizes (224x224, 448x448, 480x320, 320x480); every change kind (an object added, removed,
moved, recoloured, a textured region recoloured under a brightness change, a low-contrast
patch) on every shape (a blob, a body on thin legs, a pole 2.5 px wide, printed text) in four
size classes (< 1%, 1-4%, 4-12%, > 12% of the image), two photographs each under a seeded
distractor (none, brightness, contrast, gamma, JPEG, sensor noise, integer camera shift 1-3 px,
sub-pixel shift, all combined); plus every distractor alone on every photograph at every size.
A change whose truth is under 16 pixels (a share drawn too small for a thin shape) is
reported on its own row, outside the classes. Changes are made at the photo's own resolution;
ground truth: every after-image pixel the edit changed by more than 10 levels under the same
camera and tone change (what a brightness gain clipped to white is in neither image).

Printed, for the toolkit's pipeline (``MaskParams()``: whole objects, closed and hole-filled;
and ``--no-fill-holes``: per-pixel masks, the truth's own kind, so the unchanged counters of
letters that filling adds do not count against it) and for the naive recipe of DAVIR §3.1
as the paper states it (``|after - before| > delta`` on grey levels, scikit-learn DBSCAN over
the changed pixels, union of the clusters' boxes), on the same pairs: mean IoU per size class,
shape, change kind, image size and distractor, precision and recall, the masked area of the
distractor-only pairs (mean, largest), pairs/s at 224x224 on one core.

Goals (diff-only): mean IoU >= 0.90 on every size class and image size; distractor-only area
<= 0.3% mean and <= 2% max; >= 50 pairs/s at 224x224 on one core.

    python benchmarks/mask_quality.py [--photos heldout|tuning] [--photos-per-cell 2] [--seed N] [--skip-naive]
                                      [--sizes 224x224 ...] [--ablate [STEP ...]]
                                      [--sam-checkpoint PATH --sam-type vit_h [--keep-unmatched]]

``--ablate`` measures each step of the pipeline (:data:`STEP_OFF`) against the pipeline without
it, on both mask kinds: a step keeps its parameters only where it raises the held-out mean IoU by
at least :data:`KEEP_IF_GAIN` on both.

With ``--sam-checkpoint`` the SAM-refined masks are measured on the same pairs, in a column
of their own (SAM's speed is not the diff's: the pairs/s row then includes it).

What each pipeline revision moved here, and what was tried and not kept: ``mask_quality.md``
beside this script.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from idc_toolkit.masks.params import MaskParams  # noqa: E402


def naive_davir_mask(before: Image.Image, after: Image.Image, delta: float = 32.0, eps: float = 2.0,
                     min_samples: int = 6, resize: int = 224) -> np.ndarray:
    """DAVIR §3.1 read literally: grey difference > delta, DBSCAN, union of cluster boxes."""
    from sklearn.cluster import DBSCAN

    from idc_toolkit.masks.diff import upsample
    from idc_toolkit.masks.distances import working_pair

    b, a = working_pair(before, after, resize)
    changed = np.abs(a.astype(np.float32).mean(axis=2) - b.astype(np.float32).mean(axis=2)) > delta
    mask = np.zeros(changed.shape, dtype=bool)
    pts = np.argwhere(changed)
    if len(pts):
        labels = DBSCAN(eps=eps, min_samples=min_samples).fit(pts).labels_
        for k in set(labels.tolist()) - {-1}:
            ys, xs = pts[labels == k].T
            mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1] = True
    return upsample(mask, after.size)


def iou(truth: np.ndarray, pred: np.ndarray) -> float:
    union = (truth | pred).sum()
    return float((truth & pred).sum() / union) if union else 1.0


#: the distractors that leave a per-pixel difference on unchanged pixels (sensor noise, JPEG,
#: resampling by a sub-pixel camera shift); the others (none, tone changes, integer shifts) are
#: clean once aligned. The size classes are also reported for each kind, and for each of these.
NOISY_DISTRACTORS = ("noise", "jpeg", "subpixel", "combined")


#: a change whose truth has fewer pixels than this (under a 4x4 object at the pair's size:
#: nothing a caption names) is reported on its own row, not in the classes; the toolkit drops
#: clusters under ``MaskParams.min_region`` (12) pixels by design, so it finds none of them
MIN_TRUTH_PIXELS = 16


def score(pairs, method) -> dict:
    """IoU (with precision and recall) per report group, distractor-only areas, speed at 224x224."""
    groups, areas = defaultdict(list), []
    seconds, n_timed = 0.0, 0
    for p in pairs:
        t = time.perf_counter()
        pred = method(p.before, p.after)
        if p.image_size == (224, 224):
            seconds += time.perf_counter() - t
            n_timed += 1
        if p.change == "none":
            areas.append(float(pred.mean()))
            continue
        inter = float((p.truth & pred).sum())
        value = (iou(p.truth, pred), inter / max(1.0, float(pred.sum())), inter / max(1.0, float(p.truth.sum())))
        w, h = p.image_size
        kind = "noisy" if p.distractor in NOISY_DISTRACTORS else "clean"
        keys = ("all", f"size class {p.size_class}", f"shape {p.shape}", f"change {p.change}", f"image {w}x{h}",
                f"under {p.distractor}", f"{kind}: size class {p.size_class}", f"{kind}: all")
        if kind == "noisy":  # which noisy distractor holds a size class back
            keys += (f"under {p.distractor}: size class {p.size_class}",)
        if p.truth.sum() < MIN_TRUTH_PIXELS:
            keys = (f"changes under {MIN_TRUTH_PIXELS} px",)
        for key in keys:
            groups[key].append(value)
    return {"groups": {k: tuple(float(x) for x in np.mean(v, axis=0)) + (len(v),) for k, v in groups.items()},
            "area_mean": float(np.mean(areas)), "area_max": float(np.max(areas)),
            "pairs_per_s": n_timed / seconds if seconds else float("nan")}


#: each step's parameters set to what turns the step off (``--ablate``)
STEP_OFF = {
    "noise_k": {"noise_k": 0.0},
    "max_shift": {"max_shift": 0},
    "subpixel": {"subpixel": False},
    "grow": {"grow": 0},
    "clean pairs: clean_noise, clean_subpixel": {"clean_noise": 0.0},
    "clean_min_samples, clean_min_region": {"clean_min_samples": 6, "clean_min_region": 0},
    "texture_grow_k": {"texture_grow_k": 0.0},
    "prune_k, prune_pixels": {"prune_k": 0.0},
}
#: a parameter stays when turning its step off costs at least this much held-out mean IoU on
#: both mask kinds
KEEP_IF_GAIN = 0.005


def photo_set(name: str):
    from photo_pairs import all_photographs, heldout_photographs

    return heldout_photographs() if name == "heldout" else all_photographs()


def ablate(pairs, params, steps=None) -> None:
    """Each step of :data:`STEP_OFF` (or of ``steps``) off in turn, both mask kinds: mean IoU over
    the change pairs, the distractor-only area, and whether the step earns its parameters."""
    change_pairs = [p for p in pairs if p.change != "none" and p.truth.sum() >= MIN_TRUTH_PIXELS]
    still = [p for p in pairs if p.change == "none"]

    def measure(q: MaskParams) -> tuple[float, float]:
        from idc_toolkit.masks.diff import compute_change_mask

        ious = [iou(p.truth, compute_change_mask(p.before, p.after, q).mask) for p in change_pairs]
        areas = [float(compute_change_mask(p.before, p.after, q).mask.mean()) for p in still]
        return float(np.mean(ious)), float(np.max(areas))

    kinds = {"whole objects": params, "per pixel": replace(params, fill_holes=False)}
    base = {kind: measure(q) for kind, q in kinds.items()}
    print(f"{len(change_pairs)} change pairs, {len(still)} distractor-only pairs")
    print("| step off | " + " | ".join(f"{k}: mean IoU (gain of the step) | {k}: distractor-only max" for k in kinds) + " | kept |")
    print("| --- | " + " | ".join("---: | ---:" for _ in kinds) + " | --- |")
    print("| (defaults) | " + " | ".join(f"{base[k][0]:.4f} | {100 * base[k][1]:.2f}%" for k in kinds) + " | |")
    for step, off in STEP_OFF.items():
        if steps and step not in steps:
            continue
        row, keep = [], True
        for kind, q in kinds.items():
            value, area = measure(replace(q, **off))
            gain = base[kind][0] - value
            keep &= gain >= KEEP_IF_GAIN
            row.append(f"{value:.4f} ({gain:+.4f}) | {100 * area:.2f}%")
        print(f"| {step} | " + " | ".join(row) + f" | {'yes' if keep else 'no'} |", flush=True)


def main() -> None:
    from photo_pairs import IMAGE_SIZES, SHAPES, SIZE_CLASSES, WIDE_CHANGES, wide_pairs

    from idc_toolkit.masks.diff import compute_change_mask

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--photos", choices=("heldout", "tuning"), default="heldout",
                   help="the held-out photographs (what is reported) or the ones the parameters were chosen on")
    p.add_argument("--photos-per-cell", type=int, default=2, help="photographs per (size, change, shape, size class) cell")
    p.add_argument("--seed", type=int, help="the draw of donors, places, shares and distractors (default: 1 held out, 0 tuning)")
    p.add_argument("--skip-naive", action="store_true")
    p.add_argument("--ablate", nargs="*", metavar="STEP",
                   help="measure each step of the pipeline (or these, STEP_OFF's names) against the pipeline without it")
    p.add_argument("--sizes", nargs="+", default=[f"{w}x{h}" for w, h in IMAGE_SIZES], help="image sizes, WxH")
    p.add_argument("--sam-checkpoint", help="also measure the masks refined by this Segment Anything checkpoint")
    p.add_argument("--sam-type", default="vit_h", help="vit_h | vit_l | vit_b | tiny")
    p.add_argument("--keep-unmatched", action="store_true", help="with SAM: keep the diff region of an unconfirmed cluster")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else (1 if args.photos == "heldout" else 0)
    params = MaskParams(keep_unmatched=args.keep_unmatched)
    photos = photo_set(args.photos)
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes]
    pairs = wide_pairs(seed, args.photos_per_cell, sizes, photos)
    print(f"diff-only change masks on the {args.photos} photographs ({len(photos)}), seed {seed}, one core")
    if args.ablate is not None:
        ablate(pairs, params, args.ablate)
        return
    print(f"params {params.to_dict()}")
    unfilled = replace(params, fill_holes=False)
    methods = {"idc-toolkit": lambda b, a: compute_change_mask(b, a, params).mask,
               "idc-toolkit --no-fill-holes": lambda b, a: compute_change_mask(b, a, unfilled).mask}
    if args.sam_checkpoint:
        from idc_toolkit.masks.sam import SamRefiner, load_sam

        refiner = SamRefiner(load_sam(args.sam_checkpoint, args.sam_type, "cpu"))
        methods["idc-toolkit + SAM"] = lambda b, a: compute_change_mask(b, a, params, refiner).mask
    if not args.skip_naive:
        methods["naive DAVIR"] = naive_davir_mask
    n_change = sum(p.change != "none" for p in pairs)
    print(f"{n_change} change pairs, {len(pairs) - n_change} distractor-only pairs\n")
    results = {name: score(pairs, m) for name, m in methods.items()}
    names = list(results)
    order = (["all"] + [f"size class {n}" for n, _, _ in SIZE_CLASSES] + [f"shape {s}" for s in SHAPES]
             + [f"change {c}" for c in WIDE_CHANGES] + sorted(k for k in results[names[0]]["groups"] if k.startswith("image"))
             + sorted(k for k in results[names[0]]["groups"] if k.startswith("under"))
             + [f"{kind}: {what}" for kind in ("clean", "noisy") for what in ["all"] + [f"size class {n}" for n, _, _ in SIZE_CLASSES]]
             + [f"changes under {MIN_TRUTH_PIXELS} px"])
    print("| mean IoU (precision / recall), pairs | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---:" for _ in names) + " |")
    for key in order:
        if key not in results[names[0]]["groups"]:
            continue
        cells = []
        for n in names:
            iou_, prec, rec, count = results[n]["groups"][key]
            cells.append(f"{iou_:.3f} ({prec:.2f} / {rec:.2f})")
        label = f"**{key}**" if key == "all" or key.startswith("size") or key.startswith("image") else key
        print(f"| {label} ({int(results[names[0]]['groups'][key][3])}) | " + " | ".join(cells) + " |")
    print("| distractor-only area mean (<= 0.3%) | " + " | ".join(f"{100 * results[n]['area_mean']:.2f}%" for n in names) + " |")
    print("| distractor-only area max (<= 2%) | " + " | ".join(f"{100 * results[n]['area_max']:.2f}%" for n in names) + " |")
    print("| pairs/s at 224x224, one core (>= 50) | " + " | ".join(f"{results[n]['pairs_per_s']:.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()

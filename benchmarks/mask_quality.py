"""Diff-only change masks on pairs made from real photographs, next to DAVIR's naive recipe.

Pairs (``photo_pairs.realistic_pairs``): 8 real photographs that ship inside pip packages
(scikit-image, scikit-learn, matplotlib); changes made at the photo's own resolution — an
object added, removed, recoloured, moved, a thin object (legs with gaps) added, a
low-contrast patch — each under every distractor (none, brightness, contrast, gamma, JPEG,
sensor noise, integer camera shift 1-3 px, sub-pixel shift, all combined), plus every
distractor alone on every photo; at two resolutions (224 and 448 pixels). Ground truth: every
after-image pixel the edit changed by more than 10 levels.

Printed, for the toolkit's pipeline (``MaskParams()``) and for the naive recipe of DAVIR §3.1
as the paper states it (``|after - before| > delta`` on grey levels, scikit-learn DBSCAN over
the changed pixels, union of the clusters' boxes), on the same pairs: mean IoU per change type
and per distractor, masked area of the distractor-only pairs (mean, largest), pairs/s at
224x224 on one core.

Goals (diff-only): mean IoU >= 0.90 over change pairs; distractor-only area <= 0.3% mean and
<= 2% max; >= 50 pairs/s at 224x224 on one core.

    python benchmarks/mask_quality.py [--per-cell 4] [--sizes 224 448] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402


def naive_davir_mask(before: Image.Image, after: Image.Image, delta: float = 32.0, eps: float = 2.0,
                     min_samples: int = 6, resize: int = 224) -> np.ndarray:
    """DAVIR §3.1 read literally: grey difference > delta, DBSCAN, union of cluster boxes."""
    from sklearn.cluster import DBSCAN

    from idc_toolkit.masks.diff import upsample, working_pair

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


def score(pairs, method) -> dict:
    by_change, by_distractor, areas = defaultdict(list), defaultdict(list), []
    t = time.perf_counter()
    preds = [method(p.before, p.after) for p in pairs]
    seconds = time.perf_counter() - t
    for p, pred in zip(pairs, preds):
        if p.change == "none":
            areas.append(float(pred.mean()))
        else:
            v = iou(p.truth, pred)
            by_change[p.change].append(v)
            by_distractor[p.distractor].append(v)
    all_iou = [v for vals in by_change.values() for v in vals]
    return {"by_change": {k: float(np.mean(v)) for k, v in by_change.items()},
            "by_distractor": {k: float(np.mean(v)) for k, v in by_distractor.items()},
            "mean_iou": float(np.mean(all_iou)), "area_mean": float(np.mean(areas)), "area_max": float(np.max(areas)),
            "pairs_per_s": len(pairs) / seconds}


def main() -> None:
    from photo_pairs import realistic_pairs

    from idc_toolkit.masks.diff import MaskParams, compute_change_mask

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per-cell", type=int, default=4, help="photos per (change, distractor) cell")
    p.add_argument("--sizes", type=int, nargs="+", default=[224, 448])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-naive", action="store_true")
    args = p.parse_args()
    params = MaskParams()
    methods = {"idc-toolkit": lambda b, a: compute_change_mask(b, a, params).mask}
    if not args.skip_naive:
        methods["naive DAVIR"] = naive_davir_mask
    print(f"diff-only change masks, params {params.to_dict()}")
    for size in args.sizes:
        pairs = realistic_pairs(size, args.per_cell, args.seed)
        n_change = sum(p.change != "none" for p in pairs)
        print(f"\n## {size}x{size}: {n_change} change pairs, {len(pairs) - n_change} distractor-only pairs, one core")
        results = {name: score(pairs, m) for name, m in methods.items()}
        names = list(results)
        print(f"| {'':24s} | " + " | ".join(f"{n:>12s}" for n in names) + " |")
        print("| --- | " + " | ".join("---:" for _ in names) + " |")
        rows = [(f"IoU {k}", [results[n]["by_change"][k] for n in names]) for k in results[names[0]]["by_change"]]
        rows += [(f"IoU under {k}", [results[n]["by_distractor"][k] for n in names]) for k in results[names[0]]["by_distractor"]]
        for label, vals in rows:
            print(f"| {label:24s} | " + " | ".join(f"{v:12.3f}" for v in vals) + " |")
        print(f"| {'**mean IoU (goal >= 0.90)**':24s} | " + " | ".join(f"{results[n]['mean_iou']:12.3f}" for n in names) + " |")
        print(f"| {'distractor area mean (<= 0.3%)':24s} | " + " | ".join(f"{100 * results[n]['area_mean']:11.2f}%" for n in names) + " |")
        print(f"| {'distractor area max (<= 2%)':24s} | " + " | ".join(f"{100 * results[n]['area_max']:11.2f}%" for n in names) + " |")
        print(f"| {'pairs/s (>= 50 at 224)':24s} | " + " | ".join(f"{results[n]['pairs_per_s']:12.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()

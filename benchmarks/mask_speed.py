"""Speed of diff-only change masks at 224x224 on one core: grid DBSCAN vs scikit-learn's.

Both pipelines run the same alignment and threshold; the naive one clusters every changed
pixel with ``sklearn.cluster.DBSCAN``. Prints pairs/s of each and checks that the cluster
labels are identical on every pair. Target: >= 50 pairs/s for the toolkit's pipeline.

    python benchmarks/mask_speed.py [--pairs 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402


def main() -> None:
    from sklearn.cluster import DBSCAN

    from idc_toolkit.masks.clustering import clusters_from_labels, grid_dbscan
    from idc_toolkit.masks.diff import changed_pixels
    from idc_toolkit.masks.distances import working_pair
    from idc_toolkit.masks.params import MaskParams
    from idc_toolkit.demo.generator import generate_demo_release

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--noise", type=float, default=16.0, help="sensor noise of the second run (0-255 levels)")
    args = p.parse_args()
    params = MaskParams()
    with tempfile.TemporaryDirectory() as tmp:
        raw = generate_demo_release(Path(tmp) / "raw", n_per_type=max(1, args.pairs // 10), size=(224, 224), seed=3)
        pairs = []
        for f in sorted((raw / "images").iterdir()):
            sid = f.stem.split("_")[-1]
            before = Image.open(f).copy()
            pairs.append((before, Image.open(raw / "sc_images" / f"CLEVR_semantic_{sid}.png").copy()))
            pairs.append((before, Image.open(raw / "nsc_images" / f"CLEVR_nonsemantic_{sid}.png").copy()))
    pairs = pairs[: args.pairs]

    def run(cluster_fn):
        labels_all = []
        clustering = 0.0
        t = time.perf_counter()
        for before, after in pairs:
            b, a = working_pair(before, after, params.resize)
            changed = changed_pixels(b, a, params).mask
            t0 = time.perf_counter()
            labels = cluster_fn(changed)
            clustering += time.perf_counter() - t0
            clusters_from_labels(labels, params)
            labels_all.append(labels)
        return time.perf_counter() - t, labels_all, clustering

    def sklearn_labels(changed):
        labels = np.full(changed.shape, -1, dtype=np.int32)
        pts = np.argwhere(changed)
        if len(pts):
            labels[changed] = DBSCAN(eps=params.eps, min_samples=params.min_samples).fit(pts).labels_
        return labels

    print(f"{len(pairs)} pairs at 224x224 (half semantic changes, half distractors), one core")
    rng = np.random.default_rng(0)
    noisy = [
        tuple(Image.fromarray(np.clip(np.asarray(im, dtype=np.float32) + rng.normal(0, args.noise, (224, 224, 3)), 0, 255).astype(np.uint8))
              for im in pair)
        for pair in pairs
    ]
    for name, data in (("clean demo pairs", pairs), (f"with sensor noise (sigma {args.noise})", noisy)):
        pairs[:] = data
        t_grid, grid, c_grid = run(lambda m: grid_dbscan(m, params.eps, params.min_samples))
        t_naive, naive, c_naive = run(sklearn_labels)
        same = sum(np.array_equal(g, n) for g, n in zip(grid, naive))
        changed = np.mean([int((g >= 0).sum()) for g in grid])
        print(f"{name}: {changed:.0f} clustered pixels per pair on average")
        print(f"  toolkit (grid DBSCAN):   {len(pairs) / t_grid:7.1f} pairs/s  (clustering {1000 * c_grid / len(pairs):6.2f} ms/pair)")
        print(f"  naive (sklearn DBSCAN):  {len(pairs) / t_naive:7.1f} pairs/s  (clustering {1000 * c_naive / len(pairs):6.2f} ms/pair)")
        print(f"  identical cluster labels on {same}/{len(pairs)} pairs")


if __name__ == "__main__":
    main()

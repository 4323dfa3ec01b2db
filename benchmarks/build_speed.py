"""Build speed and memory: idc-build vs the naive ``datasets`` paths, on the same raw tree.

Generates a Spot-the-Diff-shaped raw tree (default 10,000 pairs of 224x224 PNGs), then builds
it, each variant in its own process so peak RSS is its own, and prints pairs/s and peak RSS:

  idc-build              the spot_the_diff builder (checks every image, shards, card, report)
  naive (as specified)   Dataset.from_dict(paths) + cast_column(Image()) + to_parquet
                         (NB: stores file paths, not image bytes: the output is not Hub-ready)
  naive + embed          the same, plus embed_table_storage (what push_to_hub does) so the
                         parquet holds the images, as idc-build's does
  naive PIL              from_generator yielding PIL images (decode + re-encode every image)

    python benchmarks/build_speed.py [--pairs 10000] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_raw_tree(root: Path, n_pairs: int, seed: int = 0) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    images = root / "data" / "resized_images"
    images.mkdir(parents=True, exist_ok=True)
    # 64 distinct photo-like images (smooth structure + sensor noise), ~60-90 KB as PNG
    pool = []
    for _ in range(64):
        base = rng.integers(0, 255, size=(14, 14, 3)).astype(np.uint8)
        img = np.asarray(Image.fromarray(base).resize((224, 224), Image.BICUBIC), dtype=np.int16)
        img = np.clip(img + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
        buf = Image.fromarray(img)
        path = root / "pool.png"
        buf.save(path)
        pool.append(path.read_bytes())
    (root / "pool.png").unlink()
    ann = {"train": [], "val": [], "test": []}
    for i in range(n_pairs):
        (images / f"{i}.png").write_bytes(pool[i % 64])
        (images / f"{i}_2.png").write_bytes(pool[(i * 7 + 3) % 64])
        split = "train" if i % 10 < 8 else ("val" if i % 10 == 8 else "test")
        ann[split].append({"img_id": str(i), "sentences": [f"the car number {i} is gone", "a person appeared"]})
    (root / "data" / "annotations").mkdir(parents=True, exist_ok=True)
    for split, items in ann.items():
        (root / "data" / "annotations" / f"{split}.json").write_text(json.dumps(items))


def _rows(raw: Path):
    for split in ("train", "val", "test"):
        for it in json.loads((raw / "data" / "annotations" / f"{split}.json").read_text()):
            i = it["img_id"]
            yield split, i, str(raw / "data/resized_images" / f"{i}.png"), str(raw / "data/resized_images" / f"{i}_2.png"), it["sentences"]


def child(mode: str, raw: Path, out: Path) -> None:
    t = time.perf_counter()
    if mode == "idc":
        from idc_toolkit.builders import make_builder
        from idc_toolkit.building.pipeline import build_dataset

        result = build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
        n = sum(result.report.rows.values())
    else:
        from datasets import Dataset, Features, Image, List, Value

        rows = list(_rows(raw))
        n = len(rows)
        features = Features({"pair_id": Value("string"), "before": Image(), "after": Image(), "captions": List(Value("string"))})
        out.mkdir(parents=True, exist_ok=True)
        for split in ("train", "val", "test"):
            sel = [r for r in rows if r[0] == split]
            if mode == "naive_pil":
                from PIL import Image as PILImage

                def gen(sel=sel):
                    for _, i, b, a, caps in sel:
                        yield {"pair_id": i, "before": PILImage.open(b).convert("RGB"), "after": PILImage.open(a).convert("RGB"), "captions": caps}

                ds = Dataset.from_generator(gen, features=features, cache_dir=str(out / "cache"))
            else:
                ds = Dataset.from_dict({"pair_id": [r[1] for r in sel], "before": [r[2] for r in sel],
                                        "after": [r[3] for r in sel], "captions": [r[4] for r in sel]})
                ds = ds.cast_column("before", Image()).cast_column("after", Image())
                if mode == "naive_embed":
                    from datasets.table import embed_table_storage

                    ds = ds.with_format("arrow").map(embed_table_storage, batched=True).with_format(None)
            ds.to_parquet(str(out / f"{split}.parquet"))
    elapsed = time.perf_counter() - t
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": mode, "pairs": n, "seconds": elapsed, "peak_rss_mb": rss_mb}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=10_000)
    p.add_argument("--workdir")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--modes", nargs="+", default=["idc", "naive", "naive_embed", "naive_pil"],
                   help="which paths to run (idc, naive, naive_embed, naive_pil)")
    p.add_argument("--child", nargs=3, metavar=("MODE", "RAW", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    work = Path(args.workdir or tempfile.mkdtemp(prefix="idc_build_bench_"))
    raw = work / "raw"
    if not (raw / "data" / "annotations" / "test.json").is_file():
        t = time.perf_counter()
        make_raw_tree(raw, args.pairs)
        print(f"raw tree: {args.pairs} pairs of 224x224 PNGs in {time.perf_counter() - t:.1f} s ({work})")
    results = {}
    for mode in args.modes:
        out = work / f"out_{mode}"
        shutil.rmtree(out, ignore_errors=True)
        proc = subprocess.run([sys.executable, __file__, "--child", mode, str(raw), str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{mode}: failed\n{proc.stderr[-2000:]}")
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        size = sum(f.stat().st_size for f in out.rglob("*.parquet"))
        res["parquet_mb"] = size / 1024**2
        results[mode] = res
    labels = {"idc": "idc-build", "naive": "naive (as specified)", "naive_embed": "naive + embed", "naive_pil": "naive PIL"}
    print(f"{'path':22s} {'pairs/s':>9s} {'seconds':>8s} {'peak RSS MB':>12s} {'parquet MB':>11s}")
    for mode, r in results.items():
        print(f"{labels[mode]:22s} {r['pairs'] / r['seconds']:9.0f} {r['seconds']:8.1f} {r['peak_rss_mb']:12.0f} {r['parquet_mb']:11.1f}")
    if "idc" in results:
        ours = results["idc"]["pairs"] / results["idc"]["seconds"]
        for mode in ("naive", "naive_embed", "naive_pil"):
            if mode in results:
                other = results[mode]["pairs"] / results[mode]["seconds"]
                print(f"idc-build vs {labels[mode]}: {ours / other:.1f} x pairs/s")
    if not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Real photographs that ship inside pip packages, and change pairs made from them.

Photos: scikit-image's data folder (astronaut, coffee, chelsea, rocket, immunohistochemistry),
scikit-learn's sample images (china, flower) and matplotlib's sample data (Grace Hopper).
A pair is a photo and the same photo with a patch of another photo pasted in (an object
added), seeded, so every run of a benchmark sees the same pairs.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image


def photographs() -> list[Image.Image]:
    import matplotlib.cbook as cbook
    import skimage.data as skd
    from sklearn.datasets import load_sample_images

    photos = [Image.fromarray(getattr(skd, name)()) for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")]
    photos += [Image.fromarray(a) for a in load_sample_images().images]
    with cbook.get_sample_data("grace_hopper.jpg") as fh:
        photos.append(Image.open(fh).convert("RGB"))
    return photos


def pasted_pairs(n: int, size: int = 224, seed: int = 0) -> list[tuple[Image.Image, Image.Image]]:
    rng = np.random.default_rng(seed)
    photos = [p.resize((size, size), Image.BICUBIC) for p in photographs()]
    pairs = []
    for k in range(n):
        before = photos[k % len(photos)]
        donor = np.asarray(photos[(k + 1 + int(rng.integers(0, len(photos) - 1))) % len(photos)])
        h, w = (int(rng.integers(size // 8, size // 3)) for _ in range(2))
        y, x = int(rng.integers(0, size - h)), int(rng.integers(0, size - w))
        sy, sx = int(rng.integers(0, size - h)), int(rng.integers(0, size - w))
        after = np.asarray(before).copy()
        after[y:y + h, x:x + w] = donor[sy:sy + h, sx:sx + w]
        pairs.append((before, Image.fromarray(after)))
    return pairs


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def write_pairs_dataset(folder: Path, pairs: list[tuple[Image.Image, Image.Image]], split: str = "train") -> Path:
    """A dataset folder in the toolkit's schema holding ``pairs``: one parquet file with
    100-row row groups, as ``idc-build`` and ``push_to_hub`` write image datasets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from idc_toolkit.schema import pair_features

    features = pair_features()
    rows = [{"pair_id": str(k), "before": {"bytes": _png(b), "path": None}, "after": {"bytes": _png(a), "path": None},
             "captions": ["something was added"]} for k, (b, a) in enumerate(pairs)]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
    pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet", row_group_size=100)
    return folder

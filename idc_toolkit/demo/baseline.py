"""A nearest-neighbour captioning baseline for the demo (no learning, no torch).

Each pair is described by its brightness-normalised difference image, downsampled to a small
grid; a test pair gets the first caption of the training pair whose difference image is
closest. It is the classic retrieval baseline of captioning papers: good enough to show a
real per-category table (no-change pairs are easy, fine-grained changes are not).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

GRID = (32, 24)


def _gray(cell: Any) -> np.ndarray:
    img = cell if isinstance(cell, Image.Image) else Image.open(io.BytesIO(cell["bytes"]))
    arr = np.asarray(img.convert("L").resize(GRID, Image.BILINEAR), dtype=np.float32)
    return (arr - arr.mean()) / (arr.std() + 1e-6)  # illumination shifts cancel out


def difference_features(rows) -> np.ndarray:
    return np.stack([np.abs(_gray(r["after"]) - _gray(r["before"])).ravel() for r in rows])


def nearest_neighbour_predictions(train_rows, test_rows) -> dict[str, str]:
    train_feats = difference_features(train_rows)
    test_feats = difference_features(test_rows)
    dists = ((test_feats[:, None, :] - train_feats[None, :, :]) ** 2).sum(-1)
    nearest = dists.argmin(axis=1)
    return {row["pair_id"]: train_rows[int(j)]["captions"][0] for row, j in zip(test_rows, nearest)}


def best_constant_caption(train_rows, val_rows, candidates: int = 50) -> tuple[str, float]:
    """The train caption that, written for every pair of ``val_rows`` (the validation split: it is
    chosen there and reported on the test split), has the highest CIDEr-D, and that CIDEr: the
    ``candidates`` most frequent train captions are tried (a constant caption scores by being
    common), each scored as its own coco-caption evaluation in one pass of the scorer."""
    from collections import Counter

    from ..metrics.core import score_groups

    counts = Counter(c for row in train_rows for c in row["captions"] if c.strip())
    tried = [c for c, _ in counts.most_common(candidates)]
    hypotheses, references, groups = {}, {}, {}
    for k, caption in enumerate(tried):
        ids = [f"{k}|{row['pair_id']}" for row in val_rows]
        hypotheses.update(dict.fromkeys(ids, caption))
        references.update({i: row["captions"] for i, row in zip(ids, val_rows)})
        groups[str(k)] = ids
    result = score_groups(hypotheses, references, groups, ["CIDEr"])
    best = max(range(len(tried)), key=lambda k: result.groups[str(k)].scores["CIDEr"])
    return tried[best], result.groups[str(best)].scores["CIDEr"]

"""Recall of retrieved change entities against each pair's own reference phrases.

Reads a dataset written by ``idc-precompute entities`` and prints, for k = 1, 3, 5:
hit@k (share of pairs with at least one of the top-k entities among its ``gt_entities``) and
recall@k (|top-k ∩ gt| / min(k, |gt|), averaged). Meaningful only with real CLIP weights:
the script reads the pass parameters from the dataset card and says so loudly otherwise.

    python benchmarks/entity_recall.py --dataset DIR [--split test]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pyarrow.parquet as pq


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", default="test")
    args = p.parse_args()
    folder = Path(args.dataset)
    card = (folder / "README.md").read_text(encoding="utf-8")
    m = re.search(r"## Change entities.*?```json\n(.*?)\n```", card, re.S)
    params = json.loads(m.group(1)) if m else {}
    if params.get("clip_random_weights", True):
        print("WARNING: this dataset's entities were retrieved with RANDOM CLIP weights (no --clip-checkpoint):")
        print("WARNING: the numbers below measure nothing but chance. Rerun idc-precompute entities with real weights.")
    rows = [r for f in sorted((folder / "data").glob(f"{args.split}-*.parquet"))
            for r in pq.read_table(f, columns=["entities", "gt_entities"]).to_pylist()]
    rows = [r for r in rows if r["gt_entities"]]
    print(f"{len(rows)} {args.split} pairs with reference phrases; strategy {params.get('strategy')}, "
          f"model {params.get('clip_model')}, checkpoint {params.get('clip_checkpoint')}")
    for k in (1, 3, 5):
        hits = [bool(set(r["entities"][:k]) & set(r["gt_entities"])) for r in rows]
        recall = [len(set(r["entities"][:k]) & set(r["gt_entities"])) / min(k, len(r["gt_entities"])) for r in rows]
        print(f"k={k}: hit@k {sum(hits) / max(1, len(rows)):.3f}   recall@k {sum(recall) / max(1, len(rows)):.3f}")


if __name__ == "__main__":
    main()

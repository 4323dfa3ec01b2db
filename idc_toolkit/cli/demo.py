"""``idc-demo``: the whole toolkit on embedded data, offline, in about a minute.

generate a CLEVR-Change-format raw release -> ``idc-build clevr_change`` -> change masks
(``idc-precompute masks``, diff-only) -> a nearest-neighbour baseline -> ``idc-eval`` with the
per-category table. Every step goes through the same code
as real data. Rerunning resumes: a finished build is reused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import IDCError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="idc-demo", description="Run idc-toolkit end to end on embedded demo data.")
    p.add_argument("--out", default="idc_demo", help="working folder (default ./idc_demo)")
    p.add_argument("--n-per-type", type=int, default=40, help="scene ids per change type (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-eval", action="store_true", help="stop after building the dataset")
    args = p.parse_args(argv)
    out = Path(args.out)
    try:
        from ..build import build_dataset, make_builder
        from ..demo.generator import generate_demo_release

        raw = out / "raw"
        if not (raw / "splits.json").is_file():
            print(f"[1/5] generating the demo raw release (CLEVR-Change format) in {raw}")
            generate_demo_release(raw, n_per_type=args.n_per_type, seed=args.seed)
        else:
            print(f"[1/5] reusing the demo raw release in {raw}")
        print("[2/5] building it with the clevr_change builder")
        result = build_dataset(make_builder("clevr_change", raw), out / "clevr_change_demo", progress=False)
        print(result.report.summary())
        if args.no_eval:
            return 0
        from ..mask_pass import add_change_masks

        print("[3/5] change masks (diff clusters; pass --sam-checkpoint to idc-precompute for SAM masks)")
        masks = add_change_masks(out / "clevr_change_demo", out / "clevr_change_demo_masks", progress=False)
        print(f"{masks.out_dir}: change_mask, change_boxes, mask_source added")
        from datasets import load_dataset

        from ..demo.baseline import nearest_neighbour_predictions

        print("[4/5] nearest-neighbour baseline: train -> test")
        ds = load_dataset(str(out / "clevr_change_demo_masks"))
        preds = nearest_neighbour_predictions(list(ds["train"]), list(ds["test"]))
        pred_path = out / "baseline_predictions.json"
        pred_path.write_text(json.dumps(preds, indent=1))
        print("[5/5] scoring with idc-eval (per-category breakdown)")
        from .eval import main as eval_main

        return eval_main(["--predictions", str(pred_path), "--dataset", str(out / "clevr_change_demo_masks"),
                          "--split", "test", "--out", str(out / "eval"), "--bootstrap", "200"])
    except IDCError as exc:
        print(f"idc-demo: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

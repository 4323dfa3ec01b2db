"""``idc-demo``: the whole toolkit on embedded data, offline, in about a minute.

generate a CLEVR-Change-format raw release -> ``idc-build clevr_change`` -> change masks
(``idc-precompute masks``, diff-only) -> change entities (spaCy phrases; open_clip retrieval,
with a tiny RANDOM model unless ``--clip-checkpoint`` is given: a pipeline check, not a
result) -> a nearest-neighbour baseline -> ``idc-eval`` with the per-category table. Every step goes through the same code
as real data. Rerunning resumes: a finished build is reused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import common


def main(argv: list[str] | None = None) -> int:
    p = common.parser("idc-demo", "Run idc-toolkit end to end on embedded procedural demo data (not a real release).")
    p.add_argument("--out", default="idc_demo", help="working folder")
    p.add_argument("--n-per-type", type=int, default=40, help="scene ids per change type")
    p.add_argument("--seed", type=int, default=0, help="seed of the procedural generator")
    p.add_argument("--no-eval", action="store_true", help="stop after building the dataset")
    p.add_argument("--clip-model", help="open_clip model for the entities step (default: a tiny random one)")
    p.add_argument("--clip-checkpoint", help="open_clip weights for --clip-model")
    p.add_argument("--with-model", action="store_true",
                   help="also caption the test split with a tiny RANDOM BLIP2IDC checkpoint through idc-eval --model")
    args = p.parse_args(argv)
    common.setup_logging(args)
    return common.run("idc-demo", lambda: _demo(args))


def _demo(args) -> int:
    out = Path(args.out)
    from ..building import build_dataset
    from ..demo.generator import generate_demo_release

    raw = out / "raw"
    if not (raw / "splits.json").is_file():
        print(f"[1/6] generating the demo raw release (CLEVR-Change format) in {raw}")
        generate_demo_release(raw, n_per_type=args.n_per_type, seed=args.seed)
    else:
        print(f"[1/6] reusing the demo raw release in {raw}")
    print("[2/6] building it with the clevr_change builder")
    from ..demo.builder import DemoClevrChange

    result = build_dataset(DemoClevrChange(raw), out / "clevr_change_demo", progress=False)
    print(result.report.summary())
    if args.no_eval:
        return 0
    from ..masks import add_change_masks

    print("[3/6] change masks (diff clusters; pass --sam-checkpoint to idc-precompute for SAM masks)")
    masks = add_change_masks(out / "clevr_change_demo", out / "clevr_change_demo_masks", progress=False)
    print(f"{masks.out_dir}: change_mask, change_boxes, mask_source added")
    from importlib import resources

    from ..entities import add_change_entities

    tiny = args.clip_model is None
    print("[4/6] change entities" + (" (tiny RANDOM open_clip: checks the pipeline, the entities mean nothing)" if tiny else ""))
    config = resources.files("idc_toolkit.demo").joinpath("idc-demo-tiny-clip.json")
    with resources.as_file(config) as config_path:
        ents = add_change_entities(out / "clevr_change_demo_masks", out / "clevr_change_demo_entities",
                                   args.clip_model or "idc-demo-tiny-clip", args.clip_checkpoint,
                                   str(config_path) if tiny else None, top_k=3, device="cpu", progress=False,
                                   random_weights=args.clip_checkpoint is None)
    print(f"{ents.out_dir}: entities, entity_scores, gt_entities added (vocabulary: entities_vocab.json)")
    from datasets import load_dataset

    from ..demo.baseline import nearest_neighbour_predictions

    print("[5/6] nearest-neighbour baseline: train -> test")
    ds = load_dataset(str(out / "clevr_change_demo_entities"))
    preds = nearest_neighbour_predictions(list(ds["train"]), list(ds["test"]))
    pred_path = out / "baseline_predictions.json"
    pred_path.write_text(json.dumps(preds, indent=1))
    print("[6/6] scoring with idc-eval (per-category breakdown)")
    from .eval import main as eval_main

    code = eval_main(["--predictions", str(pred_path), "--dataset", str(out / "clevr_change_demo_entities"),
                      "--split", "test", "--out", str(out / "eval"), "--bootstrap", "200"])
    if code or not args.with_model:
        return code
    from transformers import Blip2ForConditionalGeneration

    from ..models.tiny import blip2idc_targets, save_lora_adapter, save_tiny_blip2

    print("[+] a tiny RANDOM BLIP2IDC checkpoint (base + LoRA adapter) through idc-eval --model: a pipeline check")
    base = out / "models" / "tiny_blip2"
    adapter = out / "models" / "tiny_blip2idc_lora"
    if not (adapter / "adapter_config.json").is_file():
        save_tiny_blip2(base)
        save_lora_adapter(Blip2ForConditionalGeneration.from_pretrained(base), adapter, blip2idc_targets(2))
    return eval_main(["--model", "blip2idc", "--base-model", str(base), "--adapter", str(adapter), "--dataset",
                      str(out / "clevr_change_demo_entities"), "--split", "test", "--out", str(out / "eval_blip2idc"),
                      "--device", "cpu", "--metrics", "BLEU", "METEOR", "ROUGE_L", "CIDEr"])


if __name__ == "__main__":
    sys.exit(main())

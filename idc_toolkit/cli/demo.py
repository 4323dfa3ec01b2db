"""``idc-demo``: the whole toolkit on embedded data, offline, in about a minute.

generate a CLEVR-Change-format raw release -> ``idc-build clevr_change`` -> change masks
(``idc-precompute masks``, diff-only) -> change entities (spaCy phrases; open_clip retrieval,
with a tiny RANDOM model unless ``--clip-checkpoint`` is given: a pipeline check, not a
result) -> a nearest-neighbour baseline -> ``idc-eval`` with the per-category table. Every step goes through the same code
as real data. Rerunning resumes: a finished build is reused. It also writes the inputs the docs' examples name
(:mod:`idc_toolkit.demo.examples`): a procedural release in Spot-the-Diff's layout, a folder of photographs, and the
baseline's predictions with the references as coco-caption and RCC files.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import checks
from ..options import add_options, check_fields, cli_fields, from_namespace, option
from . import common


@dataclass(kw_only=True)
class DemoArgs:
    """``idc-demo``'s options."""

    out: str = option("idc_demo", "working folder")
    n_per_type: int = option(100, "scene ids per change type (each gives a change and a no-change pair; split 60/20/20)",
                             check=checks.positive_int)
    seed: int = option(0, "seed of the procedural generator", check=checks.seed)
    evaluate: bool = option(True, "stop after building the dataset", flag="--no-eval")
    clip_model: Optional[str] = option(None, "open_clip model for the entities step (default: a tiny random one)")
    clip_checkpoint: Optional[str] = option(None, "open_clip weights for --clip-model")
    with_model: bool = option(False, "also fine-tune BLIP2IDC and DAVIR with idc-train from the tiny bases the package "
                                     "ships (pretrained on generated pairs), and score both beside the baselines and a "
                                     "tiny random Qwen2-VL run zero-shot with idc-eval --model vlm")
    train_epochs: int = option(3, "with --with-model: epochs of each idc-train run (the best on validation is kept)",
                               check=checks.positive_int)
    bootstrap: int = option(200, "bootstrap resamples of the baseline's table", check=checks.non_negative_int, metavar="N")

    def __post_init__(self) -> None:
        check_fields(self)


def make_parser():
    p = common.parser("idc-demo", "Run idc-toolkit end to end on embedded procedural demo data (not a real release).")
    add_options(p, DemoArgs, cli_fields(DemoArgs))
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)
    return common.run("idc-demo", lambda: _demo(from_namespace(DemoArgs, args)))


def _demo(args: DemoArgs) -> int:
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
    from ..demo.examples import write_my_pairs, write_spot_the_diff_release

    spot, mine = write_spot_the_diff_release(out / "spot-the-diff", args.seed), write_my_pairs(out / "my_pairs", args.seed)
    print(f"for the docs' examples: {spot} (procedural, in Spot-the-Diff's raw layout) and {mine} "
          "(a folder of your own pairs: before/, after/, captions.csv)")
    if not args.evaluate:
        return 0
    from ..masks import add_change_masks

    print("[3/6] change masks (diff clusters; pass --sam-checkpoint to idc-precompute for SAM masks)")
    masks = add_change_masks(out / "clevr_change_demo", out / "clevr_change_demo_masks", progress=False)
    print(f"{masks.out_dir}: change_mask, change_boxes, mask_source added")
    from importlib import resources

    from ..entities import EntityParams, add_change_entities

    tiny = args.clip_model is None
    print("[4/6] change entities" + (" (tiny RANDOM open_clip: checks the pipeline, the entities mean nothing)" if tiny else ""))
    config = resources.files("idc_toolkit.demo").joinpath("idc-demo-tiny-clip.json")
    with resources.as_file(config) as config_path:
        params = EntityParams(clip_model=args.clip_model or "idc-demo-tiny-clip", clip_checkpoint=args.clip_checkpoint,
                              clip_config=str(config_path) if tiny else None, top_k=3,
                              random_weights=args.clip_checkpoint is None)
        ents = add_change_entities(out / "clevr_change_demo_masks", out / "clevr_change_demo_entities", params,
                                   device="cpu", progress=False)
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
                      "--split", "test", "--out", str(out / "eval"), "--bootstrap", str(args.bootstrap),
                      "--name", "nearest-neighbour baseline"])
    if code:
        return code
    from ..demo.examples import write_scoring_files

    test = ds["test"].select_columns(["pair_id", "captions", "category"])
    labels = test.features["category"]
    coco, rcc = write_scoring_files(out, raw, preds, {r["pair_id"]: (r["captions"], labels.int2str(r["category"])) for r in test},
                                    labels.names)
    print(f"the baseline's predictions and the test references as coco-caption files: {coco}; as "
          f"RobustChangeCaptioning's: {rcc}")
    runs = [out / "eval"]
    if args.with_model:
        code = _with_models(args, out)
        if code:
            return code
        runs += [out / "eval_constant", out / "eval_blip2idc", out / "eval_davir", out / "eval_vlm"]
    return _write_pair_browser(out, runs)


def _write_pair_browser(out: Path, runs: list[Path]) -> int:
    """The pair browser of the demo's test split and its evaluations (idc-view)."""
    from ..viewer.site import write_site

    site = write_site(out / "view", dataset=str(out / "clevr_change_demo_entities"), splits=["test"], evaluations=runs,
                      title="idc-toolkit demo (procedural CLEVR-Change-style scenes)", overwrite=True, progress=False)
    print(f"\npair browser (idc-view): {site.n_pairs} test pairs, {len(site.systems)} system(s); open {site.index.resolve().as_uri()}")
    return 0


VLM_NAME = "Qwen2-VL (tiny, random, zero-shot)"
CONSTANT_NAME = "best constant caption"
#: the fine-tuning rate of both recipes on the demo's pretrained bases (chosen on the validation split)
DEMO_LR = "1e-3"
#: the reference both recipes train on, chosen on the demo's validation split (CIDEr x100, 3 epochs at DEMO_LR):
#: BLIP2IDC random 183.5 against consensus 181.7, DAVIR random 142.8 against consensus 138.7
DEMO_TRAIN_REFERENCE = "random"


def _with_models(args: DemoArgs, out: Path) -> int:
    """The shipped pretrained bases (:mod:`idc_toolkit.demo.pretrain`) fine-tuned with idc-train on
    the demo's train split, scored on its test split beside the baselines."""
    from datasets import load_dataset

    from ..demo.baseline import best_constant_caption
    from ..demo.pretrain import BASES
    from ..errors import IDCError
    from .eval import main as eval_main
    from .train import main as train_main

    masked = out / "clevr_change_demo_entities"
    bases = {"blip2idc": BASES / "blip2", "davir": BASES / "instructblip"}
    for path in bases.values():
        if not (path / "model.safetensors").is_file():
            raise IDCError(f"{path}: the demo's base checkpoint is not in this install "
                           "(python -m idc_toolkit.demo.pretrain writes it)")
    print("[+1] the best constant caption: the train caption that, written for every validation pair, scores the "
          "highest CIDEr; scored on the test split")
    train_rows, val_rows, test_rows = (list(load_dataset(str(masked), split=s).select_columns(["pair_id", "captions"]))
                                       for s in ("train", "validation", "test"))
    constant, _ = best_constant_caption(train_rows, val_rows)
    (out / "constant_predictions.json").write_text(json.dumps({r["pair_id"]: constant for r in test_rows}, indent=1))
    code = eval_main(["--predictions", str(out / "constant_predictions.json"), "--dataset", str(masked), "--split", "test",
                      "--out", str(out / "eval_constant"), "--metrics", "BLEU", "METEOR", "ROUGE_L", "CIDEr",
                      "--name", CONSTANT_NAME])
    if code:
        return code
    print(f"     {constant!r}")
    datasets = {"blip2idc": out / "clevr_change_demo", "davir": masked}
    titles = {"blip2idc": "BLIP2IDC", "davir": "DAVIR"}
    every = max(1, args.train_epochs * -(-len(train_rows) // 16) // 6)  # about six pictures per run
    for step, name in enumerate(("blip2idc", "davir"), 2):
        extra = ["--attention-every", str(every)] if name == "davir" else []
        print(f"[+{step}] idc-train --model {name} from the demo's pretrained {titles[name]} base ({bases[name]}): "
              f"{args.train_epochs} epochs, batch 16, lr {DEMO_LR}, {DEMO_TRAIN_REFERENCE} reference"
              + (f", attention pictures every {every} steps" if extra else ""))
        code = train_main(["--model", name, "--dataset", str(datasets[name]), "--out", str(out / "runs" / name),
                           "--base-model", str(bases[name]), "--epochs", str(args.train_epochs), "--batch-size", "16",
                           "--lr", DEMO_LR, "--val-limit", "40", "--device", "cpu", "--no-progress", "--report-to", "none",
                           "--seed", str(args.seed), "--train-reference", DEMO_TRAIN_REFERENCE, *extra])
        if code:
            return code
        code = eval_main(["--model", name, "--base-model", str(bases[name]), "--adapter", str(out / "runs" / name / "adapter"),
                          "--dataset", str(masked), "--split", "test", "--out", str(out / f"eval_{name}"), "--device", "cpu",
                          "--metrics", "BLEU", "METEOR", "ROUGE_L", "CIDEr", "--no-progress", "--max-new-tokens", "20",
                          "--name", f"{titles[name]} (tiny, fine-tuned)"])
        if code:
            return code
    print("[+4] idc-eval --model vlm: a general multi-image chat model zero-shot (a tiny RANDOM Qwen2-VL: "
          "shows the route a real one takes, its captions mean nothing)")
    from ..demo.tiny_vlm import save_tiny_vlm

    vlm = out / "models" / "tiny_qwen2_vl"
    if not (vlm / "config.json").is_file():
        save_tiny_vlm("qwen2_vl", vlm, seed=args.seed)
    code = eval_main(["--model", "vlm", "--base-model", str(vlm), "--dataset", str(masked), "--split", "test",
                      "--out", str(out / "eval_vlm"), "--device", "cpu", "--max-new-tokens", "12",
                      "--metrics", "BLEU", "METEOR", "ROUGE_L", "CIDEr", "--no-progress", "--name", VLM_NAME])
    if code:
        return code
    print("\n[+5] test CIDEr (x100), each group scored on its own")
    print(comparison_table({"nearest-neighbour baseline": out / "eval", CONSTANT_NAME: out / "eval_constant",
                            "BLIP2IDC (tiny, fine-tuned)": out / "eval_blip2idc", "DAVIR (tiny, fine-tuned)": out / "eval_davir",
                            VLM_NAME: out / "eval_vlm"}))
    for name in ("blip2idc", "davir"):
        lines = (out / f"eval_{name}" / "predictions.jsonl").read_text().splitlines()
        captions = [json.loads(line)["caption"] for line in lines]
        print(f"{titles[name]}: {len(set(captions))} distinct captions for {len(captions)} test pairs")
    print(f"DAVIR's attention pictures: {out / 'runs' / 'davir' / 'attention'}")
    return 0


def comparison_table(runs: dict[str, Path]) -> str:
    """CIDEr per group of several evaluation folders side by side."""
    metrics = {name: json.loads((folder / "metrics.json").read_text()) for name, folder in runs.items()}
    groups = ["overall", *dict.fromkeys(g for m in metrics.values() for g in m["by_category"])]

    def cider(m, g):
        entry = m["overall"] if g == "overall" else m["by_category"].get(g)
        return "n/a" if not entry or entry.get("CIDEr") is None else f"{100 * entry['CIDEr']:.1f}"

    lines = ["| system | " + " | ".join(groups) + " |", "| --- |" + " ---: |" * len(groups)]
    lines += [f"| {name} | " + " | ".join(cider(m, g) for g in groups) + " |" for name, m in metrics.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

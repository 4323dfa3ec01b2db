"""``--presentation``: one VLM captions the demo dataset's test split under every presentation
(``idc-eval --model vlm --presentation P``), and each run is scored per category.

By default the model is the tiny random Qwen2-VL stand-in (``python -m idc_toolkit.demo.stand_ins``)
and the dataset the demo's (``idc-demo``'s generator and builder, ``--n-per-type`` scenes per change
type), both written into a scratch folder. The tiny random model's captions mean nothing (its
greedy answer is the same blank lines for every input, cleaned to an empty caption), so its
numbers only show the mechanics: every presentation runs, is recorded in ``model.json`` and
scored, and what it costs (the image the model is shown, its input tokens, the time). Pass
``--base-model`` (a real chat VLM, on a GPU with ``--device cuda``) for numbers that compare
presentations, and ``--dataset`` for another dataset.

Prints, in markdown: per presentation, the overall BLEU-4 / METEOR / ROUGE-L / CIDEr-D (x100) and
CIDEr-D per category; then the mechanics (image size shown, input tokens per pair, captions
that are not empty, and the process's CPU seconds of a run, model load included: the least of
``--repeats`` runs, after an untimed warm-up run; CPU time, since a shared machine's wall clock
varies with the other work on it).

    python benchmarks/presentation.py [--n-per-type 20] [--base-model M] [--dataset D] [--device cpu] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def demo_dataset(root: Path, n_per_type: int) -> Path:
    from idc_toolkit.building import build_dataset
    from idc_toolkit.demo.builder import DemoClevrChange
    from idc_toolkit.demo.generator import generate_demo_release

    generate_demo_release(root / "raw", n_per_type=n_per_type, seed=0)
    return build_dataset(DemoClevrChange(root / "raw"), root / "clevr_change_demo", progress=False).out_dir


def input_size(base_model: str, presentation: str, dataset: Path, split: str) -> tuple[str, int]:
    """The image size the model is shown for the split's first pair, and its input tokens."""
    from transformers import AutoProcessor

    from idc_toolkit.card_data import dataset_facts
    from idc_toolkit.models.vlm import VlmInputs, VlmRunner
    from idc_toolkit.runs.rows import decode_image, open_split

    rows, _, _ = open_split(dataset, split, False)
    first = rows.read(0, 1)[0]
    row = {**first, "before": decode_image(first["before"]), "after": decode_image(first["after"])}
    prompt = VlmRunner.resolve_prompt(dataset_facts(dataset), None, None, presentation, str(dataset))
    inputs = VlmInputs(AutoProcessor.from_pretrained(base_model), prompt, presentation=presentation)
    images = inputs.images(row)
    return " + ".join(f"{im.width}x{im.height}" for im in images), int(inputs.build([row])["input_ids"].shape[1])


def main() -> None:
    import idc_toolkit as idc
    from idc_toolkit.presentation import PRESENTATIONS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-per-type", type=int, default=20, help="demo scenes per change type (default 20)")
    ap.add_argument("--dataset", help="a dataset folder instead of the demo's")
    ap.add_argument("--split", default="test")
    ap.add_argument("--base-model", help="a chat VLM instead of the tiny random Qwen2-VL stand-in")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2, help="runs of each presentation; the fastest is reported")
    ap.add_argument("--out", help="keep the runs here (default: a scratch folder)")
    args = ap.parse_args()

    root = Path(args.out or tempfile.mkdtemp(prefix="idc-presentation-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    dataset = Path(args.dataset) if args.dataset else demo_dataset(root / "data", args.n_per_type)
    base_model = args.base_model
    if base_model is None:
        from idc_toolkit.demo.tiny_vlm import save_tiny_vlm

        base_model = str(save_tiny_vlm("qwen2_vl", root / "qwen2_vl"))
    common = {"dataset": str(dataset), "split": args.split, "base_model": base_model, "device": args.device,
              "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "progress": False}
    idc.generate_predictions("vlm", out=root / "runs" / "warm-up", limit=2, **common)  # imports and first calls, untimed
    results = {}
    for name in PRESENTATIONS:
        out = root / "runs" / name
        seconds = []
        for repeat in range(args.repeats):  # CPU time, the least of a few runs: other work on a shared machine
            start = time.process_time()
            preds = idc.generate_predictions("vlm", out=out if repeat == 0 else root / "runs" / f"{name}-{repeat}",
                                             presentation=name, **common)
            seconds.append(time.process_time() - start)
        seconds = min(seconds)
        captions = [json.loads(line)["caption"] for line in Path(preds).read_text(encoding="utf-8").splitlines()]
        metrics = idc.evaluate_predictions(str(preds), dataset=str(dataset), split=args.split, out=str(out))
        assert json.loads((out / "model.json").read_text())["presentation"] == name
        size, tokens = input_size(base_model, name, dataset, args.split)
        results[name] = {"metrics": metrics, "seconds": seconds, "pairs": len(captions), "size": size, "tokens": tokens,
                         "non_empty": sum(bool(c.strip()) for c in captions)}

    first = next(iter(results.values()))["metrics"]
    categories = list(first["by_category"])
    overall = ["Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]

    def x100(value) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}"

    sizes = ", ".join(f"{c} n={first['by_category'][c]['n']}" for c in categories)
    print(f"Scores x100 on {dataset.name} [{args.split}], {first['overall']['n']} pairs; CIDEr-D per category ({sizes}).\n")
    columns = ["BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D", *(f"CIDEr-D {c}" for c in categories)]
    print("| presentation | " + " | ".join(columns) + " |")
    print("| --- |" + " ---: |" * (len(overall) + len(categories)))
    for name, r in results.items():
        m = r["metrics"]
        cells = [x100(m["overall"].get(k)) for k in overall] + [x100(m["by_category"][c].get("CIDEr")) for c in categories]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n| presentation | image(s) shown | input tokens per pair | non-empty captions | CPU s (least of {args.repeats}) "
          "| pairs per CPU s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, r in results.items():
        print(f"| {name} | {r['size']} | {r['tokens']} | {r['non_empty']} / {r['pairs']} | {r['seconds']:.1f} | "
              f"{r['pairs'] / r['seconds']:.1f} |")
    print(f"\n(runs under {root})")


if __name__ == "__main__":
    main()

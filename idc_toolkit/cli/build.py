"""``idc-build NAME --raw RAW_DIR --out OUT_DIR``: a raw release -> a Hub-ready dataset folder."""

from __future__ import annotations

import argparse
import os
import sys

from . import common


def parse_size(text: str) -> int:
    """``500MB`` / ``2GB`` / ``1GiB`` / ``1048576`` -> bytes, in ``datasets``' convention
    (``convert_file_size_to_int``: MB = 10**6, MiB = 2**20), the one ``push_to_hub``'s
    ``max_shard_size`` uses."""
    from datasets.utils.py_utils import convert_file_size_to_int

    text = text.strip()
    try:
        return int(text) if text.isdigit() else convert_file_size_to_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 500MB, 1GiB or a number of bytes)") from None


def make_parser() -> argparse.ArgumentParser:
    p = common.parser("idc-build", "Build an image-difference-captioning dataset from its original raw release.")
    p.add_argument("name", nargs="?", help="dataset builder (see --list)")
    p.add_argument("--list", action="store_true", help="list the builders and exit")
    p.add_argument("--raw", help="folder of the raw release")
    p.add_argument("--out", help="output folder (parquet shards, README.md card, croissant.json, build_report.json)" + common.STORE_OUT)
    p.add_argument("--strict", action="store_true", help="fail on the first skipped or repaired record")
    p.add_argument("--overwrite", action="store_true", help="replace an output folder that holds another build")
    p.add_argument("--max-shard-size", type=parse_size, default="500MB", help="split the data as push_to_hub does: int(Arrow bytes / this) + 1 shards of even rows (500MB = 500*10**6 bytes)")
    p.add_argument("--rows-per-part", type=int, default=2000, help="records per part (the resume unit)")
    p.add_argument("--verify-images", choices=["fast", "full"], default="fast",
                   help="fast: structural checks without decoding; full: decode every image")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="builder option (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    """``idc-build``; output into a pipe its reader closed (``idc-build --list | head``) ends quietly."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python's documented way: point stdout at devnull so the exit-time flush finds no pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)
    from ..builders import BUILDERS

    if args.list:
        for name in sorted(BUILDERS):
            print(f"{name:15s} {BUILDERS.describe(name)}")
        return 0
    if not args.name or not args.raw or not args.out:
        make_parser().error("NAME, --raw and --out are required (or --list)")
    try:
        overrides = dict(kv.split("=", 1) for kv in args.config)
    except ValueError:
        print("idc-build: error: --config takes KEY=VALUE", file=sys.stderr)
        return 2
    return common.run("idc-build", lambda: _build(args, overrides))


def _build(args, overrides: dict[str, str]) -> int:
    from ..builders import make_builder
    from ..building import build_dataset

    builder = make_builder(args.name, args.raw, overrides)
    result = build_dataset(builder, args.out, strict=args.strict, overwrite=args.overwrite,
                           max_shard_bytes=args.max_shard_size, rows_per_part=args.rows_per_part,
                           verify_images=args.verify_images, progress=not args.no_progress)
    if result.already_built:
        print(f"{common.shown_out(args.out, result.out_dir)} already holds this build; nothing to do (use --overwrite to rebuild)")
    else:
        print(("resumed and finished " if result.resumed else "built ") + common.shown_out(args.out, result.out_dir))
    from ..building.pipeline import REPORT_FILE

    print(result.report.summary(report_file=str(result.out_dir / REPORT_FILE)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

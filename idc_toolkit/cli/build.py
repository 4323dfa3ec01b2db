"""``idc-build NAME --raw RAW_DIR --out OUT_DIR``: a raw release -> a Hub-ready dataset folder."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from ..errors import IDCError
from ..options import add_options, cli_fields, from_namespace, option
from . import common


def parse_size(text: str) -> int:
    """``500MB`` / ``2GB`` / ``1GiB`` / ``1048576`` -> bytes, as ``--max-shard-size`` reads them
    (:func:`idc_toolkit.building.args.shard_size`)."""
    from ..building.args import shard_size

    try:
        return shard_size("--max-shard-size", text)
    except IDCError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


@dataclass
class _Listing:
    list: bool = option(False, "list the builders and exit")


def make_parser() -> argparse.ArgumentParser:
    from ..building import BuildArgs

    p = common.parser("idc-build", "Build an image-difference-captioning dataset from its original raw release.")
    p.add_argument("name", nargs="?", help="dataset builder (see --list)")
    add_options(p, _Listing, ["list"])
    add_options(p, BuildArgs, cli_fields(BuildArgs))
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
    return common.run("idc-build", lambda: _build(args))


def _build(args) -> int:
    from ..api import build_dataset
    from ..building import BuildArgs

    result = build_dataset(args.name, args=from_namespace(BuildArgs, args))
    if result.already_built:
        print(f"{common.shown_out(args.out, result.out_dir)} already holds this build; nothing to do (use --overwrite to rebuild)")
    else:
        print(("resumed and finished " if result.resumed else "built ") + common.shown_out(args.out, result.out_dir))
    from ..building.pipeline import REPORT_FILE

    print(result.report.summary(report_file=str(result.out_dir / REPORT_FILE)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

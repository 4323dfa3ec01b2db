"""``idc-view``: a static pair browser for a dataset and its evaluation runs; ``idc-view
figure``: the qualitative-examples panel of a paper."""

from __future__ import annotations

import sys

from ..options import add_options, cli_fields, from_namespace
from ..viewer.args import FigureArgs, ViewArgs
from . import common


def make_parser():
    p = common.parser("idc-view", "Write a static, self-contained site to browse a dataset's pairs and evaluation runs "
                                  "(open OUT/index.html; no server, no network). `idc-view figure --help`: paper figures.")
    add_options(p, ViewArgs, cli_fields(ViewArgs), required=("out",))
    return p


def make_figure_parser():
    p = common.parser("idc-view figure", "A qualitative-examples panel (PDF + PNG + LaTeX snippet) in the layout of the "
                                         "papers' figures: before/after, references, each system's caption with its CIDEr.")
    add_options(p, FigureArgs, cli_fields(FigureArgs), required=("out",))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["figure"]:
        args = make_figure_parser().parse_args(argv[1:])
        common.setup_logging(args)
        return common.run("idc-view figure", lambda: _figure(from_namespace(FigureArgs, args)))
    args = make_parser().parse_args(argv)
    common.setup_logging(args)
    return common.run("idc-view", lambda: _site(from_namespace(ViewArgs, args)))


def _site(args: ViewArgs) -> int:
    from ..viewer.site import write_site

    result = write_site(args=args)
    what = "already holds this site" if result.already_written else "written"
    print(f"{common.shown_out(args.out, result.out_dir)}: {what}: {result.n_pairs} pairs" + (f", {len(result.systems)} system(s)" if result.systems else "")
          + (f" (--limit {args.limit}: the first pairs of each split only; the evaluations' other pairs are not shown)"
             if args.limit else ""))
    print(f"open {result.index.resolve().as_uri()}  (or: python -m http.server -d {result.out_dir})")
    return 0


def _figure(args: FigureArgs) -> int:
    from ..viewer.figure import write_figure

    result = write_figure(args=args)
    print(f"{result.pdf}, {result.png}, {result.tex} ({len(result.pairs)} pair(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``idc-view``: a static pair browser for a dataset and its evaluation runs; ``idc-view
figure``: the qualitative-examples panel of a paper."""

from __future__ import annotations

import sys

from ..checks import arg_type, at_most, positive_float, positive_int
from ..presentation import PRESENTATIONS
from ..viewer.figure import MAX_DPI
from . import common


def make_parser():
    p = common.parser("idc-view", "Write a static, self-contained site to browse a dataset's pairs and evaluation runs "
                                  "(open OUT/index.html; no server, no network). `idc-view figure --help`: paper figures.")
    p.add_argument("--dataset", help="a dataset folder written by idc-toolkit, or a Hub dataset id (images, references, columns)")
    p.add_argument("--split", action="append", default=[],
                   help="split to show (repeatable; default: the evaluations' splits, else every split)")
    p.add_argument("--eval", dest="evaluations", action="append", default=[], metavar="FOLDER",
                   help="an idc-eval output folder (repeatable): its captions, per-pair scores and tables")
    p.add_argument("--leaderboard", metavar="FOLDER", help="an `idc-eval leaderboard --out` folder: its table heads the page")
    p.add_argument("--out", required=True, help="site folder (index.html, assets/, img/)")
    p.add_argument("--overwrite", action="store_true", help="replace a site of ours written with other settings")
    p.add_argument("--image-size", type=arg_type(positive_int, "--image-size"), default=320,
                   help="longest side of the pictures, pixels")
    p.add_argument("--limit", type=arg_type(positive_int, "--limit"), help="the first N pairs of each split only")
    p.add_argument("--title", help="the page's title (default: the dataset's name)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def make_figure_parser():
    p = common.parser("idc-view figure", "A qualitative-examples panel (PDF + PNG + LaTeX snippet) in the layout of the "
                                         "papers' figures: before/after, references, each system's caption with its CIDEr.")
    p.add_argument("--pairs", default="", help="comma-separated pair ids, in the figure's order (default: the first pair "
                                               "of each category)")
    p.add_argument("--dataset", required=True, help="the dataset folder or Hub id the pairs come from")
    p.add_argument("--split", help="default: the evaluations' split, else test")
    p.add_argument("--eval", dest="evaluations", action="append", default=[], metavar="FOLDER",
                   help="an idc-eval output folder whose captions and per-pair CIDEr to print (repeatable)")
    p.add_argument("--out", required=True, help="folder for figure.pdf, figure.png, figure.tex")
    p.add_argument("--width", type=arg_type(positive_float, "--width"), default=7.0,
                   help="figure width in inches (the PNG is width x dpi pixels wide)")
    p.add_argument("--dpi", type=arg_type(at_most(MAX_DPI, positive_int), "--dpi"), default=200,
                   help=f"PNG resolution (at most {MAX_DPI})")
    p.add_argument("--no-mask", dest="mask", action="store_false", help="do not outline change_mask on the after image")
    p.add_argument("--presentation", choices=list(PRESENTATIONS),
                   help="draw each pair as idc-eval --model vlm --presentation shows it to the model (one composed image "
                        "in place of before and after; docs/models.md#presentations)")
    p.add_argument("--overwrite", action="store_true", help="replace a figure of ours written with other settings")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["figure"]:
        args = make_figure_parser().parse_args(argv[1:])
        common.setup_logging(args)
        return common.run("idc-view figure", lambda: _figure(args))
    args = make_parser().parse_args(argv)
    common.setup_logging(args)
    return common.run("idc-view", lambda: _site(args))


def _site(args) -> int:
    from ..viewer.site import write_site

    result = write_site(args.out, dataset=args.dataset, splits=args.split, evaluations=args.evaluations,
                        image_size=args.image_size, limit=args.limit, title=args.title, overwrite=args.overwrite,
                        progress=not args.no_progress, leaderboard=args.leaderboard)
    what = "already holds this site" if result.already_written else "written"
    print(f"{common.shown_out(args.out, result.out_dir)}: {what}: {result.n_pairs} pairs" + (f", {len(result.systems)} system(s)" if result.systems else "")
          + (f" (--limit {args.limit}: the first pairs of each split only; the evaluations' other pairs are not shown)"
             if args.limit else ""))
    print(f"open {result.index.resolve().as_uri()}  (or: python -m http.server -d {result.out_dir})")
    return 0


def _figure(args) -> int:
    from ..viewer.figure import write_figure

    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    result = write_figure(args.out, pairs=pairs, dataset=args.dataset, split=args.split, evaluations=args.evaluations,
                          width=args.width, dpi=args.dpi, mask=args.mask, overwrite=args.overwrite,
                          presentation=args.presentation)
    print(f"{result.pdf}, {result.png}, {result.tex} ({len(result.pairs)} pair(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``idc-view figure``: a qualitative-examples panel as change-captioning papers print them.

One row per pair: the before image, the after image (the change mask outlined when asked and
present), then the references and each system's caption with its per-pair CIDEr from the
evaluation's own ``per_pair.csv``. With ``presentation`` (``--presentation``, not ``two_images``)
the before and after columns give way to the one image that presentation composes of the pair,
as ``--model vlm --presentation`` shows it to a model (:mod:`idc_toolkit.presentation`).
Written as ``figure.pdf`` (one page, vector text) and
``figure.png`` (``width`` inches at ``dpi``: ``width * dpi`` pixels wide), plus ``figure.tex``,
the snippet that includes the PDF.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import IDCError
from ..stores import input_folder, output_folder
from ..options import with_fields
from .args import MAX_DPI, FigureArgs
from .sources import check_card, read_evaluation, unique_names

#: what a finished figure folder holds (the only names --overwrite removes)
OWNED = ("figure.pdf", "figure.png", "figure.tex")
#: the most pixels figure.png may hold (matplotlib's canvas is allocated whole: --dpi 100000 asked for terabytes)
MAX_PIXELS = 200_000_000
#: a row's height, in units of the figure's width
ROW_HEIGHT = 0.27
#: the width of the composed image's column, in units of the text column's (before and after take 1 each)
COMPOSED_WIDTH = 2.0
TEXT_WIDTH = 1.6
#: with a composed image: the figure's side margins (a fraction of its width), the room above the
#: first row for its title and below the last, in inches
COMPOSED_MARGIN = 0.02
TITLE_INCHES = 0.3
MARGIN_INCHES = 0.08


def check_size(width: float, dpi: int, rows: int = 1) -> tuple[float, int]:
    """``--width`` and ``--dpi`` range-checked, and the PNG they make no larger than :data:`MAX_PIXELS`."""
    from .. import checks

    width = checks.positive_float("--width", width)
    dpi = checks.at_most(MAX_DPI, checks.positive_int)("--dpi", dpi)
    wide, high = round(width * dpi), round(width * ROW_HEIGHT * rows * dpi)
    if wide * high > MAX_PIXELS:
        raise IDCError(f"--width {width:g} x --dpi {dpi}: figure.png would be {wide} x {high} pixels for {rows} pair(s), "
                       f"more than {MAX_PIXELS:,}; lower --dpi or --width, or show fewer --pairs")
    return width, dpi


@dataclass(frozen=True)
class FigureResult:
    pdf: Path
    png: Path
    tex: Path
    pairs: tuple[str, ...]


def _category_names(features) -> Optional[list[str]]:
    return getattr(features.get("category"), "names", None) if hasattr(features, "get") else None


def default_pairs(rows, features, most: int = 6) -> list[str]:
    """Without ``--pairs``: the first pair of each category, in the dataset's category order (the
    first three pairs where it has no categories), at most ``most``."""
    names = _category_names(features)
    wanted = len(names) if names else 3
    firsts: dict[int, str] = {}
    for start in range(0, len(rows), 256):
        for row in rows.read(start, min(start + 256, len(rows))):
            key = row.get("category") if names else len(firsts)
            if key is not None and key not in firsts:
                firsts[key] = str(row["pair_id"])
        if len(firsts) >= wanted:
            break
    return [firsts[k] for k in sorted(firsts)][:most]


def write_figure(out: Optional[Path | str] = None, args: Optional[FigureArgs] = None, **fields: Any) -> FigureResult:
    """Write the panel for ``pairs`` (in that order; none given: :func:`default_pairs`) into ``out``
    (else ``args.out``); ``presentation``: each pair drawn as that presentation composes it (module
    docstring). The options are :class:`~.args.FigureArgs`, given as one or field by field."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import __version__
    from ..runs import RunFolder
    from ..runs.rows import decode_image, open_split
    from .images import MASK_COLOUR, mask_outline

    from ..presentation import DEFAULT_PRESENTATION, get_presentation

    a = with_fields(FigureArgs, args, **fields, **({} if out is None else {"out": out}))
    if a.out is None:
        raise IDCError("name the figure's folder: out=")
    presentation, mask, wrap = a.presentation, a.mask, a.wrap
    composed = get_presentation(presentation) if presentation is not None else None  # an unknown name: before any work
    if composed is not None and composed.name == DEFAULT_PRESENTATION:
        composed = None  # the two images, as the panel always draws them
    width, dpi = check_size(a.width, a.dpi)
    runs = unique_names([read_evaluation(e) for e in a.evaluations])
    split = a.split or next((ev.split for ev in runs if ev.split), None) or "test"
    dataset = input_folder(a.dataset, IDCError)  # a store's dataset: its local copy
    check_card(dataset)
    rows, features, fingerprint = open_split(dataset, split)
    pairs = list(a.pairs) or default_pairs(rows, features)
    if not pairs:
        raise IDCError(f"split {split!r} of {dataset} has no pairs")
    check_size(width, dpi, len(pairs))
    wanted = {pid: None for pid in pairs}
    for start in range(0, len(rows), 256):
        for row in rows.read(start, min(start + 256, len(rows))):
            if str(row["pair_id"]) in wanted:
                wanted[str(row["pair_id"])] = row
    missing = [pid for pid, row in wanted.items() if row is None]
    if missing:
        raise IDCError(f"--pairs: {', '.join(map(repr, missing[:5]))} not in split {split!r} of {dataset}")
    recorded = {"pairs": list(pairs), "dataset": fingerprint, "split": split,
                "evaluations": [[e.name, e.content_hash] for e in runs], "width": width, "dpi": dpi, "mask": mask,
                "wrap": wrap, "toolkit": __version__, **({"presentation": presentation} if presentation is not None else {})}
    out_dir = output_folder(a.out, IDCError)
    folder = RunFolder(out_dir, "figure", recorded, owned=OWNED, card_record=False, record_file="figure.json").open(a.overwrite)
    result = FigureResult(out_dir / "figure.pdf", out_dir / "figure.png", out_dir / "figure.tex", tuple(pairs))
    if folder.complete:
        return result

    names = _category_names(features)
    n = len(pairs)
    row_height = width * ROW_HEIGHT
    decoded = {pid: (decode_image(wanted[pid]["before"]).convert("RGB"), decode_image(wanted[pid]["after"]).convert("RGB"))
               for pid in pairs}
    shown = {pid: composed(*decoded[pid])[0] for pid in pairs} if composed is not None else {}
    ratios = [COMPOSED_WIDTH, TEXT_WIDTH] if composed is not None else [1, 1, TEXT_WIDTH]
    grid = {"width_ratios": ratios, "wspace": 0.05, "hspace": 0.12}
    height = row_height * n
    if composed is not None:  # each row as high as the tallest composed image needs at its column's width
        column = width * (1 - 2 * COMPOSED_MARGIN) * COMPOSED_WIDTH / (COMPOSED_WIDTH + TEXT_WIDTH)
        tallest = max(im.height / im.width for im in shown.values())
        row_height = min(max(column * tallest, row_height / 2), 2 * row_height)
        height = row_height * (n + grid["hspace"] * (n - 1)) + TITLE_INCHES + MARGIN_INCHES
        grid.update(left=COMPOSED_MARGIN, right=1 - COMPOSED_MARGIN, top=1 - TITLE_INCHES / height,
                    bottom=MARGIN_INCHES / height)
        check_size(width, dpi, math.ceil(height / (width * ROW_HEIGHT)))  # the PNG's real height
    fig, axes = plt.subplots(n, len(ratios), figsize=(width, height), squeeze=False, gridspec_kw=grid)
    for r, pid in enumerate(pairs):
        row = wanted[pid]
        before, after = decoded[pid]
        panels = ([(shown[pid], f"{composed.name} (as the model is shown it)")] if composed is not None
                  else [(before, "before"), (after, "after")])
        for c, (image, label) in enumerate(panels):
            ax = axes[r][c]
            if composed is None and c == 1 and mask and row.get("change_mask"):
                import numpy as np

                pixels = np.asarray(image).copy()
                pixels[mask_outline(decode_image(row["change_mask"]), image.size)] = MASK_COLOUR
                ax.imshow(pixels)
            else:
                ax.imshow(image)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(label, fontsize=8)
        cat = row.get("category")
        category = names[cat] if names is not None and isinstance(cat, int) else cat
        lines = [f"{pid}" + (f" ({category})" if category else "")]
        lines += ["GT: " + line for ref in list(row.get("captions") or [])[:2] for line in _wrap(ref, wrap)]
        for ev in runs:
            result_row = ev.pairs.get(pid)
            if result_row is None:
                raise IDCError(f"{ev.folder}: no caption for pair {pid!r}")
            cider = result_row.scores.get("CIDEr")
            head = f"{ev.name}" + (f" [CIDEr {100 * cider:.1f}]" if cider is not None else "") + ": "
            lines += _wrap(head + result_row.caption, wrap)
        text_ax = axes[r][len(ratios) - 1]
        text_ax.axis("off")
        text_ax.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", fontsize=7, family="serif", transform=text_ax.transAxes, parse_math=False)

    def stage(final: Path) -> None:
        fig.savefig(final / "figure.pdf", bbox_inches=None)
        fig.savefig(final / "figure.png", dpi=dpi, bbox_inches=None)
        ids = ", ".join(_latex(p) for p in pairs)
        (final / "figure.tex").write_text(
            "\\begin{figure*}[t]\n  \\centering\n  \\includegraphics[width=\\textwidth]{figure.pdf}\n"
            f"  \\caption{{Qualitative examples ({ids}). GT: ground-truth references; "
            "each system's caption with its per-pair CIDEr (x100).}\n  \\label{fig:idc-qualitative}\n\\end{figure*}\n",
            encoding="utf-8")

    try:
        folder.finalise(stage, order=OWNED)
    finally:
        plt.close(fig)
    return result


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(" ".join(str(text).split()), width) or [""]


def _latex(text: str) -> str:
    """``text`` safe inside a LaTeX caption."""
    out = str(text)
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                          ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}")):
        out = out.replace(char, escaped) if char != "\\" else out.replace(char, "\x00")
    return out.replace("\x00", r"\textbackslash{}")

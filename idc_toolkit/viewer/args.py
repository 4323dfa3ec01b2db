"""What ``idc-view`` and ``idc-view figure`` are given: one dataclass per command, which is its
command line (options, defaults, checks and help derived from the fields) and the argument of
:func:`~.site.write_site` / :func:`~.figure.write_figure`. ``out`` is required on the command line;
in Python it may be given beside the options instead (``write_site(out, args)``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from ..checks import at_most, positive_float, positive_int
from ..options import check_fields, option, python_only, required

#: the finest PNG resolution a figure is drawn at (print needs 300-600)
MAX_DPI = 1200


def pair_ids(flag: str, value: Any) -> list[str]:
    """``"a, b"`` (the command line's) -> ``["a", "b"]``; a list of ids is taken as it is."""
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return list(value)


def _presentation_names() -> list[str]:
    from ..presentation import PRESENTATIONS

    return list(PRESENTATIONS)


@dataclass(kw_only=True)
class ViewArgs:
    """``idc-view``: the static pair browser of a dataset and its evaluation runs."""

    dataset: Optional[str] = option(None, "a dataset folder written by idc-toolkit, or a Hub dataset id (images, references, "
                                          "columns)")
    splits: list[str] = option((), "split to show (repeatable; default: the evaluations' splits, else every split)",
                               flag="--split", metavar="SPLIT", repeat=True)
    evaluations: list[Union[str, Path]] = option((), "an idc-eval output folder (repeatable): its captions, per-pair "
                                                     "scores and tables", flag="--eval", metavar="FOLDER", repeat=True)
    leaderboard: Optional[Union[str, Path]] = option(None, "an `idc-eval leaderboard --out` folder: its table heads the page",
                                                     metavar="FOLDER")
    out: Optional[Union[str, Path]] = option(None, "site folder (index.html, assets/, img/)", record=False)
    overwrite: bool = option(False, "replace a site of ours written with other settings", record=False)
    image_size: int = option(320, "longest side of the pictures, pixels", check=positive_int)
    limit: Optional[int] = option(None, "the first N pairs of each split only", check=positive_int)
    title: Optional[str] = option(None, "the page's title (default: the dataset's name)")
    progress: bool = option(True, "hide progress bars", record=False)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(kw_only=True)
class FigureArgs:
    """``idc-view figure``: a qualitative-examples panel (PDF, PNG and a LaTeX snippet)."""

    pairs: list[str] = option((), "comma-separated pair ids, in the figure's order (default: the first pair of each "
                                  "category)", check=pair_ids)
    dataset: str = required("the dataset folder or Hub id the pairs come from")
    split: Optional[str] = option(None, "default: the evaluations' split, else test")
    evaluations: list[Union[str, Path]] = option((), "an idc-eval output folder whose captions and per-pair CIDEr to print "
                                                     "(repeatable)", flag="--eval", metavar="FOLDER", repeat=True)
    out: Optional[Union[str, Path]] = option(None, "folder for figure.pdf, figure.png, figure.tex", record=False)
    width: float = option(7.0, "figure width in inches (the PNG is width x dpi pixels wide)", check=positive_float)
    dpi: int = option(200, f"PNG resolution (at most {MAX_DPI})", check=at_most(MAX_DPI, positive_int))
    mask: bool = option(True, "do not outline change_mask on the after image")
    presentation: Optional[str] = option(None, "draw each pair as idc-eval --model vlm --presentation shows it to the model "
                                               "(one composed image in place of before and after; "
                                               "docs/models.md#presentations)", choices=_presentation_names)
    overwrite: bool = option(False, "replace a figure of ours written with other settings", record=False)
    wrap: int = python_only("characters per line of the captions beside the pictures", lambda: 60, check=positive_int)

    def __post_init__(self) -> None:
        check_fields(self)

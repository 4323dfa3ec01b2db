"""Tables in the shapes the papers print (``idc-eval --layout``), besides ``metrics.md``.

* ``total-semantic`` — CLEVR-Change's main table: Total | Semantic change, each
  B4 M R C S (RCC, SCORER, DIRL, BLIP2IDC);
* ``by-type`` — one row per metric across the change types (DIRL Table 3, BLIP2IDC Table 2).

Each is written as markdown and LaTeX (``layout_<name>.md`` / ``.tex``); ``by_category.csv``
(every group, every metric x100) is written on every run. Group names are shown as the papers
name them (:data:`PAPER_NAMES`: ``material`` -> Texture, ``change_only`` -> Semantic change),
or as ``--group-names FILE`` maps them.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.errors import EvaluationError
from idc_toolkit.files import read_text
from idc_toolkit.metrics.registry import table_columns

from .protocols import Comparability

PAPER_NAMES = {"overall": "Total", "change_only": "Semantic change", "color": "Color", "material": "Texture",
               "add": "Add", "drop": "Drop", "move": "Move", "distractor": "Distractor", "no_change": "No change"}
SHORT = table_columns()
LAYOUTS = ("total-semantic", "by-type")
#: groups that are not change types (left out of ``by-type``)
_NOT_TYPES = {"overall", "change_only", "distractor", "no_change"}


def group_names(path: Optional[str | Path]) -> dict[str, str]:
    if path is None:
        return dict(PAPER_NAMES)
    try:
        data = json.loads(read_text(path, EvaluationError, "group names file"))
    except json.JSONDecodeError as exc:
        raise EvaluationError(f"{path}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise EvaluationError(f"{path}: expected {{group: name shown}}")
    return {**PAPER_NAMES, **data}


def _cell(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def _metrics(result: Any) -> list[str]:
    return [m for m in SHORT if any(g.scores.get(m) is not None for g in result.groups.values())]


@dataclass(frozen=True)
class RunLabel:
    """What every pasteable table says about the run: its row label (``--name``), for a
    protocol other than rcc, that its numbers are not comparable with rcc-protocol ones, and how
    the model was shown the pairs (``--presentation``), where its run records it."""

    name: str = "this run"
    protocol: str = "rcc"
    comparable_with_rcc: bool = True
    presentation: Optional[str] = None

    @property
    def shown(self) -> str:
        """The presentation, as a table's caption states it (empty where the run records none)."""
        return f"Presentation: {self.presentation}." if self.presentation else ""

    @property
    def caveat(self) -> str:
        return self.comparability.sentence

    @property
    def row(self) -> str:
        return self.comparability.row(self.name)

    @property
    def comparability(self) -> Comparability:
        return Comparability(self.protocol, self.comparable_with_rcc)


def markdown_and_latex(header: list[str], rows: list[list[str]], caption: str, label: RunLabel,
                       layout: str) -> tuple[str, str]:
    """One table as markdown and as LaTeX, its caption saying what ``label`` says of the run."""
    from idc_toolkit.escape import latex, markdown_table

    caption = " ".join(t for t in (caption, label.shown, label.caveat) if t)
    md = markdown_table(header, rows) + ["", caption]
    tex = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
           " & ".join(latex(h) for h in header) + r" \\", r"\midrule"]
    tex += [" & ".join("--" if c == "n/a" else latex(c) for c in r) + r" \\" for r in rows]
    tex += [r"\bottomrule", r"\end{tabular}", r"\caption{" + latex(caption) + "}",
            r"\label{tab:idc-" + layout + "}", r"\end{table}"]
    return "\n".join(md) + "\n", "\n".join(tex) + "\n"


def total_semantic(result: Any, names: dict[str, str], label: RunLabel) -> tuple[str, str]:
    blocks = [g for g in ("overall", "change_only") if g in result.groups]
    metrics = _metrics(result)
    header = [""] + [f"{names.get(g, g)} {SHORT[m]}" for g in blocks for m in metrics]
    row = [label.row] + [_cell(result.groups[g].scores.get(m)) for g in blocks for m in metrics]
    return markdown_and_latex(header, [row], "Total and semantic-change scores (x100), each group scored on its own."
                   + choice_note(result, blocks, names), label, "total-semantic")


def change_types(groups: Any) -> list[str]:
    return [g for g in groups if g not in _NOT_TYPES and not g.startswith("iou_")]


def applicable_layouts(requested: Any, groups: Any) -> list[str]:
    """The layouts to write, checked before any scoring: ``all`` is every layout that applies;
    a layout asked for by name that cannot apply (``by-type`` without change types) is an error."""
    requested = list(requested or ())
    for layout in requested:
        if layout != "all" and layout not in LAYOUTS:
            raise EvaluationError(f"unknown --layout {layout!r}; choose {', '.join(LAYOUTS)} or all")
    has_types = bool(change_types(groups))
    if "all" in requested:
        return [name for name in LAYOUTS if name != "by-type" or has_types]
    if "by-type" in requested and not has_types:
        raise EvaluationError("--layout by-type needs categories (change types); this dataset has none")
    return list(dict.fromkeys(requested))


def by_type(result: Any, names: dict[str, str], label: RunLabel) -> tuple[str, str]:
    types = change_types(result.groups)
    if not types:
        raise EvaluationError("--layout by-type needs categories (change types); this run has none")
    header = ["metric"] + [names.get(t, t) for t in types]
    rows = [[SHORT[m]] + [_cell(result.groups[t].scores.get(m)) for t in types] for m in _metrics(result)]
    return markdown_and_latex(header, rows, f"{label.name}: scores (x100) per change type, each type scored on its own."
                   + choice_note(result, types, names), label, "by-type")


def choice_note(result: Any, groups: list[str], names: dict[str, str]) -> str:
    """The unparsed answers behind the groups' multiple-choice accuracy (Acc), for a table's caption;
    empty where the run scored no question."""
    choice = result.cache.metrics.get("MC")
    if choice is None:
        return ""
    counts = [(names.get(g, g), choice.counts(result.group_indices[g])) for g in groups]
    listed = ", ".join(f"{name} {c['MC_unparsed']} of {c['MC_items']}" for name, c in counts if c["MC_items"])
    return f" Acc: multiple-choice accuracy, unparsed answers counted as not correct (unparsed: {listed})."


def write_by_category_csv(path: Path, result: Any, names: dict[str, str], label: RunLabel = RunLabel()) -> None:
    """Every group, every metric x100, with the protocol on every row (a pasted row keeps it)."""
    import io

    from idc_toolkit.escape import csv_text
    from idc_toolkit.files import write_text_atomic

    metrics = list(result.metrics)
    choice = result.cache.metrics.get("MC")  # multiple-choice accuracy: its items and unparsed answers beside it
    counts = ["MC_items", "MC_unparsed"] if choice is not None else []
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["group", "name", "n", *metrics, *counts, "protocol", "comparable_with_rcc"])
    for g, scores in result.groups.items():
        c = choice.counts(result.group_indices[g]) if choice is not None else {}
        w.writerow([csv_text(g), csv_text(names.get(g, g)), scores.n,
                    *["" if scores.scores.get(m) is None else f"{100 * scores.scores[m]:.4f}" for m in metrics],
                    *(c[k] for k in counts), label.protocol, "yes" if label.comparable_with_rcc else "no"])
    write_text_atomic(path, buf.getvalue())


def write_layouts(out: Path, result: Any, layouts: list[str], names_file: Optional[str] = None,
                  label: RunLabel = RunLabel()) -> list[Path]:
    from idc_toolkit.files import write_text_atomic

    names = group_names(names_file)
    written = [out / "by_category.csv"]
    write_by_category_csv(written[0], result, names, label)
    makers = {"total-semantic": total_semantic, "by-type": by_type}
    for layout in applicable_layouts(layouts, result.groups):
        md, tex = makers[layout](result, names, label)
        for suffix, text in ((".md", md), (".tex", tex)):
            path = out / f"layout_{layout.replace('-', '_')}{suffix}"
            write_text_atomic(path, text)
            written.append(path)
    return written

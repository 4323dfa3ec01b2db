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
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.errors import EvaluationError
from idc_toolkit.files import read_text

PAPER_NAMES = {"overall": "Total", "change_only": "Semantic change", "color": "Color", "material": "Texture",
               "add": "Add", "drop": "Drop", "move": "Move", "distractor": "Distractor", "no_change": "No change"}
SHORT = {"Bleu_4": "B4", "METEOR": "M", "ROUGE_L": "R", "CIDEr": "C", "SPICE": "S"}
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


def _tables(header: list[str], rows: list[list[str]], caption: str) -> tuple[str, str]:
    md = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    esc = [h.replace("_", r"\_") for h in header]
    tex = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
           " & ".join(esc) + r" \\", r"\midrule"]
    tex += [" & ".join("--" if c == "n/a" else c.replace("_", r"\_") for c in r) + r" \\" for r in rows]
    tex += [r"\bottomrule", r"\end{tabular}", r"\caption{" + caption + "}", r"\end{table}"]
    return "\n".join(md) + "\n", "\n".join(tex) + "\n"


def total_semantic(result: Any, names: dict[str, str]) -> tuple[str, str]:
    blocks = [g for g in ("overall", "change_only") if g in result.groups]
    metrics = _metrics(result)
    header = [""] + [f"{names.get(g, g)} {SHORT[m]}" for g in blocks for m in metrics]
    row = ["this run"] + [_cell(result.groups[g].scores.get(m)) for g in blocks for m in metrics]
    return _tables(header, [row], "Total and semantic-change scores (x100), each group scored on its own.")


def by_type(result: Any, names: dict[str, str]) -> tuple[str, str]:
    types = [g for g in result.groups if g not in _NOT_TYPES and not g.startswith("iou_")]
    if not types:
        raise EvaluationError("--layout by-type needs categories (change types); this run has none")
    header = ["metric"] + [names.get(t, t) for t in types]
    rows = [[SHORT[m]] + [_cell(result.groups[t].scores.get(m)) for t in types] for m in _metrics(result)]
    return _tables(header, rows, "Scores (x100) per change type, each type scored on its own.")


def write_by_category_csv(path: Path, result: Any, names: dict[str, str]) -> None:
    metrics = list(result.metrics)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["group", "name", "n", *metrics])
        for g, scores in result.groups.items():
            w.writerow([g, names.get(g, g), scores.n,
                        *["" if scores.scores.get(m) is None else f"{100 * scores.scores[m]:.4f}" for m in metrics]])


def write_layouts(out: Path, result: Any, layouts: list[str], names_file: Optional[str] = None) -> list[Path]:
    names = group_names(names_file)
    written = [out / "by_category.csv"]
    write_by_category_csv(written[0], result, names)
    makers = {"total-semantic": total_semantic, "by-type": by_type}
    for layout in layouts:
        if layout not in makers:
            raise EvaluationError(f"unknown --layout {layout!r}; choose {', '.join(LAYOUTS)} or all")
        md, tex = makers[layout](result, names)
        for suffix, text in ((".md", md), (".tex", tex)):
            path = out / f"layout_{layout.replace('-', '_')}{suffix}"
            path.write_text(text)
            written.append(path)
    return written

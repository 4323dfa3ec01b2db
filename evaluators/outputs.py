"""What ``idc-eval`` writes: metrics.json, metrics.md, per_pair.csv, by_category.png."""

from __future__ import annotations

import csv
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Optional, Sequence

from idc_toolkit.metrics.core import ScoreResult

SEMANTICS = (
    "each group is scored as its own coco-caption evaluation over its pairs: BLEU and METEOR are "
    "corpus scores of the group, CIDEr-D uses the group's own document frequencies, ROUGE-L and "
    "SPICE are means over the group"
)


def _git_hash() -> Optional[str]:
    """The commit the installed toolkit came from, as pip recorded it (PEP 610
    ``direct_url.json``: a ``vcs_info.commit_id`` for ``pip install git+...``); ``None``
    otherwise. Never the current directory's repository, which may be the user's own."""
    try:
        text = metadata.distribution("idc-toolkit").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        return (json.loads(text).get("vcs_info") or {}).get("commit_id")
    except ValueError:
        return None


def _version(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def build_meta(result: ScoreResult, references_source: str, fingerprint: str, extra: dict[str, Any]) -> dict[str, Any]:
    from idc_toolkit import __version__
    from idc_toolkit.metrics.tokenizer import java_version

    import datetime
    import platform

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "toolkit_version": __version__,
        "datasets_version": _version("datasets"),
        "python_version": platform.python_version(),
        "git_hash": _git_hash(),
        "pycocoevalcap_version": _version("pycocoevalcap"),
        # where a jar ran (the java scorer, SPICE): the Python scorer starts no JVM
        "java_version": java_version() if result.scorer == "java" or result.spice_status != "not requested" else "not used",
        "references": references_source,
        "dataset_fingerprint": fingerprint,
        "n_pairs": len(result.ids),
        "spice_status": result.spice_status,
        "group_semantics": SEMANTICS,
        **extra,
    }


def metrics_dict(result: ScoreResult, meta: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    choice = result.cache.metrics.get("MC")  # multiple-choice accuracy: the items and unparsed answers beside it

    def entry(name: str) -> dict[str, Any]:
        g = result.groups[name]
        return {**g.scores, "n": g.n, **(choice.counts(result.group_indices[name]) if choice is not None else {})}

    categories = [g for g in result.groups if g not in ("overall", "change_only")]
    out: dict[str, Any] = {"overall": entry("overall"), "by_category": {c: entry(c) for c in categories}}
    if "change_only" in result.groups:
        out["change_only"] = entry("change_only")
    out["ci"] = {g: {m: list(v) for m, v in ms.items()} for g, ms in result.ci.items()}
    out["meta"] = meta
    out["warnings"] = warnings
    return out


def markdown_table(result: ScoreResult) -> str:
    """The papers' table: every metric x100 (CIDEr too), one row per group; with ``MC_accuracy``,
    the items asked and the unparsed answers beside it."""
    from idc_toolkit.escape import markdown_table as table

    metrics = [m for m in result.metrics]
    choice = result.cache.metrics.get("MC")
    rows = []
    for name, g in result.groups.items():
        cells = []
        for m in metrics:
            v = g.scores.get(m)
            cell = "n/a" if v is None else f"{100 * v:.1f}"
            ci = result.ci.get(name, {}).get(m)
            if ci is not None and v is not None:
                cell += f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
            cells.append(cell)
        if choice is not None:
            c = choice.counts(result.group_indices[name])
            cells += [c["MC_items"], c["MC_unparsed"]]
        rows.append([name, g.n, *cells])
    shown = [*metrics, *(["MC items", "MC unparsed"] if choice is not None else [])]
    return "\n".join(table(["group", "n", *shown], rows, ["---", "---:", *["---:"] * len(shown)]))


#: per_pair.csv's scores are formatted this many rows at a time: memory that does not grow with the pairs
ROWS_FORMATTED = 4096


def write_per_pair(path: Path, result: ScoreResult, predictions: dict[str, str], references: dict[str, list[str]],
                   categories: dict[str, Optional[str]]) -> None:
    import numpy as np

    from idc_toolkit.escape import csv_text
    from idc_toolkit.metrics.mc_accuracy import PAIR_COLUMNS
    from idc_toolkit.files import open_atomic

    metrics = [m for m in result.metrics if m in result.per_pair]
    # the groups a pair was scored in beyond its category (IoU groups, --groups, --group-by), ";"-joined
    category_names = set(categories.values())
    extra = [g for g in result.group_indices if g not in ("overall", "change_only") and g not in category_names]
    member: dict[int, list[str]] = {}
    for g in extra:
        for k in result.group_indices[g]:
            member.setdefault(k, []).append(g)
    judge = result.cache.metrics.get("JUDGE")
    notes = getattr(judge, "notes", None) or []  # what the judge said of each pair, where one judged
    choice = result.cache.metrics.get("MC")  # the letter read from each answer, the correct one, the outcome
    columns = [np.asarray(result.per_pair[m]) for m in metrics]
    with open_atomic(path) as fh:  # row by row to the file: no copy of the whole table in memory
        w = csv.writer(fh)
        w.writerow(["pair_id", "category", "prediction", "references", *metrics, "groups",
                    *(["judgement"] if notes else []), *(PAIR_COLUMNS if choice is not None else ())])
        for k, pid in enumerate(result.ids):  # text cells through csv_text (never run as formulas), scores as numbers
            if k % ROWS_FORMATTED == 0:  # as Python floats (numpy scalars format slowly), a block of rows at a time
                scores = [[_value(v) for v in c[k: k + ROWS_FORMATTED].tolist()] for c in columns]
            w.writerow([csv_text(pid), csv_text(categories.get(pid) or ""), csv_text(predictions[pid]),
                        json.dumps(references[pid], ensure_ascii=False), *(c[k % ROWS_FORMATTED] for c in scores),
                        csv_text(";".join(member.get(k, []))), *([csv_text(notes[k])] if notes else []),
                        *([csv_text(c) for c in choice.pair_cells(k)] if choice is not None else [])])


def _value(v: float) -> str:
    """A per-pair score; empty where it is undefined (a judge column on a pair it does not apply to)."""
    return "" if v != v else f"{v:.6f}"


def chart_series(result: ScoreResult) -> dict[str, dict[str, Any]]:
    """What :func:`plot_by_category` draws, per metric: the groups' values x100 (``None`` for
    n/a) and the bootstrap interval half-widths, below and above. A metric with no value in
    any group (SPICE without its jars) is left out, so it gets no legend entry."""
    names = list(result.groups)
    series = {}
    for m in (metric.chart_column for metric in result.cache.metrics.values()):
        values = [result.groups[n].scores.get(m) for n in names]
        if all(v is None for v in values):
            continue
        low, high = [], []
        for n, v in zip(names, values):
            ci = (result.ci.get(n) or {}).get(m)
            low.append(100 * (v - ci[0]) if ci and v is not None else 0.0)
            high.append(100 * (ci[1] - v) if ci and v is not None else 0.0)
        series[m] = {"values": [None if v is None else 100 * v for v in values], "err_low": low, "err_high": high}
    return series


def chart_data(result: ScoreResult) -> dict[str, Any]:
    """What ``by_category.png`` shows, as plain data: the groups' names, sizes and series."""
    return {"names": list(result.groups), "n": [result.groups[n].n for n in result.groups], "series": chart_series(result)}


def plot_by_category(path: Path, result: ScoreResult, caveat: str = "") -> Path:
    """``by_category.png`` of ``result`` (:func:`.chart.draw_by_category`)."""
    from .chart import draw_by_category

    return draw_by_category(path, chart_data(result), caveat)


#: every file an evaluation writes into ``--out`` (what a rerun may replace, and nothing else)
OUTPUT_FILES = ("metrics.json", "metrics.md", "per_pair.csv", "by_category.png", "by_category.csv",
                *(f"layout_{name.replace('-', '_')}{suffix}" for name in ("total-semantic", "by-type")
                  for suffix in (".md", ".tex")))


#: what ``idc-eval --model`` keeps beside an evaluation in the same ``--out``
MODEL_RUN_FILES = ("predictions.jsonl", "model.json", "attention", "reversed")  # reversed/: --reverse's swapped-pair captions
EVALUATION_RECORD = "evaluation.json"


def _legacy_record(out_dir: Path) -> Optional[dict[str, Any]]:
    """The record of an evaluation written before ``.idc_run/evaluation.json`` existed: the
    ``run`` block of its ``metrics.json``."""
    from idc_toolkit.runs.fingerprint import canonical, digest

    try:
        old = json.loads((out_dir / "metrics.json").read_text()).get("meta", {}).get("run")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(old, dict):
        return None
    fields = canonical({"kind": "evaluation", **old})
    return {"kind": "evaluation", "fingerprint": digest(fields), "fields": fields, "complete": True}


def open_evaluation_folder(out_dir: Path, run: dict[str, Any], overwrite: bool, progress: bool = True):
    """``--out`` of an evaluation, under the run engine's rule (:class:`~idc_toolkit.runs.RunFolder`):
    the same run rewrites its files, another one is refused naming what differs, ``--overwrite``
    replaces only what an evaluation wrote (stale tables included), and files that no run of
    ours wrote are refused with or without it. Predictions ``idc-eval --model`` wrote into the
    same folder stay."""
    from idc_toolkit.runs import RunFolder

    from idc_toolkit.judge import JUDGE_DIR

    return RunFolder(out_dir, "evaluation", run, owned=OUTPUT_FILES, tolerated=(*MODEL_RUN_FILES, JUDGE_DIR), card_record=False,
                     record_file=EVALUATION_RECORD, legacy_record=_legacy_record, progress=progress,
                     all_ranks=False).open(overwrite)  # under torchrun rank 0 alone scores what every rank generated


COMPARE_FILE = "compare.json"


def _legacy_compare(out_dir: Path) -> Optional[dict[str, Any]]:
    """A ``compare.json`` written before its record existed: ours (settings unknown) only when it
    holds the report ``compare`` writes; any other file of that name is the user's."""
    try:
        report = json.loads((out_dir / COMPARE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(report, dict) or not {"a", "b", "n_pairs", "resamples", "seed", "metrics"} <= set(report):
        return None
    return {"kind": "compare", "fingerprint": None, "fields": {"kind": "compare", "settings": "unknown (older toolkit)"},
            "complete": True}


def open_compare_folder(out_dir: Path, run: dict[str, Any], overwrite: bool):
    """``--out`` of ``idc-eval compare`` under the run engine's rule: the same comparison
    rewrites ``compare.json``, another is refused naming what differs, ``--overwrite`` replaces
    only ``compare.json``; an evaluation's or a generation's files beside it stay."""
    from idc_toolkit.judge import JUDGE_DIR, JUDGES_DIR
    from idc_toolkit.runs import RunFolder

    return RunFolder(out_dir, "compare", run, owned=(COMPARE_FILE, "compare.md", "compare.tex"),
                     tolerated=(*OUTPUT_FILES, *MODEL_RUN_FILES, JUDGE_DIR, JUDGES_DIR),
                     card_record=False, record_file="compare.json", legacy_record=_legacy_compare).open(overwrite)


def protocol_line(meta: dict[str, Any]) -> str:
    """The protocol (with its caveat) and the presentation, as ``metrics.md`` and idc-eval state them."""
    from .protocols import Comparability

    protocol = meta.get("protocol") or {"name": "rcc", "comparable_with_rcc": True}
    return (Comparability.of(protocol).heading
            + (f"; presentation: {meta['presentation']}" if meta.get("presentation") else ""))


def write_outputs(out_dir: Path, result: ScoreResult, predictions: dict[str, str], references: dict[str, list[str]],
                  categories: dict[str, Optional[str]], meta: dict[str, Any], warnings: list[str],
                  layouts: Sequence[str] = (), group_names: Optional[str] = None, label: Any = None) -> dict[str, Any]:
    from idc_toolkit.files import write_text_atomic

    from .chart import draw_by_category
    from .paper_tables import RunLabel, write_layouts

    out_dir.mkdir(parents=True, exist_ok=True)
    label = label or RunLabel()
    unparsed = meta.get("multiple_choice")  # the chart's accuracy bars say what they rest on too
    draw_by_category(out_dir / "by_category.png", chart_data(result), " ".join(t for t in (label.caveat, unparsed and (
        f"MC_accuracy: {unparsed['unparsed']} of {unparsed['items']} answers unparsed, counted as not correct")) if t))
    write_layouts(out_dir, result, list(layouts), group_names, label)
    data = metrics_dict(result, meta, warnings)
    write_text_atomic(out_dir / "metrics.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    table = (protocol_line(meta) + "\n\n" + markdown_table(result))
    note = f"\n\nScores x100. {SEMANTICS[0].upper() + SEMANTICS[1:]}.\nSPICE: {result.spice_status}\n"
    if meta.get("judge_answers"):
        from idc_toolkit.metrics.judge_columns import answers_line

        note += answers_line(meta["judge_answers"]) + "\n"
    if meta.get("multiple_choice"):
        from idc_toolkit.metrics.mc_accuracy import counts_line

        note += counts_line(meta["multiple_choice"]) + "; caption metrics score the pairs with references only\n"
    write_text_atomic(out_dir / "metrics.md", table + note)
    write_per_pair(out_dir / "per_pair.csv", result, predictions, references, categories)
    return data

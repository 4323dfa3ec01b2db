"""What ``idc-eval`` writes: metrics.json, metrics.md, per_pair.csv, by_category.png."""

from __future__ import annotations

import csv
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.errors import EvaluationError
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

    return {
        "toolkit_version": __version__,
        "git_hash": _git_hash(),
        "pycocoevalcap_version": _version("pycocoevalcap"),
        "java_version": java_version(),
        "references": references_source,
        "dataset_fingerprint": fingerprint,
        "n_pairs": len(result.ids),
        "spice_status": result.spice_status,
        "group_semantics": SEMANTICS,
        **extra,
    }


def metrics_dict(result: ScoreResult, meta: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    def entry(name: str) -> dict[str, Any]:
        g = result.groups[name]
        return {**g.scores, "n": g.n}

    categories = [g for g in result.groups if g not in ("overall", "change_only")]
    out: dict[str, Any] = {"overall": entry("overall"), "by_category": {c: entry(c) for c in categories}}
    if "change_only" in result.groups:
        out["change_only"] = entry("change_only")
    out["ci"] = {g: {m: list(v) for m, v in ms.items()} for g, ms in result.ci.items()}
    out["meta"] = meta
    out["warnings"] = warnings
    return out


def markdown_table(result: ScoreResult) -> str:
    """The papers' table: every metric x100 (CIDEr too), one row per group."""
    metrics = [m for m in result.metrics]
    header = "| group | n | " + " | ".join(metrics) + " |"
    rule = "| --- | ---: |" + " ---: |" * len(metrics)
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
        rows.append(f"| {name} | {g.n} | " + " | ".join(cells) + " |")
    return "\n".join([header, rule, *rows])


def write_per_pair(path: Path, result: ScoreResult, predictions: dict[str, str], references: dict[str, list[str]],
                   categories: dict[str, Optional[str]]) -> None:
    metrics = [m for m in result.metrics if m in result.per_pair]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "category", "prediction", "references", *metrics])
        for k, pid in enumerate(result.ids):
            w.writerow([pid, categories.get(pid) or "", predictions[pid], json.dumps(references[pid], ensure_ascii=False),
                        *(f"{float(result.per_pair[m][k]):.6f}" for m in metrics)])


def plot_by_category(path: Path, result: ScoreResult) -> Path:
    groups = [g for g in result.groups if g != "overall"]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from idc_toolkit.metrics.registry import chart_columns

    metrics = list(chart_columns(list(result.cache.metrics)))
    names = ["overall", *groups]
    x = np.arange(len(names))
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(names)), 4))
    for j, m in enumerate(metrics):
        vals = [100 * (result.groups[n].scores.get(m) or 0.0) for n in names]
        ax.bar(x + j * width - 0.4 + width / 2, vals, width, label=m)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{n}\n(n={result.groups[n].n})" for n in names], fontsize=8)
    ax.set_ylabel("score x100")
    ax.set_title("Scores per category (each group scored on its own, as the papers do)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def check_previous_run(out_dir: Path, run: dict[str, Any], overwrite: bool) -> None:
    """Refuse to write over the results of another run (the run engine's rule): the same
    fingerprint rewrites them, another one names what differs, ``--overwrite`` replaces."""
    from idc_toolkit.runs.fingerprint import differences

    previous = out_dir / "metrics.json"
    if overwrite or not previous.is_file():
        return
    try:
        old = json.loads(previous.read_text()).get("meta", {}).get("run")
    except (OSError, ValueError, AttributeError):
        old = None
    if old is None:
        raise EvaluationError(f"{out_dir} holds results of an unknown run (metrics.json without a run record); "
                              "pass --overwrite to replace them")
    changed = differences(old, run)
    if changed:
        raise EvaluationError(f"{out_dir} holds results of another run ({'; '.join(changed)}); "
                              "pass --overwrite to replace them, or choose another --out")


def write_outputs(out_dir: Path, result: ScoreResult, predictions: dict[str, str], references: dict[str, list[str]],
                  categories: dict[str, Optional[str]], meta: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    data = metrics_dict(result, meta, warnings)
    (out_dir / "metrics.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    protocol = meta.get("protocol") or {"name": "rcc", "comparable_with_rcc": True}
    table = (f"Protocol: {protocol['name']}" + ("" if protocol["comparable_with_rcc"] else " (NOT comparable with rcc-protocol numbers)")
             + "\n\n" + markdown_table(result))
    note = f"\n\nScores x100. {SEMANTICS[0].upper() + SEMANTICS[1:]}.\nSPICE: {result.spice_status}\n"
    (out_dir / "metrics.md").write_text(table + note)
    write_per_pair(out_dir / "per_pair.csv", result, predictions, references, categories)
    plot_by_category(out_dir / "by_category.png", result)
    return data

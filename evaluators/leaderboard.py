"""``idc-eval leaderboard``: several systems' predictions re-scored under one protocol and one
tokenization into a single table (markdown, LaTeX, CSV), each row with its source, protocol,
number of runs and the caveats that travel with it.

Files given the same ``--names`` entry are runs of one system (seeds): their row holds the mean
and, in brackets, the standard deviation across runs (ddof 1), the way papers that report seeds
print them; each file is scored on its own first. Without ``--names`` every file is its own row,
and a file given twice (or a copy of it) is refused. Published predictions (the shared DDLA file)
and the user's runs are treated alike.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from idc_toolkit.errors import EvaluationError
from idc_toolkit.judge.args import JudgeArgs
from idc_toolkit.options import option

from .args import ReferenceArgs, ScoringArgs, allow_mixed_presentations_option, protocol_option, scorer_option
from .protocols import Comparability


@dataclass
class LeaderboardArgs(ScoringArgs, JudgeArgs, ReferenceArgs):
    """``idc-eval leaderboard FILE...``: what every file is scored against, and how (with ``--judge``,
    every file is judged too, and ``--agreement-judge`` asks a second judge the same questions)."""

    names: Optional[list[str]] = option(None, "one row label per file (files sharing a label are runs of one "
                                              "system: mean and sd); default: each file's name", nargs="+")
    protocol: str = protocol_option()
    scorer: Optional[str] = scorer_option()
    allow_mixed_presentations: bool = allow_mixed_presentations_option()
    agreement_judge: Optional[str] = option(None, "with --judge and --out: a second judge (served by the same "
                                                  "--judge-endpoint, or a local model) asked the same questions: "
                                                  "the table adds Kendall's tau of each judge column's ranking "
                                                  "and Cohen's kappa per question (agreement.json)", metavar="MODEL")
    out: Optional[str] = option(None, "folder for leaderboard.md, .tex, .csv and .json (idc-view --leaderboard shows it)",
                                record=False)


def _short_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def refuse_repeated_files(files: list[Any], what: str = "") -> None:
    """The same predictions given twice, under its own name or a copy's (equal content, by SHA-256),
    are refused: a second row, or a system compared with itself, would say nothing."""
    from idc_toolkit.files import content_sha256

    seen: dict[str, str] = {}
    for f in files:
        if isinstance(f, (str, Path)) and Path(f).is_file():
            digest = content_sha256(f)
            if digest in seen:
                same = "is given twice" if Path(seen[digest]).resolve() == Path(f).resolve() else f"holds what {seen[digest]} holds"
                raise EvaluationError(f"{what}{f}: {same} (sha256 {digest[:12]}); give each predictions file once")
            seen[digest] = str(f)


def check_presentations(runs: list[Any], allow_mixed: bool, what: str = "") -> list[Optional[str]]:
    """Each run's presentation (how its model was shown the pairs: its ``model.json``; ``None`` for
    predictions without one, which state none). Runs stating different presentations are refused
    unless ``allow_mixed``: the presentation is part of what a score measures."""
    from idc_toolkit.presentation import recorded_presentation

    found = [recorded_presentation(r) for r in runs]
    stated: dict[str, str] = {}
    for run, shown in zip(runs, found):
        if shown is not None:
            stated.setdefault(shown, "<in memory>" if isinstance(run, Mapping) else str(run))
    if len(stated) > 1 and not allow_mixed:
        named = ", ".join(f"{source}: {shown}" for shown, source in stated.items())
        raise EvaluationError(f"{what}the runs' models were shown the pairs differently (presentation {named}); pass "
                              "--allow-mixed-presentations to score them together")
    return found


def default_names(files: list[str]) -> list[str]:
    """Each file's row label without ``--names``: its name (its folder's for a ``predictions.jsonl``),
    with as many of its parent folders as keep two different files apart (``a/run``, ``b/run``): only
    labels the user gives join files into one row of runs."""
    def parts(f: str) -> list[str]:
        path = Path(f).resolve()
        tail = list(path.parent.parts) if path.name == "predictions.jsonl" else [*path.parent.parts, path.stem]
        return [p for p in tail if p not in ("/", "")] or [str(f)]

    split = [parts(f) for f in files]
    depth = [1] * len(files)
    while True:
        labels = ["/".join(p[-d:]) for p, d in zip(split, depth)]
        clash = {k for k, label in enumerate(labels) if labels.count(label) > 1 and depth[k] < len(split[k])}
        if not clash:
            return labels
        for k in clash:
            depth[k] += 1


def leaderboard(files: list[str], args: Optional[LeaderboardArgs] = None, **fields: Any) -> dict[str, Any]:
    """Score every file (module docstring); returns ``{"columns", "rows"}`` and writes the tables under ``out``."""
    from dataclasses import fields as fields_of

    from idc_toolkit.metrics.registry import paper_columns, table_columns
    from idc_toolkit.options import with_fields

    from .args import EvalArgs
    from .scoring import evaluate, load_references

    a = with_fields(LeaderboardArgs, args, **fields)
    if not files:
        raise EvaluationError("give at least one predictions file")
    if a.agreement_judge and not (a.judge and a.out):
        raise EvaluationError("--agreement-judge needs --judge (the first judge) and --out (the judged evaluations "
                              "are kept there)")
    names = a.names or default_names(files)
    if len(names) != len(files):
        raise EvaluationError(f"--names gives {len(names)} labels for {len(files)} files")
    refuse_repeated_files(files)
    presentations = dict(zip(files, check_presentations(files, a.allow_mixed_presentations)))
    refs = load_references(a)
    short = table_columns() if a.judge else paper_columns()
    # every option an evaluation shares with the leaderboard (references, judge, scoring) is the leaderboard's
    shared = {f.name: getattr(a, f.name) for f in fields_of(EvalArgs) if f.name in LeaderboardArgs.__dataclass_fields__}
    scored: dict[str, list[dict[str, Any]]] = {}
    judged: list[Path] = []
    for k, (name, path) in enumerate(zip(names, files)):
        for j, judge in enumerate([a.judge, a.agreement_judge] if a.agreement_judge else [a.judge]):
            # each judged evaluation kept under --out when agreement is asked: agreement reads their judgements
            where = str(Path(a.out) / "judged" / f"{k}-{j}") if a.agreement_judge else None
            m = evaluate(path, EvalArgs(**{**shared, "judge": judge, "breakdown": bool(a.agreement_judge), "name": name,
                                           "out": where, "overwrite": True}), refs=_copy(refs)).metrics
            if where:
                judged.append(Path(where))
            if j == 0:
                scored.setdefault(name, []).append({"file": path, "sha256": _short_hash(path), "metrics": m,
                                                    "presentation": presentations[path]})
    first = next(iter(scored.values()))[0]["metrics"]
    columns = [c for c in (*short, "S*m") if c in first["overall"]]
    rows = []
    for name, runs in scored.items():
        values = {c: [r["metrics"]["overall"][c] for r in runs] for c in columns}
        caveats = list(dict.fromkeys(w for r in runs for w in r["metrics"]["warnings"]))
        missing = sum(r["metrics"]["meta"]["n_missing"] for r in runs)
        if missing:
            caveats.insert(0, f"{missing} pair(s) without a prediction left out")
        protocol = runs[0]["metrics"]["meta"]["protocol"]
        if Comparability.of(protocol).note:
            caveats.insert(0, Comparability.of(protocol).note)
        shown = list(dict.fromkeys(r["presentation"] for r in runs if r["presentation"]))
        rows.append({"name": name, "runs": len(runs), "protocol": protocol["name"], "n": runs[0]["metrics"]["overall"]["n"],
                     "presentation": ", ".join(shown) or None,
                     "mean": {c: statistics.fmean(v) for c, v in values.items()},
                     "sd": {c: spread(v) for c, v in values.items()},
                     "sources": [f"{r['file']} (sha256 {r['sha256']})" for r in runs], "caveats": caveats})
    out = {"columns": columns, "short": {c: short.get(c, c) for c in columns}, "rows": rows,
           "references": refs.source}
    if a.judge:
        out["judge"] = a.judge
    if a.agreement_judge:
        from .agreement import judge_agreement

        report = judge_agreement(judged, out=a.out)
        out["agreement"] = {"judges": report["judges"], "kappa": report["questions"][0]["overall"]["kappa"],
                            "tau": {r["column"]: r["tau"] for r in report["rankings"] if r["group"] == "overall"}}
    if a.out:
        folder = Path(a.out)
        folder.mkdir(parents=True, exist_ok=True)
        md, tex = tables(out)
        (folder / "leaderboard.md").write_text(md)
        (folder / "leaderboard.tex").write_text(tex)
        (folder / "leaderboard.csv").write_text(to_csv(out))
        (folder / "leaderboard.json").write_text(json.dumps(out, indent=1))  # what idc-view --leaderboard shows
    return out


def _copy(refs):
    """References are regrouped by a protocol in place: each file gets its own copy."""
    import copy

    return copy.deepcopy(refs)


def spread(values: list[float]) -> Optional[float]:
    """The standard deviation across runs (ddof 1), as papers reporting seeds print it; none for one run."""
    return statistics.stdev(values) if len(values) > 1 else None


def mean_sd(mean: float, sd: Optional[float]) -> str:
    """``mean (sd)`` x100, the sd left out for one run."""
    return f"{100 * mean:.1f}" + (f" ({100 * sd:.1f})" if sd is not None else "")


def _cell(row: dict[str, Any], c: str) -> str:
    return mean_sd(row["mean"][c], row["sd"][c])


def tables(out: dict[str, Any]) -> tuple[str, str]:
    """The markdown and LaTeX table: one row per system, the paper columns x100 (sd across runs)."""
    from .paper_tables import RunLabel, markdown_and_latex

    shown = _presentations_shown(out)
    header = ["system", "runs", "n", *(out["short"][c] for c in out["columns"]), "protocol",
              *(["presentation"] if shown else [])]
    rows = [[r["name"], str(r["runs"]), str(r["n"]), *(_cell(r, c) for c in out["columns"]), r["protocol"],
             *([r.get("presentation") or "none stated"] if shown else [])] for r in out["rows"]]
    caveats = "; ".join(f"{r['name']}: {', '.join(r['caveats'])}" for r in out["rows"] if r["caveats"])
    caption = ("Every system re-scored by idc-toolkit against " + out["references"] + ", x100; (sd) across runs."
               + (f" Judge: {out['judge']}." if out.get("judge") else "")
               + (f" {agreement_line(out['agreement'])}." if out.get("agreement") else "")
               + (f" Caveats: {caveats}." if caveats else ""))
    md, tex = markdown_and_latex(header, rows, caption, RunLabel(), "leaderboard")
    return md, tex


def agreement_line(agreement: dict[str, Any]) -> str:
    """A judged table's agreement in a line: Cohen's kappa per question, Kendall's tau per judge column."""
    from idc_toolkit.metrics.judge_columns import SHORT

    def number(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    taus = ", ".join(f"{SHORT.get(c, c)} {number(t)}" for c, t in agreement["tau"].items())
    return (f"Agreement with {agreement['judges'][1]}: Cohen's kappa {number(agreement['kappa'])} per question; "
            f"Kendall's tau of the rankings: {taus}")


def _presentations_shown(out: dict[str, Any]) -> bool:
    """Whether any row's runs record a presentation (then the tables have its column)."""
    return any(r.get("presentation") for r in out["rows"])


def to_csv(out: dict[str, Any]) -> str:
    """``leaderboard.csv``: text cells through :func:`~idc_toolkit.escape.csv_text`, numbers as numbers."""
    from idc_toolkit.escape import csv_text

    buf = io.StringIO()
    w = csv.writer(buf)
    shown = _presentations_shown(out)
    w.writerow(["system", "runs", "n", *out["columns"], *(f"{c} sd" for c in out["columns"]), "protocol",
                *(["presentation"] if shown else []), "sources", "caveats"])
    for r in out["rows"]:
        w.writerow([csv_text(r["name"]), r["runs"], r["n"], *(f"{100 * r['mean'][c]:.4f}" for c in out["columns"]),
                    *("" if r["sd"][c] is None else f"{100 * r['sd'][c]:.4f}" for c in out["columns"]),
                    csv_text(r["protocol"]), *([csv_text(r.get("presentation") or "")] if shown else []),
                    csv_text(" | ".join(r["sources"])), csv_text(" | ".join(r["caveats"]))])
    return buf.getvalue()

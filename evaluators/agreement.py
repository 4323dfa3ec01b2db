"""Do two judges agree? ``idc-eval agreement EVAL...`` reads judged evaluations (``idc-eval
--predictions/--model --judge … --out EVAL``) of the same systems under two or more judges.

* **Per question** (each pair of judges): Cohen's κ of their yes / no answers to the same
  questions (the same difference, claim, no-change or inverse question of the same pair and
  system), over the questions both answered, with a bootstrap interval over pairs; overall, by
  question kind and by category.
* **Across systems**: Kendall's τ-b between the systems' scores under one judge and under the
  other, for every judge column, overall and per category (DiffSpot reports τ = 1.0 across three
  judges: a ranking that holds whichever judge reads it).

Scores from different judges are not comparable; these two numbers say how far the choice of
judge decides a conclusion.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from idc_toolkit import checks
from idc_toolkit.errors import EvaluationError
from idc_toolkit.escape import csv_text_read
from idc_toolkit.options import option

KINDS = ("stated", "supported", "no_change", "inverse")


@dataclass
class AgreementArgs:
    """``idc-eval agreement``'s options."""

    out: Optional[str] = option(None, "write agreement.json and agreement.md here", metavar="DIR")
    bootstrap: int = option(1000, "resamples of the pairs for kappa's 95%% interval", check=checks.positive_int, metavar="N")
    seed: int = option(0, "the resampling's seed", check=checks.non_negative_int)


@dataclass
class Judged:
    """One judged evaluation folder."""

    folder: Path
    judge: str
    identity: str
    system: str
    system_label: str
    records: dict[str, dict[str, Any]]
    categories: dict[str, str]
    scores: dict[str, dict[str, Optional[float]]] = field(default_factory=dict)  #: group -> column -> score


def read_judged(folder: Path) -> Judged:
    from idc_toolkit.metrics.judge_columns import COLUMNS
    from idc_toolkit.runs.fingerprint import digest

    metrics_file, judgements = folder / "metrics.json", folder / "judge" / "judgements.jsonl"
    for path in (metrics_file, judgements):
        if not path.is_file():
            raise EvaluationError(f"{folder}: no {path.relative_to(folder)} (not a judged evaluation: "
                                  "idc-eval --judge MODEL --out DIR writes one)")
    metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
    meta = metrics.get("meta", {})
    judge = (meta.get("run") or {}).get("judge")
    if not judge:
        raise EvaluationError(f"{metrics_file}: no judge in the run record")
    with judgements.open(encoding="utf-8") as fh:
        records = {rec["pair_id"]: rec for rec in map(json.loads, fh)}
    categories = {}
    per_pair = folder / "per_pair.csv"
    if per_pair.is_file():
        with per_pair.open(encoding="utf-8", newline="") as fh:
            categories = {csv_text_read(row["pair_id"]): csv_text_read(row.get("category") or "") for row in csv.DictReader(fh)}
    groups = {"overall": metrics.get("overall", {}), **metrics.get("by_category", {})}
    scores = {g: {c: v.get(c) for c in COLUMNS if c in v} for g, v in groups.items()}
    name = (meta.get("arguments") or {}).get("name") or Path(str(meta.get("predictions") or folder.name)).name
    return Judged(folder, judge["judge"], digest(judge), (meta.get("run") or {}).get("predictions") or digest(records),
                  name, records, categories, scores)


def questions(rec: dict[str, Any]) -> list[tuple[str, str, Optional[bool]]]:
    """(kind, the question's own text, answer) of one judgement record, in a fixed order."""
    out = [("stated", d, v) for d, v in zip(rec["differences"], rec["stated"])]
    out += [("supported", c, v) for c, v in zip(rec["claims"], rec["supported"])]
    if rec.get("says_no_change") is not None or "no_change" in (rec.get("unparsed") or []) + (rec.get("failed") or []):
        out.append(("no_change", "", rec.get("says_no_change")))
    if rec.get("inverse") is not None or "inverse" in (rec.get("unparsed") or []) + (rec.get("failed") or []):
        out.append(("inverse", rec.get("reversed") or "", rec.get("inverse")))
    return out


def kappa_table(tables: np.ndarray) -> float:
    """Cohen's κ of summed 2×2 tables (rows: [both yes, a yes b no, a no b yes, both no]); NaN
    where chance agreement is perfect (one answer throughout)."""
    n11, n10, n01, n00 = (tables[..., k] for k in range(4))
    n = n11 + n10 + n01 + n00
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (n11 + n00) / n
        a_yes, b_yes = (n11 + n10) / n, (n11 + n01) / n
        chance = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
        return (observed - chance) / (1 - chance)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Kendall's τ-b (ties in either ranking accounted for); None for fewer than 2 systems or a
    ranking with every score tied. A handful of systems: the O(n²) count is all it needs."""
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(n), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif dx == dy:
            concordant += 1
        else:
            discordant += 1
    denominator = np.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return None if n < 2 or denominator == 0 else float((concordant - discordant) / denominator)


def _pair_tables(a: Judged, b: Judged) -> tuple[list[str], np.ndarray, int]:
    """Per pair of ``a`` and ``b`` (same system), a 2×2 table per question kind (pairs × kinds × 4),
    and the number of questions one of them left unanswered."""
    ids = [pid for pid in a.records if pid in b.records]
    tables = np.zeros((len(ids), len(KINDS), 4), dtype=np.int64)
    unanswered = 0
    for row, pid in enumerate(ids):
        qa, qb = questions(a.records[pid]), questions(b.records[pid])
        if [q[:2] for q in qa] != [q[:2] for q in qb]:
            raise EvaluationError(f"pair {pid!r}: {a.folder} and {b.folder} asked different questions (another "
                                  "--differences-column or other captions): their judges cannot be compared")
        for (kind, _, va), (_, _, vb) in zip(qa, qb):
            if va is None or vb is None:
                unanswered += 1
                continue
            tables[row, KINDS.index(kind), (0 if va else 2) + (0 if vb else 1)] += 1
    return ids, tables, unanswered


def judge_agreement(evaluations: Sequence[str | Path], args: Optional[AgreementArgs] = None, **fields: Any) -> dict[str, Any]:
    """The agreement report (module docstring); with ``out``, also written as ``agreement.json``
    and ``agreement.md``."""
    a = args if args is not None else AgreementArgs(**fields)
    judged = [read_judged(Path(e)) for e in evaluations]
    seen: dict[tuple[str, str], Path] = {}
    for j in judged:
        key = (j.system, j.identity)
        if key in seen:
            raise EvaluationError(f"{j.folder} and {seen[key]}: the same captions judged by the same judge twice")
        seen[key] = j.folder
    labels: dict[str, str] = {}
    for j in judged:
        if j.identity not in labels:
            taken = sum(1 for lab in labels.values() if lab.split(" #")[0] == j.judge)
            labels[j.identity] = j.judge if not taken else f"{j.judge} #{taken + 1}"
    if len(labels) < 2:
        raise EvaluationError("every evaluation was judged by the same judge: agreement needs two judges")
    rng = np.random.default_rng(a.seed)
    report: dict[str, Any] = {"judges": list(labels.values()), "systems": sorted({j.system_label for j in judged}),
                              "questions": [], "rankings": []}
    for ja, jb in combinations(labels, 2):
        by_system = {j.system: j for j in judged if j.identity == ja}
        both = [(by_system[j.system], j) for j in judged if j.identity == jb and j.system in by_system]
        if not both:
            continue
        rows, cats, unanswered = [], [], 0
        for x, y in both:
            ids, tables, missing = _pair_tables(x, y)
            rows.append(tables)
            cats += [x.categories.get(pid, "") for pid in ids]
            unanswered += missing
        tables = np.concatenate(rows)
        weights = rng.multinomial(len(tables), np.full(len(tables), 1 / len(tables)), size=a.bootstrap)

        def entry(mask: np.ndarray, kinds: slice | int = slice(None)) -> dict[str, Any]:
            t = tables[mask][:, kinds]
            t = t.sum(axis=1) if t.ndim == 3 else t
            value = kappa_table(t.sum(axis=0))
            resampled = kappa_table(weights[:, mask] @ t)
            resampled = resampled[~np.isnan(resampled)]
            interval = [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))] if resampled.size else None
            return {"kappa": None if np.isnan(value) else float(value), "ci": interval, "questions": int(t.sum())}

        everything = np.ones(len(tables), dtype=bool)
        cats_arr = np.array(cats)
        report["questions"].append({
            "judges": [labels[ja], labels[jb]], "systems": len(both), "unanswered": unanswered,
            "overall": entry(everything),
            "by_question": {k: entry(everything, i) for i, k in enumerate(KINDS) if tables[:, i].sum()},
            "by_category": {c: entry(cats_arr == c) for c in sorted(set(cats)) if c},
        })
        columns = sorted({c for x, _ in both for c in x.scores.get("overall", {})})
        groups = sorted({g for x, _ in both for g in x.scores})
        for column in columns:
            for group in groups:
                got = [(x.scores.get(group, {}).get(column), y.scores.get(group, {}).get(column)) for x, y in both]
                got = [(u, v) for u, v in got if u is not None and v is not None]
                if len(got) < 2:
                    continue
                tau = kendall_tau_b([u for u, _ in got], [v for _, v in got])
                report["rankings"].append({"judges": [labels[ja], labels[jb]], "column": column, "group": group,
                                           "systems": len(got), "tau": tau})
    if not report["questions"]:
        raise EvaluationError("no system was judged by two of the judges: agreement needs the same captions judged twice")
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "agreement.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
        (out / "agreement.md").write_text(markdown(report), encoding="utf-8")
    return report


def markdown(report: dict[str, Any]) -> str:
    def k(e: dict[str, Any]) -> str:
        if e["kappa"] is None:
            return "n/a"
        ci = f" [{e['ci'][0]:.2f}, {e['ci'][1]:.2f}]" if e["ci"] else ""
        return f"{e['kappa']:.2f}{ci}"

    lines = ["# Agreement between judges", "", "Cohen's κ per question (95% bootstrap interval over pairs):", "",
             "| judges | systems | group | κ | questions |", "| --- | ---: | --- | --- | ---: |"]
    for q in report["questions"]:
        who = " vs ".join(q["judges"])
        for group, e in [("overall", q["overall"]), *q["by_question"].items(), *q["by_category"].items()]:
            lines.append(f"| {who} | {q['systems']} | {group} | {k(e)} | {e['questions']:,} |")
        if q["unanswered"]:
            lines.append(f"| {who} | | (left out: unanswered by either) | | {q['unanswered']:,} |")
    lines += ["", "Kendall's τ-b of the systems' rankings under each judge:", "",
              "| judges | column | group | systems | τ |", "| --- | --- | --- | ---: | ---: |"]
    for r in report["rankings"]:
        tau = "n/a" if r["tau"] is None else f"{r['tau']:.2f}"
        lines.append(f"| {' vs '.join(r['judges'])} | {r['column']} | {r['group']} | {r['systems']} | {tau} |")
    return "\n".join(lines) + "\n"

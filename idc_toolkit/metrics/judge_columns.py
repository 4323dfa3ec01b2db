"""The LLM judge's scores as metric columns (functional core + the scorer's :class:`~.base.Metric`).

A judge (:mod:`idc_toolkit.judge`) answers yes / no questions about each caption; these are
turned into four per-pair values here, and a group's score is their mean over the pairs where
the value is defined:

* ``Judge_recall`` — change pairs: the share of the pair's annotated differences the caption states;
* ``Judge_precision`` — change pairs: the share of the caption's claims (sentences) that the
  references support;
* ``Judge_hallucination`` — every pair: 1 when at least one claim is supported by no reference;
* ``Judge_no_change`` — no-change pairs (``no_change`` / ``distractor``): 1 when the caption says
  nothing changed (DiffSpot's no-diff specificity);
* ``Judge_reversibility`` — pairs also captioned with before and after swapped (``--reverse``):
  1 when the two captions describe inverse changes (C3-Bench's reversibility).

Undefined values are NaN and take no part in a mean, a resample or the paired test; a group
where a column is defined for no pair has no score in it (``n/a``), not 0. A question the judge
left unanswered (unparsed, failed) takes no part either: a value is the mean of the answers
given, and undefined where none was; :attr:`JudgeScores.answers` counts what each rests on.
An empty caption is never sent to the judge: it states no difference, makes no claim (no
precision; no hallucination) and does not say that nothing changed.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .base import PairMeans

COLUMNS = ("Judge_recall", "Judge_precision", "Judge_hallucination", "Judge_no_change", "Judge_reversibility")
#: short names in the papers' table shapes
SHORT = {"Judge_recall": "J-Rec", "Judge_precision": "J-Prec", "Judge_hallucination": "J-Hal", "Judge_no_change": "J-NC",
         "Judge_reversibility": "J-Rev"}


def pair_values(stated: Sequence[Optional[bool]], supported: Sequence[Optional[bool]], no_change: bool,
                says_no_change: Optional[bool], inverse: Optional[bool] = None) -> dict[str, float]:
    """One pair's values from its judgements (module docstring); ``None``: no answer."""
    nan = float("nan")
    change = not no_change
    stated_given = [bool(v) for v in stated if v is not None]
    supported_given = [bool(v) for v in supported if v is not None]
    all_answered = len(supported_given) == len(supported)
    return {
        "Judge_recall": float(np.mean(stated_given)) if change and stated_given else nan,
        "Judge_precision": float(np.mean(supported_given)) if change and supported_given else nan,
        # one unsupported claim decides it; all supported decides it only when every claim was answered
        "Judge_hallucination": 1.0 if not all(supported_given) else 0.0 if all_answered else nan,
        "Judge_no_change": float(says_no_change) if no_change and says_no_change is not None else nan,
        "Judge_reversibility": nan if inverse is None else float(inverse),
    }


def from_records(ids: Sequence[str], records: dict[str, dict]) -> "JudgeScores":
    """The metric of the judgement records (:func:`idc_toolkit.judge.questions.record`) of ``ids``, in that order."""
    rows = [pair_values(records[i]["stated"], records[i]["supported"], records[i]["no_change"],
                        records[i]["says_no_change"], records[i].get("inverse")) for i in ids]
    columns = COLUMNS if any(records[i].get("inverse") is not None for i in ids) else COLUMNS[:-1]
    metric = JudgeScores({c: np.array([r[c] for r in rows], dtype=np.float64) for c in columns})
    metric.notes = [pair_note(records[i]) for i in ids]
    metric.answers = answer_counts([records[i] for i in ids])
    return metric


def answer_counts(records: Sequence[dict]) -> dict:
    """Questions asked, answered, unparsed and failed, overall (with the failure rate) and by
    question kind, from judgement records (what every judged number rests on)."""
    kinds = ("stated", "supported", "no_change", "inverse")
    by = {k: {"asked": 0, "answered": 0, "unparsed": 0, "failed": 0} for k in kinds}
    for rec in records:
        for kind, asked in (rec.get("asked") or {}).items():
            unparsed = (rec.get("unparsed") or []).count(kind)
            failed = (rec.get("failed") or []).count(kind)
            row = by[kind]
            row["asked"] += asked
            row["answered"] += asked - unparsed - failed
            row["unparsed"] += unparsed
            row["failed"] += failed
    total = {k: sum(row[k] for row in by.values()) for k in ("asked", "answered", "unparsed", "failed")}
    rate = (total["unparsed"] + total["failed"]) / total["asked"] if total["asked"] else 0.0
    return {"overall": {**total, "failure_rate": round(rate, 6)}, "by_question": {k: v for k, v in by.items() if v["asked"]}}


def answers_line(counts: dict) -> str:
    """What a judged table rests on, in a line (printed and written beside every judged table)."""
    t = counts["overall"]
    return (f"judge: {t['asked']:,} questions asked, {t['answered']:,} answered, {t['unparsed']:,} unparsed, "
            f"{t['failed']:,} failed ({100 * t['failure_rate']:.1f}% without an answer)")


def pair_note(record: dict) -> str:
    """What the judge said of one pair, in a line (``per_pair.csv``'s ``judgement``, the viewer's pair card)."""
    parts = []
    missed = [d for d, ok in zip(record["differences"], record["stated"]) if ok is False]
    unsupported = [c for c, ok in zip(record["claims"], record["supported"]) if ok is False]
    if record["differences"]:
        parts.append(f"stated {len(record['differences']) - len(missed)} of {len(record['differences'])} difference(s)"
                     + (f"; missed: {' | '.join(missed)}" if missed else ""))
    if unsupported:
        parts.append(f"unsupported: {' | '.join(unsupported)}")
    if record.get("says_no_change") is not None:
        parts.append("says nothing changed" if record["says_no_change"] else "does not say nothing changed")
    if record.get("inverse") is not None:
        parts.append("reversed caption is the inverse" if record["inverse"] else "reversed caption is not the inverse")
    unanswered = [f"{n} {kind} question(s) {why}" for why in ("unparsed", "failed")
                  for kind in dict.fromkeys(record.get(why) or []) for n in [(record.get(why) or []).count(kind)]]
    if unanswered:
        parts.append("no answer: " + ", ".join(unanswered))
    return "; ".join(parts)


class JudgeScores(PairMeans):
    """The judge's columns (:class:`~.base.PairMeans`: the judge is a model run on the run
    engine before scoring); ``Judge_reversibility`` only where the pairs were also captioned
    reversed, and ``notes``: what the judge said of each pair (:func:`from_records`)."""

    family = "JUDGE"
    columns = COLUMNS
    chart_column = "Judge_recall"
    paper_columns = SHORT

    def __init__(self, values: dict[str, np.ndarray]):
        super().__init__(values)
        self.notes: list[str] = []
        self.answers: dict = {}  #: :func:`answer_counts` of the pairs scored

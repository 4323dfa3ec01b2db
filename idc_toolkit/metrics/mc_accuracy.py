"""``MC_accuracy``: multiple-choice accuracy, a metric over per-pair values (:class:`~.base.PairMeans`).

Each item that asks a question (:mod:`idc_toolkit.multiple_choice`) is 1 where the letter read
from its answer is the correct one and 0 otherwise, an **unparsed** answer included (no letter
read: counted, never guessed); an item that asks none is undefined (NaN: no part in any mean).
A group's accuracy is therefore correct answers over the group's items asked, as VLM-SubtleBench's
evaluator computes it; bootstrap intervals and the paired test resample items as for any
per-pair column. :meth:`ChoiceAccuracy.counts` gives, per group, the items asked and the
unparsed answers, which every table prints beside the accuracy.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..multiple_choice import ANSWER, DISTRACTORS, QUESTION, Item, fingerprint_fields, item, read_answer
from .base import PairMeans

COLUMN = "MC_accuracy"
#: per_pair.csv's columns of an item: the letter read, the correct letter, the outcome
PAIR_COLUMNS = ("mc_letter", "mc_correct_letter", "mc_result")


class ChoiceAccuracy(PairMeans):
    """``MC_accuracy`` of raw answers (module docstring); ``--metrics MC`` (or an alias) names it."""

    family = "MC"
    aliases = ("multiple-choice", "multiple_choice", "mc_accuracy")
    columns = (COLUMN,)
    chart_column = COLUMN
    paper_columns = {COLUMN: "Acc"}

    def __init__(self, ids: Sequence[str], answers: Mapping[str, str], items: Mapping[str, Optional[Item]]):
        self.items = [items.get(i) for i in ids]
        self.readings = [None if it is None else read_answer(answers[i], it) for i, it in zip(ids, self.items)]
        values = [np.nan if it is None else float(r.letter == it.correct) for it, r in zip(self.items, self.readings)]
        super().__init__({COLUMN: np.array(values, dtype=np.float64)})

    def outcome(self, k: int) -> str:
        """``correct``, ``wrong`` or ``unparsed: <why>`` of pair ``k``; empty where it asks nothing."""
        it, reading = self.items[k], self.readings[k]
        if it is None:
            return ""
        if reading.letter is None:
            return f"unparsed: {reading.why}"
        return "correct" if reading.letter == it.correct else "wrong"

    def pair_cells(self, k: int) -> list[str]:
        """Pair ``k``'s :data:`PAIR_COLUMNS` cells."""
        it, reading = self.items[k], self.readings[k]
        if it is None:
            return ["", "", ""]
        return [reading.letter or "", it.correct, self.outcome(k)]

    def counts(self, idx: Sequence[int]) -> dict[str, int]:
        """The items a group of pairs asks, and its correct and unparsed answers."""
        asked = [k for k in idx if self.items[k] is not None]
        return {"MC_items": len(asked), "MC_correct": sum(self.readings[k].letter == self.items[k].correct for k in asked),
                "MC_unparsed": sum(self.readings[k].letter is None for k in asked)}

    def summary(self) -> dict[str, Any]:
        """What ``metrics.json``'s ``meta.multiple_choice`` records: the rule versions and the counts."""
        c = self.counts(range(len(self.items)))
        return {**fingerprint_fields(), "items": c["MC_items"], "correct": c["MC_correct"],
                "wrong": c["MC_items"] - c["MC_correct"] - c["MC_unparsed"], "unparsed": c["MC_unparsed"],
                "unparsed_in_accuracy": "not correct (accuracy = correct / items asked)"}


def counts_line(summary: Mapping[str, Any]) -> str:
    """What an accuracy rests on, in a line (printed and written beside every table with MC_accuracy)."""
    return (f"multiple choice: {summary['items']:,} items asked, {summary['correct']:,} correct, {summary['wrong']:,} "
            f"wrong, {summary['unparsed']:,} unparsed (counted as not correct; {summary['choice_order']}, "
            f"{summary['parse_rule']})")


def is_name(name: str) -> bool:
    """Whether a ``--metrics`` name names ``MC_accuracy``."""
    return name.lower() in {n.lower() for n in (ChoiceAccuracy.family, *ChoiceAccuracy.aliases)}


def items_of(ids: Sequence[str], columns: Mapping[str, Mapping[str, Any]]) -> dict[str, Optional[Item]]:
    """Every pair's item from a dataset's question columns (``{column: {pair_id: cell}}``); ValueError
    naming the pair whose cells are not a question's."""
    return {i: item(i, columns[QUESTION].get(i), columns[ANSWER].get(i), columns[DISTRACTORS].get(i)) for i in ids}

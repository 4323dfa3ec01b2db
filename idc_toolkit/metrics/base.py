"""What a metric is to the scorer: one small class per metric family, in its own module.

The scorer tokenizes once and hands every metric the same tokenized pairs; a metric keeps
whatever per-pair intermediate results it needs (cooked n-grams, METEOR statistics, ...) and
answers three questions from them, for any group of pairs given by index:

* :meth:`Metric.scores` — each group's corpus score, exactly as a separate coco-caption run on
  that group would compute it;
* :meth:`Metric.per_pair` — per-pair scores of the whole set (``per_pair.csv``);
* :meth:`Metric.resample` — the score of every bootstrap resample (rows of pair weights),
  which gives intervals and the paired test.

Adding a metric is one module with one such class and one line in :mod:`.registry`; the
scorer, bootstrap, tables, charts and the CLI's ``--metrics`` derive from the registry.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping, Optional, Sequence

import numpy as np


def once_per_distinct_pair(hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                           compute: Callable[[str, Sequence[str]], Any]) -> list[Any]:
    """``compute(hypothesis, references)`` for every pair, in order, calling it once per distinct
    pair: LEVIR-CC's ~1,000 no-change test pairs share their five references, and a model
    answers most of them alike. For a pure ``compute`` (a pair's score depends on it alone), so
    the results are what calling it for every pair gives; repeated pairs share one result."""
    done: dict[tuple[str, tuple[str, ...]], Any] = {}
    out = []
    for h, r in zip(hypotheses, references):
        key = (h, tuple(r))
        if key not in done:
            done[key] = compute(h, r)
        out.append(done[key])
    return out


class Metric:
    #: the name ``--metrics`` takes (case-insensitive, or one of ``aliases``)
    family: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    #: the score columns it produces, in table order
    columns: ClassVar[tuple[str, ...]]
    #: the column charts show for this family
    chart_column: ClassVar[str]
    #: ``{column: short name}`` of the columns the papers' tables print (``Bleu_4``: ``B4``)
    paper_columns: ClassVar[dict[str, str]] = {}
    #: True: :meth:`compute` may run in a thread beside the other metrics' (a JVM does the work)
    background: ClassVar[bool] = False
    #: True: only computed when asked for (needs something not every machine has)
    optional: ClassVar[bool] = False

    def __init__(self, spice_jars: Optional[str] = None):
        self.status = "ok"

    def start(self) -> None:
        """Called before tokenization, so slow start-ups (a JVM) overlap it."""

    def prepare(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        """Called with the tokenized pairs before any metric computes: a background metric
        starts its JVM here, before the others' Python work competes for the interpreter."""

    def compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        """Per-pair intermediate results of the tokenized pairs."""
        raise NotImplementedError

    def group(self, idx: list[int]) -> dict[str, Optional[float]]:
        raise NotImplementedError

    def scores(self, groups: Mapping[str, list[int]]) -> dict[str, dict[str, Optional[float]]]:
        """Every group's scores (a metric may batch them, as METEOR does in one JVM call)."""
        return {name: self.group(idx) for name, idx in groups.items()}

    def per_pair(self) -> dict[str, np.ndarray]:
        return {}

    def resample(self, idx: list[int], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Scores of each resample of group ``idx``: ``weights`` is resamples x len(idx)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release external resources (a JVM)."""


def nan_mean(values: np.ndarray) -> Optional[float]:
    """The mean of the defined (non-NaN) values; ``None`` where none is."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else None


class PairMeans(Metric):
    """Columns whose per-pair values are known before scoring (a model run: the judge's; the
    raw captions: reversibility's), a group's score their mean over the pairs where a value is
    defined (NaN: undefined, never 0). :meth:`compute` has nothing left to do."""

    def __init__(self, values: Mapping[str, np.ndarray]):
        super().__init__()
        self.values = {c: np.asarray(values[c], dtype=np.float64) for c in type(self).columns if c in values}
        self.columns = tuple(self.values)

    def compute(self, hypotheses, references) -> None:
        pass

    def group(self, idx):
        return {c: nan_mean(v[idx]) for c, v in self.values.items()}

    def per_pair(self):
        return dict(self.values)

    def resample(self, idx, weights):
        """Each resample's weighted mean over the pairs where a column is defined; a column the
        group defines for no pair is left out, a resample that draws none of them is NaN."""
        out = {}
        for c, v in self.values.items():
            sub = v[idx]
            defined = ~np.isnan(sub)
            if not defined.any():
                continue
            w = weights[:, defined]
            total = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[c] = np.where(total > 0, w @ sub[defined] / np.where(total > 0, total, 1), np.nan)
        return out

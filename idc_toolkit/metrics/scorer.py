"""A thin stateful wrapper over :func:`score_groups`, in the torchmetrics style."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from ..errors import EvaluationError
from .core import ScoreResult, score_groups


class CaptionScorer:
    """Accumulate (id, prediction, references, category) and score them at the end.

    >>> scorer = CaptionScorer()
    >>> scorer.update(["p1"], ["the car moved"], [["the red car moved"]], ["move"])
    >>> result = scorer.compute()   # doctest: +SKIP
    """

    def __init__(self, metrics: Optional[Sequence[str]] = None, spice_jars: Optional[str] = None,
                 bootstrap: int = 0, seed: int = 0, scorer: Optional[str] = None):
        self.metrics, self.spice_jars, self.bootstrap, self.seed = metrics, spice_jars, bootstrap, seed
        self.scorer = scorer
        self.reset()

    def reset(self) -> None:
        self._hyps: dict[str, str] = {}
        self._refs: dict[str, list[str]] = {}
        self._cats: dict[str, Optional[str]] = {}

    def update(
        self,
        ids: Iterable[str],
        predictions: Iterable[str],
        references: Iterable[Sequence[str]],
        categories: Optional[Iterable[Optional[str]]] = None,
    ) -> None:
        ids, predictions, references = list(ids), list(predictions), [list(r) for r in references]
        cats = list(categories) if categories is not None else [None] * len(ids)
        if not (len(ids) == len(predictions) == len(references) == len(cats)):
            raise EvaluationError("update() needs ids, predictions, references (and categories) of equal length")
        for pid, pred, refs, cat in zip(ids, predictions, references, cats):
            if pid in self._hyps:
                raise EvaluationError(f"pair {pid!r} was already added")
            if not refs:
                raise EvaluationError(f"pair {pid!r} has no reference")
            self._hyps[pid], self._refs[pid], self._cats[pid] = pred, refs, cat

    def compute(self) -> ScoreResult:
        if not self._refs:
            raise EvaluationError("nothing to score: call update() first")
        groups: dict[str, list[str]] = {}
        for pid, cat in self._cats.items():
            if cat is not None:
                groups.setdefault(cat, []).append(pid)
        return score_groups(self._hyps, self._refs, groups, self.metrics, self.spice_jars, self.bootstrap, self.seed,
                            scorer=self.scorer)

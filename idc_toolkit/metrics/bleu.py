"""BLEU-1..4 as coco-caption computes it: corpus-level, "closest" reference length.

Pairs are cooked once with pycocoevalcap's own ``cook_refs``/``cook_test``; a group's score is
pycocoevalcap's own ``BleuScorer.compute_score`` over that group's cooked pairs, which is
exactly what a separate run on the group computes (BLEU's corpus totals are sums over pairs).
"""

from __future__ import annotations

import math

from typing import Sequence

import numpy as np

from .base import Metric, once_per_distinct_pair


class BleuCache:
    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        from pycocoevalcap.bleu.bleu_scorer import cook_refs, cook_test

        def cook(h: str, r: Sequence[str]) -> tuple:
            crefs = cook_refs(list(r))
            return crefs, cook_test(h, crefs)

        # BleuScorer only reads the cooked values, so repeated pairs may share them
        cooked = once_per_distinct_pair(hypotheses, references, cook)
        self.crefs = [c for c, _ in cooked]
        self.ctest = [t for _, t in cooked]

    def score(self, indices: Sequence[int]) -> tuple[list[float], list[list[float]]]:
        """``[B1..B4]`` and per-pair ``[[B1 per pair], ..., [B4 per pair]]`` for a group."""
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer

        scorer = BleuScorer(n=4)
        scorer.crefs = [self.crefs[i] for i in indices]
        scorer.ctest = [self.ctest[i] for i in indices]
        if not scorer.ctest:
            return [0.0] * 4, [[] for _ in range(4)]
        score, per_pair = scorer.compute_score(option="closest", verbose=0)
        return [float(s) for s in score], per_pair

    def sufficient_statistics(self) -> np.ndarray:
        """Per pair: testlen, closest reflen, guess[1..4], correct[1..4] (for bootstrap)."""
        rows = []
        for comps in self.ctest:
            testlen = comps["testlen"]
            reflen = min((abs(l - testlen), l) for l in comps["reflen"])[1]
            rows.append([testlen, reflen, *comps["guess"], *comps["correct"]])
        return np.array(rows, dtype=np.float64)


def bleu_from_totals(totals: np.ndarray) -> np.ndarray:
    """BLEU-1..4 from summed sufficient statistics, rows = resamples (BleuScorer's formula)."""
    tiny, small = 1e-15, 1e-9
    totals = np.atleast_2d(totals)
    testlen, reflen = totals[:, 0], totals[:, 1]
    guess, correct = totals[:, 2:6], totals[:, 6:10]
    out = np.empty((totals.shape[0], 4))
    bleu = np.ones(totals.shape[0])
    for k in range(4):
        bleu = bleu * ((correct[:, k] + tiny) / (guess[:, k] + small))  # BleuScorer's `bleu *= a / b`
        # Python's float ** and math.exp, as BleuScorer: numpy's vector pow / exp round otherwise on some CPUs
        out[:, k] = [b ** (1.0 / (k + 1)) for b in bleu.tolist()]
    ratio = (testlen + tiny) / (reflen + small)
    penalty = np.array([math.exp(1 - 1 / r) if r < 1 else 1.0 for r in ratio.tolist()])
    return out * penalty[:, None]


class Bleu(Metric):
    """BLEU-1..4: a group's score is pycocoevalcap's own ``BleuScorer`` over the group's pairs;
    a resample's is :func:`bleu_from_totals` of its summed sufficient statistics (exact)."""

    family = "BLEU"
    columns = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4")
    chart_column = "Bleu_4"
    paper_columns = {"Bleu_4": "B4"}

    def compute(self, hypotheses, references) -> None:
        self.cache = BleuCache(hypotheses, references)
        self._per_pair = self.cache.score(list(range(len(hypotheses))))[1]

    def group(self, idx):
        bleu, _ = self.cache.score(idx)
        return {f"Bleu_{k + 1}": bleu[k] for k in range(4)}

    def per_pair(self):
        return {f"Bleu_{k + 1}": np.array(self._per_pair[k]) for k in range(4)}

    def resample(self, idx, weights):
        bleu = bleu_from_totals(weights @ self.cache.sufficient_statistics()[idx])
        return {f"Bleu_{k + 1}": bleu[:, k] for k in range(4)}

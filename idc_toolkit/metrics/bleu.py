"""BLEU-1..4 as coco-caption computes it: corpus-level, "closest" reference length.

Each pair comes down to the ten integers pycocoevalcap's ``cook_test(h, cook_refs(r))`` feeds
``BleuScorer.compute_score``: the hypothesis's length, the closest reference length, and per
order the n-grams guessed and those a reference holds (each clipped to its highest count in any
one reference), counted from the n-gram layouts CIDEr-D shares (:mod:`.ngrams`). A group's score
is ``compute_score``'s arithmetic on the group's summed statistics, which is exactly what a
separate run on the group computes (BLEU's corpus totals are integer sums over pairs)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np

from .base import Metric, Released
from .ngrams import NgramLayouts, shared_layouts


class BleuCache:
    """Each pair's sufficient statistics: testlen, closest reflen, guess[1..4], correct[1..4]."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                 layouts: Optional[NgramLayouts] = None):
        L = layouts or NgramLayouts(hypotheses, references)
        if len(L.n_refs) and L.n_refs.min() < 1:
            raise ValueError("BLEU needs at least one reference per pair")
        testlen = L.words[L.hyp_sid]
        reflen = L.words[L.ref_sid]
        # ``_single_reflen(option="closest")``: the reference length nearest the hypothesis's, the shorter on a tie
        span = int(reflen.max(initial=0)) + 1  # (distance, length) as one integer: distance * span + length
        key = np.abs(reflen - testlen[L.ref_pair]) * span + reflen
        closest = np.minimum.reduceat(key, L.ref_start[:-1]) % span if len(key) else key
        guess = np.maximum(0, testlen[:, None] - np.arange(4))
        correct = L.matches()
        # int32: a caption's words and n-grams number far fewer than 2**31; sums accumulate in int64
        self.stats = np.column_stack([testlen, closest, guess, correct]).astype(np.int32).reshape(len(testlen), 10)

    def score(self, indices: Sequence[int]) -> tuple[list[float], np.ndarray]:
        """``[B1..B4]`` of a group and its pairs' (rows) BLEU-1..4: ``compute_score``'s values, from
        its integer totals (any order sums them exactly) and its float steps (:func:`bleu_from_totals`)."""
        stats = self.stats[np.asarray(indices, dtype=np.int64)]
        if not len(stats):
            return [0.0] * 4, np.zeros((0, 4))
        return bleu_from_totals(stats.sum(axis=0, dtype=np.int64))[0].tolist(), bleu_from_totals(stats)

    def sufficient_statistics(self) -> np.ndarray:
        """Per pair: testlen, closest reflen, guess[1..4], correct[1..4] (for bootstrap)."""
        return self.stats.astype(np.float64)


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
    """BLEU-1..4: a group's (and a resample's) score is :func:`bleu_from_totals` of its pairs'
    summed sufficient statistics, ``BleuScorer.compute_score``'s numbers exactly."""

    family = "BLEU"
    columns = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4")
    chart_column = "Bleu_4"
    paper_columns = {"Bleu_4": "B4"}

    def compute(self, hypotheses, references) -> None:
        self.cache = BleuCache(hypotheses, references, shared_layouts(self.shared, hypotheses, references))

    def group(self, idx):
        bleu, _ = self.cache.score(idx)
        return {f"Bleu_{k + 1}": bleu[k] for k in range(4)}

    def per_pair(self):
        _, per_pair = self.cache.score(range(len(self.cache.stats)))
        return {f"Bleu_{k + 1}": per_pair[:, k] for k in range(4)}

    def release(self) -> None:
        self.cache = Released(self.family)

    def resampler(self, idx):
        stats = self.cache.sufficient_statistics()[idx]

        def resample(weights):
            bleu = bleu_from_totals(weights @ stats)  # whole counts: exact in any order
            return {f"Bleu_{k + 1}": bleu[:, k] for k in range(4)}

        return resample

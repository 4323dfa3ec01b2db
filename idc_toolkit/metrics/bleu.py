"""BLEU-1..4 as coco-caption computes it: corpus-level, "closest" reference length.

Each pair is cooked once into exactly what pycocoevalcap's ``cook_test(h, cook_refs(r))``
returns (:func:`cook_refs`, :func:`cook_test`: the same values, counted with ``zip`` and dicts
in place of ``precook``'s loops) and kept as its ten integer statistics; a group's score is
``BleuScorer.compute_score``'s arithmetic on the group's summed statistics, which is exactly what
a separate run on the group computes (BLEU's corpus totals are integer sums over pairs)."""

from __future__ import annotations

import gc
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import Any

import numpy as np

from .base import Metric, once_per_distinct_pair


def _ngrams(words: list[str]) -> tuple:
    """Iterators over the 1- to 4-grams of ``words``, as tuples (``precook``'s keys)."""
    w1, w2, w3 = words[1:], words[2:], words[3:]
    return zip(words), zip(words, w1), zip(words, w1, w2), zip(words, w1, w2, w3)


def _repeated(counts: Counter) -> list[tuple[tuple[str, ...], int]]:
    """The ``(n-gram, count)`` items of ``counts`` whose count is over 1."""
    return [item for item in counts.items() if item[1] > 1]


def _reference_ngrams(sentence: str) -> tuple[int, dict, list]:
    """A reference's length, its n-gram counts and those of them over 1."""
    words = sentence.split()
    if len(set(words)) == len(words):  # an n-gram repeats only where its first word does
        return len(words), dict.fromkeys(chain.from_iterable(_ngrams(words)), 1), []
    counts = Counter(chain.from_iterable(_ngrams(words)))
    return len(words), counts, _repeated(counts)


def _test_ngrams(sentence: str) -> tuple[int, tuple, list]:
    """A hypothesis's length, its 1- to 4-grams by length (each occurrence), and the n-grams
    that occur more than once, with their counts."""
    words = sentence.split()
    by_length = tuple(map(tuple, _ngrams(words)))
    if len(set(words)) == len(words):
        return len(words), by_length, []
    return len(words), by_length, _repeated(Counter(chain.from_iterable(by_length)))


class _Memo(dict):
    """``compute(key)``, kept for the keys that occur more than once in ``keys`` (captions and
    reference sets repeat: templates, "no change"); keeping the others only costs time."""

    def __init__(self, compute: Callable[[Hashable], Any], keys: Iterable[Hashable]):
        super().__init__()
        self.compute = compute
        self.repeated = {key for key, count in Counter(keys).items() if count > 1}

    def __missing__(self, key: Hashable):
        value = self.compute(key)
        if key in self.repeated:
            self[key] = value
        return value


def cook_refs(refs: Sequence[str], memo: _Memo | None = None) -> tuple[list[int], dict[tuple[str, ...], int]]:
    """pycocoevalcap's ``cook_refs(refs)`` (n = 4): each reference's length, and each n-gram's
    highest count in any one reference. ``memo``: :func:`_reference_ngrams` by sentence."""
    parts = [memo[ref] for ref in refs] if memo is not None else [_reference_ngrams(ref) for ref in refs]
    maxcounts: dict[tuple[str, ...], int] = {}
    for _, counts, _ in parts:
        maxcounts.update(counts)
    # a later reference's count may have replaced a higher one: only counts over 1 can be higher
    for _, _, repeated in parts:
        for ngram, count in repeated:
            maxcounts[ngram] = max(maxcounts[ngram], count)
    return [length for length, _, _ in parts], maxcounts


def cook_test(test: str, refs: tuple[list[int], dict[tuple[str, ...], int]], memo: _Memo | None = None) -> dict:
    """pycocoevalcap's ``cook_test(test, refs)`` (n = 4) for ``refs`` from :func:`cook_refs`.
    ``memo``: :func:`_test_ngrams` by sentence."""
    reflen, refmaxcounts = refs
    testlen, by_length, repeated = memo[test] if memo is not None else _test_ngrams(test)
    # each occurrence counted where a reference has the n-gram, then a repeated one clipped
    correct = [sum(map(refmaxcounts.__contains__, grams)) for grams in by_length]
    for ngram, count in repeated:
        held = refmaxcounts.get(ngram, 0)
        if held:
            correct[len(ngram) - 1] += min(held, count) - count
    return {"reflen": reflen, "testlen": testlen,
            "guess": [testlen, max(0, testlen - 1), max(0, testlen - 2), max(0, testlen - 3)], "correct": correct}


@contextmanager
def _cyclic_gc_paused():
    """The cyclic garbage collector off for a while, as it was after: cooking makes hundreds of
    thousands of n-gram tuples and dicts, none in a cycle, and the collector's passes over the
    living ones took a quarter to a third of its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _cook_pairs(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[dict]:
    """``cook_test(h, cook_refs(r))`` per pair; each distinct pair, reference set and sentence
    counted once (BleuScorer only reads the cooked values, so pairs may share them)."""
    sentences = _Memo(_reference_ngrams, chain.from_iterable(references))
    reference_sets = _Memo(lambda refs: cook_refs(refs, sentences), map(tuple, references))
    tests = _Memo(_test_ngrams, hypotheses)
    return once_per_distinct_pair(hypotheses, references, lambda h, r: cook_test(h, reference_sets[tuple(r)], tests))


class BleuCache:
    """Each pair's sufficient statistics, from the ``cook_test`` dict pycocoevalcap cooks: all
    that ``BleuScorer.compute_score`` reads for the "closest" reference length."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        # the memos are freed on return, before the collector runs again: it sees only what is kept
        with _cyclic_gc_paused():
            self.stats = pair_statistics(_cook_pairs(hypotheses, references))

    def score(self, indices: Sequence[int]) -> tuple[list[float], np.ndarray]:
        """``[B1..B4]`` of a group and its pairs' (rows) BLEU-1..4: ``compute_score``'s values, from
        its integer totals (any order sums them exactly) and its float steps (:func:`bleu_from_totals`)."""
        stats = self.stats[np.asarray(indices, dtype=np.int64)]
        if not len(stats):
            return [0.0] * 4, np.zeros((0, 4))
        return bleu_from_totals(stats.sum(axis=0))[0].tolist(), bleu_from_totals(stats)

    def sufficient_statistics(self) -> np.ndarray:
        """Per pair: testlen, closest reflen, guess[1..4], correct[1..4] (for bootstrap)."""
        return self.stats.astype(np.float64)


def pair_statistics(ctest: list[dict]) -> np.ndarray:
    """Per pair: testlen, closest reflen (``_single_reflen``'s, ties to the shorter), guess[1..4], correct[1..4]."""
    rows = []
    for comps in ctest:
        testlen = comps["testlen"]
        reflen = min((abs(l - testlen), l) for l in comps["reflen"])[1]
        rows.append([testlen, reflen, *comps["guess"], *comps["correct"]])
    return np.array(rows, dtype=np.int64).reshape(len(rows), 10)


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

    def group(self, idx):
        bleu, _ = self.cache.score(idx)
        return {f"Bleu_{k + 1}": bleu[k] for k in range(4)}

    def per_pair(self):
        _, per_pair = self.cache.score(range(len(self.cache.stats)))
        return {f"Bleu_{k + 1}": per_pair[:, k] for k in range(4)}

    def resample(self, idx, weights):
        bleu = bleu_from_totals(weights @ self.cache.sufficient_statistics()[idx])
        return {f"Bleu_{k + 1}": bleu[:, k] for k in range(4)}

"""CIDEr-D exactly as pycocoevalcap's ``CiderScorer``, restructured for per-group reuse.

In coco-caption the document frequency of an n-gram is the number of *evaluated* images
whose references contain it, and ``ref_len = log(N_evaluated)``: a group scored on its own
(as the field's per-category tables are) gets the group's own IDF. pycocoevalcap rebuilds
every n-gram dictionary for every run, and rebuilds each reference's tf-idf vector for every
image; here the n-grams are counted once per caption and laid out, per order, as padded
arrays (one row per caption, columns in pycocoevalcap's n-gram insertion order), with each
hypothesis n-gram's column in each of its references found once. A group is then a handful
of array operations over its rows: its document frequencies, the tf-idf weights, norms and
clipped dot products.

The arithmetic is pycocoevalcap's, operation for operation and in the same order
(``float(tf) * (ref_len - log(max(1, df)))``; squared norms accumulated column by column,
that is in n-gram insertion order, with libm's ``pow(v, 2)`` as Python's ``pow`` computes it
(``np.float_power``: ``v * v`` differs from it in about 0.1% of values); the ``min(h, r) * r``
dot product over the hypothesis n-grams; the Gaussian length penalty with sigma 6; the sum
over references in their order; ``np.mean`` over the four orders, ``/ len(refs) * 10``), so
group scores are bit-for-bit those of a separate pycocoevalcap run on the group (tests check
it). Speed: ``benchmarks/eval_speed.py``.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import chain
from typing import Sequence

import numpy as np

from .base import Metric

N = 4
SIGMA = 6.0


def _precook(sentence: str, intern: dict[tuple[str, ...], int]) -> tuple[list[tuple[int, int, int]], int]:
    """``[(order, ngram id, tf)]`` in pycocoevalcap's insertion order, and the length term.

    The length is pycocoevalcap's: it adds the term frequencies of order index 1 (bigrams).
    """
    words = sentence.split()
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    for k in range(1, N + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i : i + k])] += 1
    out = []
    length = 0
    for ngram, tf in counts.items():
        gid = intern.setdefault(ngram, len(intern))
        order = len(ngram) - 1
        out.append((order, gid, tf))
        if order == 1:
            length += tf
    return out, length


def _order_layouts(cooked: list[list[tuple[int, int, int]]], pad_gid: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per n-gram order, ``(gid, tf)`` arrays of shape (captions, widest caption of that order):
    row = caption, columns in insertion order; padding is ``pad_gid`` (weight 0) with tf 0."""
    lengths = np.fromiter((len(c) for c in cooked), dtype=np.int64, count=len(cooked))
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(cooked)), dtype=np.int64,
                       count=3 * int(lengths.sum())).reshape(-1, 3)
    caption = np.repeat(np.arange(len(cooked)), lengths)
    layouts = []
    for n in range(N):
        mine = flat[:, 0] == n
        rows = caption[mine]
        column = np.arange(len(rows)) - np.searchsorted(rows, rows)  # rank within its caption
        width = int(column.max()) + 1 if len(rows) else 0
        # the narrowest exact types (a term frequency is a count): a quarter of int64 / float64's memory
        gid = np.full((len(cooked), width), pad_gid, dtype=np.min_scalar_type(pad_gid))
        tf = np.zeros((len(cooked), width), dtype=np.min_scalar_type(int(flat[mine, 2].max(initial=0))))
        gid[rows, column] = flat[mine, 1]
        tf[rows, column] = flat[mine, 2]
        layouts.append((gid, tf))
    return layouts


def _columns_in(ref_gid: np.ndarray, ref_tf: np.ndarray, query_gid: np.ndarray, query_tf: np.ndarray) -> np.ndarray:
    """For each query n-gram (row r, column j), its column in reference row r, or the pad
    column ``ref_gid.shape[1]`` where the reference lacks it (or the query slot is padding)."""
    rows, width = ref_gid.shape
    present = ref_tf > 0
    stride = int(max(ref_gid.max(initial=0), query_gid.max(initial=0))) + 1
    ref_gid, query_gid = ref_gid.astype(np.int64), query_gid.astype(np.int64)  # row * stride + id needs 64 bits
    keys = (np.arange(rows)[:, None] * stride + ref_gid)[present]
    column = np.broadcast_to(np.arange(width), (rows, width))[present]
    order = np.argsort(keys)
    keys, column = keys[order], column[order]
    query = np.arange(rows)[:, None] * stride + query_gid
    if not len(keys):
        return np.full(query.shape, width, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    found = (keys[at] == query) & (query_tf > 0)
    return np.where(found, column[at], width).astype(np.min_scalar_type(width))


def _sequential_sum(values: np.ndarray) -> np.ndarray:
    """Row sums accumulated column by column from 0.0: the order of pycocoevalcap's ``+=`` loop."""
    total = np.zeros(values.shape[0])
    for j in range(values.shape[1]):
        total += values[:, j]
    return total


#: pairs (or reference rows) per chunk of the array work
CHUNK = 4096


def _chunks(n: int) -> list[slice]:
    return [slice(k, min(k + CHUNK, n)) for k in range(0, n, CHUNK)]


class CiderCache:
    """Cooked n-grams of every pair, laid out once; :meth:`score` any subset of pairs."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        intern: dict[tuple[str, ...], int] = {}
        cooked: dict[str, tuple[list[tuple[int, int, int]], int]] = {}

        def cook(sentence: str):  # a repeated sentence is cooked once: the same ids, in the same order
            if sentence not in cooked:
                cooked[sentence] = _precook(sentence, intern)
            return cooked[sentence]

        tests = [cook(h) for h in hypotheses]
        refs = [[cook(r) for r in rs] for rs in references]
        self.vocab = len(intern)
        self.n_refs = np.array([len(rs) for rs in refs], dtype=np.int64)
        self.ref_start = np.concatenate([[0], np.cumsum(self.n_refs)])
        # n-gram ids appearing in any reference of a pair: one document per pair
        self.doc_ids = [np.fromiter({g for cooked, _ in rs for _, g, _ in cooked}, dtype=np.int32 if len(intern) < 1 << 31
                                    else np.int64) for rs in refs]
        flat_refs = [r for rs in refs for r in rs]
        penalty_scale = 2 * SIGMA**2
        # pycocoevalcap's Python-float expression, per (pair, reference): it does not depend on the group
        self.penalty = np.array([np.e ** (-(float(tests[p][1] - r[1]) ** 2) / penalty_scale)
                                 for p, rs in enumerate(refs) for r in rs], dtype=np.float64)
        self.hyp = _order_layouts([c for c, _ in tests], pad_gid=self.vocab)
        self.ref = _order_layouts([c for c, _ in flat_refs], pad_gid=self.vocab)
        ref_pair = np.repeat(np.arange(len(refs)), self.n_refs)
        self.columns = [np.concatenate([_columns_in(rg[c], rt[c], hg[ref_pair[c]], ht[ref_pair[c]])
                                        for c in _chunks(len(ref_pair))] or [np.zeros((0, rg.shape[1]), np.uint8)])
                        for (hg, ht), (rg, rt) in zip(self.hyp, self.ref)]

    def score(self, indices: Sequence[int]) -> tuple[float, np.ndarray]:
        """Corpus CIDEr-D and per-pair scores of the pairs ``indices``, with their own IDF."""
        idx = np.asarray(list(indices), dtype=np.int64)
        if not idx.size:
            return 0.0, np.zeros(0)
        df = np.bincount(np.concatenate([self.doc_ids[i] for i in idx]), minlength=self.vocab).astype(np.float64)
        ref_len = np.log(float(len(idx)))
        w = np.append(ref_len - np.log(np.maximum(1.0, df)), 0.0)  # the last weight is the padding's
        # each pair's arithmetic is its own: chunks of pairs bound the temporaries, not the answers
        per_pair = np.concatenate([self._per_pair(idx[c], w) for c in _chunks(len(idx))])
        return float(np.mean(per_pair)), per_pair

    def _per_pair(self, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        counts = self.n_refs[idx]
        rrows = np.concatenate([np.arange(self.ref_start[i], self.ref_start[i + 1]) for i in idx])
        pair_of = np.repeat(np.arange(len(idx)), counts)
        val = np.zeros((len(rrows), N))
        for n, ((hg, ht), (rg, rt), columns) in enumerate(zip(self.hyp, self.ref, self.columns)):
            vec_h = ht[idx] * w[hg[idx]]
            vec_r = rt[rrows] * w[rg[rrows]]
            norm_h = np.sqrt(_sequential_sum(np.float_power(vec_h, 2.0)))[pair_of]
            norm_r = np.sqrt(_sequential_sum(np.float_power(vec_r, 2.0)))
            matched = np.take_along_axis(np.pad(vec_r, ((0, 0), (0, 1))), columns[rrows], axis=1)
            dot = _sequential_sum(np.minimum(vec_h[pair_of], matched) * matched)
            both = (norm_h != 0) & (norm_r != 0)
            dot = np.where(both, dot / np.where(both, norm_h * norm_r, 1.0), dot)
            val[:, n] = dot * self.penalty[rrows]
        score = np.zeros((len(idx), N))
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for k in range(int(counts.max())):  # references added in order, as ``score += val``
            has = counts > k
            score[has] += val[first[has] + k]
        return np.mean(score, axis=1) / counts * 10.0


class CiderD(Metric):
    """CIDEr-D: a group's score uses the group's own document frequencies (as a separate
    coco-caption run on it); a resample's is the mean of the group's per-pair CIDEr-D with
    the group's IDF held fixed (a multiset with duplicated pairs would count their references
    twice in the IDF)."""

    family = "CIDEr"
    aliases = ("cider-d", "ciderd")
    columns = ("CIDEr",)
    chart_column = "CIDEr"
    paper_columns = {"CIDEr": "C"}

    def compute(self, hypotheses, references) -> None:
        self.cache = CiderCache(hypotheses, references)
        self._per_pair = self.cache.score(range(len(hypotheses)))[1]

    def group(self, idx):
        return {"CIDEr": self.cache.score(idx)[0]}

    def per_pair(self):
        return {"CIDEr": self._per_pair}

    def resample(self, idx, weights):
        _, per_pair = self.cache.score(idx)
        return {"CIDEr": weights @ per_pair / weights.sum(axis=1)}  # a row's pairs: its weights' sum

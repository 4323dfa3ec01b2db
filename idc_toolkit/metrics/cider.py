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
    """Per n-gram order, ``(gid, tf)`` arrays of shape (sentences, widest sentence of that order):
    row = sentence, columns in insertion order; padding is ``pad_gid`` (weight 0) with tf 0."""
    lengths = np.fromiter((len(c) for c in cooked), dtype=np.int64, count=len(cooked))
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(cooked)), dtype=np.int64,
                       count=3 * int(lengths.sum())).reshape(-1, 3)
    sentence = np.repeat(np.arange(len(cooked)), lengths)
    layouts = []
    for n in range(N):
        mine = flat[:, 0] == n
        rows = sentence[mine]
        column = np.arange(len(rows)) - np.searchsorted(rows, rows)  # rank within its sentence
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


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + k) for a, k in zip(starts, counts)])`` without the loop."""
    offsets = np.cumsum(counts) - counts
    return np.arange(int(counts.sum())) - np.repeat(offsets, counts) + np.repeat(starts, counts)


class CiderCache:
    """Cooked n-grams of every distinct sentence, laid out once; :meth:`score` any subset of pairs.

    A sentence's tf-idf vector and norm depend on it and the group's IDF alone, so they are made
    once per distinct sentence a chunk of the group holds (captions repeat: templates, "no
    change"), then gathered for each pair and reference."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        intern: dict[tuple[str, ...], int] = {}
        sid: dict[str, int] = {}  # each distinct sentence's row in the layouts
        cooked: list[list[tuple[int, int, int]]] = []
        lengths: list[int] = []

        def row(sentence: str) -> int:
            k = sid.get(sentence)
            if k is None:
                c, length = _precook(sentence, intern)
                k = sid[sentence] = len(cooked)
                cooked.append(c)
                lengths.append(length)
            return k

        self.hyp_sid = np.fromiter(map(row, hypotheses), dtype=np.int64, count=len(hypotheses))
        self.n_refs = np.fromiter(map(len, references), dtype=np.int64, count=len(references))
        self.ref_sid = np.fromiter((row(r) for rs in references for r in rs), dtype=np.int64, count=int(self.n_refs.sum()))
        self.ref_start = np.concatenate([[0], np.cumsum(self.n_refs)])
        self.vocab = len(intern)
        # one document per pair: the n-gram ids appearing in any of its references (CSR rows)
        ids_of = [[g for _, g, _ in c] for c in cooked]
        docs: dict[tuple[int, ...], list[int]] = {}
        flat: list[int] = []
        self.doc_len = np.zeros(len(references), dtype=np.int64)
        for p in range(len(references)):
            key = tuple(self.ref_sid[self.ref_start[p]:self.ref_start[p + 1]].tolist())
            doc = docs.get(key)
            if doc is None:
                doc = docs[key] = list(set().union(*(ids_of[k] for k in key)))
            flat.extend(doc)
            self.doc_len[p] = len(doc)
        self.doc_ids = np.array(flat, dtype=np.int32 if self.vocab < 1 << 31 else np.int64)
        penalty_scale = 2 * SIGMA**2
        length = np.array(lengths, dtype=np.int64)
        ref_pair = np.repeat(np.arange(len(references)), self.n_refs)
        delta = length[self.hyp_sid[ref_pair]] - length[self.ref_sid]
        # pycocoevalcap's Python-float expression, per (pair, reference): it does not depend on the group
        penalties = {d: np.e ** (-(float(d) ** 2) / penalty_scale) for d in np.unique(delta).tolist()}
        self.penalty = np.array([penalties[d] for d in delta.tolist()], dtype=np.float64)
        self.layout = _order_layouts(cooked, pad_gid=self.vocab)
        # a hypothesis's vector needs only the columns the widest hypothesis of each order fills
        self.hyp_width = [int((tf[np.unique(self.hyp_sid)] > 0).sum(axis=1).max(initial=0)) for _, tf in self.layout]
        self.columns = []
        for (g, t), width in zip(self.layout, self.hyp_width):
            parts = [_columns_in(g[self.ref_sid[c]], t[self.ref_sid[c]], g[self.hyp_sid[ref_pair[c]], :width],
                                 t[self.hyp_sid[ref_pair[c]], :width]) for c in _chunks(len(ref_pair))]
            self.columns.append(np.concatenate(parts) if parts else np.zeros((0, width), np.uint8))

    def score(self, indices: Sequence[int]) -> tuple[float, np.ndarray]:
        """Corpus CIDEr-D and per-pair scores of the pairs ``indices``, with their own IDF (a pair
        given twice counts twice, as in a coco-caption run given it twice)."""
        idx = np.asarray(list(indices), dtype=np.int64)
        if not idx.size:
            return 0.0, np.zeros(0)
        times = np.bincount(idx, minlength=len(self.n_refs))
        df = np.bincount(self.doc_ids, weights=np.repeat(times, self.doc_len).astype(np.float64), minlength=self.vocab)
        ref_len = np.log(float(len(idx)))
        w = np.append(ref_len - np.log(np.maximum(1.0, df)), 0.0)  # the last weight is the padding's
        # each pair's arithmetic is its own: chunks of pairs bound the temporaries, not the answers
        per_pair = np.concatenate([self._per_pair(idx[c], w) for c in _chunks(len(idx))])
        return float(np.mean(per_pair)), per_pair

    def _per_pair(self, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        counts = self.n_refs[idx]
        rrows = _ranges(self.ref_start[idx], counts)
        pair_of = np.repeat(np.arange(len(idx)), counts)
        used, inverse = np.unique(np.concatenate([self.hyp_sid[idx], self.ref_sid[rrows]]), return_inverse=True)
        h_at, r_at = inverse[:len(idx)], inverse[len(idx):]
        val = np.zeros((len(rrows), N))
        for n, ((g, t), width, columns) in enumerate(zip(self.layout, self.hyp_width, self.columns)):
            vec = t[used] * w[g[used]]  # each distinct sentence's tf-idf vector, in insertion order
            norm = np.sqrt(_sequential_sum(np.float_power(vec, 2.0)))
            norm_h, norm_r = norm[h_at][pair_of], norm[r_at]
            matched = np.pad(vec, ((0, 0), (0, 1)))[r_at[:, None], columns[rrows]]
            dot = _sequential_sum(np.minimum(vec[h_at, :width][pair_of], matched) * matched)
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

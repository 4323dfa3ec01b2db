"""CIDEr-D exactly as pycocoevalcap's ``CiderScorer``, restructured for per-group reuse.

In coco-caption the document frequency of an n-gram is the number of *evaluated* images
whose references contain it, and ``ref_len = log(N_evaluated)``: a group scored on its own
(as the field's per-category tables are) gets the group's own IDF. pycocoevalcap rebuilds
every n-gram dictionary for every run, and rebuilds each reference's tf-idf vector for every
image; here the n-grams are counted once per distinct sentence and laid out, per order, as
rows read a chunk at a time as padded arrays (:mod:`.ngrams`, shared with BLEU: one row per
sentence, columns in pycocoevalcap's n-gram insertion order), with each hypothesis n-gram's
column in each of its references found once. A group is then a handful of array operations over
its rows: its document frequencies, the tf-idf weights, norms and clipped dot products.

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

from typing import Optional, Sequence

import numpy as np

from .base import Metric, Released, weighted_sums
from .ngrams import N, NgramLayouts, chunks, shared_layouts, sorted_distinct

SIGMA = 6.0


def _sequential_sum(values: np.ndarray) -> np.ndarray:
    """Row sums accumulated column by column from 0.0: the order of pycocoevalcap's ``+=`` loop."""
    total = np.zeros(values.shape[0])
    for j in range(values.shape[1]):
        total += values[:, j]
    return total


def _documents(L: NgramLayouts) -> tuple[np.ndarray, np.ndarray]:
    """One document per pair, as CSR rows (ids, lengths): the distinct n-gram ids of all its
    references (any order: they are counted, never summed as floats); made by pairs in chunks."""
    ids, lengths = [], np.zeros(len(L.n_refs), dtype=np.int64)
    stride = L.vocab + 1
    for part in chunks(len(L.n_refs)):
        idx = np.arange(part.start, part.stop)
        rows = L.reference_rows(idx)
        pair = np.repeat(np.arange(len(idx)), L.n_refs[idx])
        entries = [L.entries(n, L.ref_sid[rows]) for n in range(N)]  # each order's (row, id)
        keys = np.concatenate([pair[row] * stride + gid for row, gid in entries])
        keys = sorted_distinct(keys)
        # the narrowest type np.bincount takes: a quarter of int64's memory, or less
        ids.append((keys % stride).astype(np.min_scalar_type(max(L.vocab - 1, 0)) if L.vocab < 1 << 31 else np.int64))
        lengths[idx] = np.bincount(keys // stride, minlength=len(idx))
    return (np.concatenate(ids) if ids else np.zeros(0, np.uint8)), lengths


class CiderCache:
    """CIDEr-D over the n-gram layouts of the pairs (:mod:`.ngrams`); :meth:`score` any subset of pairs.

    A sentence's tf-idf vector and norm depend on it and the group's IDF alone, so they are made
    once per distinct sentence a chunk of the group holds (captions repeat: templates, "no
    change"), then gathered for each pair and reference."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                 layouts: Optional[NgramLayouts] = None):
        self.ngrams = L = layouts or NgramLayouts(hypotheses, references)
        self.n_refs, self.vocab = L.n_refs, L.vocab
        self.doc_ids, self.doc_len = _documents(L)
        self.doc_start = np.concatenate([[0], np.cumsum(self.doc_len)])
        penalty_scale = 2 * SIGMA**2
        delta = L.length[L.hyp_sid[L.ref_pair]] - L.length[L.ref_sid]
        # pycocoevalcap's Python-float expression, per (pair, reference): it does not depend on the group
        distinct, at = np.unique(delta, return_inverse=True)
        self.penalty = np.array([np.e ** (-(float(d) ** 2) / penalty_scale) for d in distinct.tolist()],
                                dtype=np.float64)[at.reshape(-1)]

    def score(self, indices: Sequence[int]) -> tuple[float, np.ndarray]:
        """Corpus CIDEr-D and per-pair scores of the pairs ``indices``, with their own IDF (a pair
        given twice counts twice, as in a coco-caption run given it twice)."""
        idx = np.asarray(list(indices), dtype=np.int64)
        if not idx.size:
            return 0.0, np.zeros(0)
        times = np.bincount(idx, minlength=len(self.n_refs))
        df = np.zeros(self.vocab)
        for part in chunks(len(self.n_refs)):  # integer counts: exact in any order, and a chunk's temporaries only
            if times[part].any():
                ids = self.doc_ids[self.doc_start[part.start]:self.doc_start[part.stop]]
                df += np.bincount(ids, weights=np.repeat(times[part], self.doc_len[part]).astype(np.float64),
                                  minlength=self.vocab)
        ref_len = np.log(float(len(idx)))
        w = np.append(ref_len - np.log(np.maximum(1.0, df)), 0.0)  # the last weight is the padding's
        # each pair's arithmetic is its own: chunks of pairs bound the temporaries, not the answers
        per_pair = np.empty(len(idx))
        for at in self.ngrams.pair_chunks(idx):
            per_pair[at] = self._per_pair(idx[at], w)
        return float(np.mean(per_pair)), per_pair

    def _per_pair(self, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        L = self.ngrams
        counts = self.n_refs[idx]
        rrows = L.reference_rows(idx)
        pair_of = np.repeat(np.arange(len(idx)), counts)
        used, inverse = np.unique(np.concatenate([L.hyp_sid[idx], L.ref_sid[rrows]]), return_inverse=True)
        h_at, r_at = inverse[:len(idx)], inverse[len(idx):]
        val = np.zeros((len(rrows), N))
        for n in range(N):
            g, t = L.rows(n, used)
            vec = t * w[g]  # each distinct sentence's tf-idf vector, in insertion order (padding: 0.0, summed last)
            norm = np.sqrt(_sequential_sum(np.float_power(vec, 2.0)))
            norm_h, norm_r = norm[h_at][pair_of], norm[r_at]
            width = int(L.counts(n, L.hyp_sid[idx]).max(initial=0))
            matched = vec[r_at[:, None], L.column_rows(n, rrows, width)]  # 0.0 where the reference lacks it
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
        self.cache = CiderCache(hypotheses, references, shared_layouts(self.shared, hypotheses, references))
        self._per_pair = self.cache.score(range(len(hypotheses)))[1]

    def group(self, idx):
        return {"CIDEr": self.cache.score(idx)[0]}

    def per_pair(self):
        return {"CIDEr": self._per_pair}

    def release(self) -> None:
        self.cache = Released(self.family)  # its n-gram layouts and documents: the largest per-pair data

    def resampler(self, idx):
        _, per_pair = self.cache.score(idx)  # the group's IDF, held for all its resamples
        # a row's pairs: its weights' sum
        return lambda weights: {"CIDEr": weighted_sums(weights, per_pair) / weights.sum(axis=1)}

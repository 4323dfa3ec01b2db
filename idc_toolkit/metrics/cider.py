"""CIDEr-D exactly as pycocoevalcap's ``CiderScorer``, restructured for per-group reuse.

In coco-caption the document frequency of an n-gram is the number of *evaluated* images
whose references contain it, and ``ref_len = log(N_evaluated)``: a group scored on its own
(as the field's per-category tables are) gets the group's own IDF. pycocoevalcap rebuilds
every n-gram dictionary for every run, and rebuilds each reference's tf-idf vector for every
image; here the n-grams are counted once per caption and interned as integers, the document
frequencies of a group are one vectorised count, and only the tf-idf weights are recomputed
per group.

The arithmetic is pycocoevalcap's, operation for operation and in the same order
(``float(tf) * (ref_len - log(max(1, df)))``, squared-norm accumulation in n-gram insertion
order, the ``min(h, r) * r`` dot product over the hypothesis n-grams, the Gaussian length
penalty with sigma 6, ``np.mean`` over the four orders, ``/ len(refs) * 10``), so group
scores equal a separate pycocoevalcap run on the group (tests check it).
"""

from __future__ import annotations

from collections import defaultdict
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


class CiderCache:
    """Cooked n-grams of every pair, computed once; :meth:`score` any subset of pairs."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        self._intern: dict[tuple[str, ...], int] = {}
        self.tests = [_precook(h, self._intern) for h in hypotheses]
        self.refs = [[_precook(r, self._intern) for r in refs] for refs in references]
        # n-gram ids appearing in any reference of a pair: one document per pair
        self.doc_ids = [
            np.fromiter({g for cooked, _ in refs for _, g, _ in cooked}, dtype=np.int64) for refs in self.refs
        ]
        self.vocab = len(self._intern)

    @staticmethod
    def _vector(cooked: list[tuple[int, int, int]], w: list[float]) -> tuple[list[dict[int, float]], list[float]]:
        vec: list[dict[int, float]] = [{} for _ in range(N)]
        norm = [0.0] * N
        for order, gid, tf in cooked:
            v = float(tf) * w[gid]
            vec[order][gid] = v
            norm[order] += pow(v, 2)
        return vec, [np.sqrt(x) for x in norm]

    def score(self, indices: Sequence[int]) -> tuple[float, np.ndarray]:
        """Corpus CIDEr-D and per-pair scores of the pairs ``indices``, with their own IDF."""
        indices = list(indices)
        if not indices:
            return 0.0, np.zeros(0)
        df = np.zeros(self.vocab, dtype=np.float64)
        for i in indices:
            df[self.doc_ids[i]] += 1.0
        ref_len = np.log(float(len(indices)))
        w = (ref_len - np.log(np.maximum(1.0, df))).tolist()
        penalty_scale = 2 * SIGMA**2
        scores = []
        for i in indices:
            cooked_h, len_h = self.tests[i]
            vec_h, norm_h = self._vector(cooked_h, w)
            score = np.array([0.0] * N)
            for cooked_r, len_r in self.refs[i]:
                vec_r, norm_r = self._vector(cooked_r, w)
                delta = float(len_h - len_r)
                val = np.array([0.0] * N)
                for n in range(N):
                    ref_n = vec_r[n]
                    acc = val[n]
                    for gid, vh in vec_h[n].items():
                        vr = ref_n.get(gid, 0.0)
                        acc += min(vh, vr) * vr
                    val[n] = acc
                    if (norm_h[n] != 0) and (norm_r[n] != 0):
                        val[n] /= norm_h[n] * norm_r[n]
                    val[n] *= np.e ** (-(delta**2) / penalty_scale)
                score += val
            score_avg = np.mean(score)
            score_avg /= len(self.refs[i])
            score_avg *= 10.0
            scores.append(score_avg)
        arr = np.array(scores)
        return float(np.mean(arr)), arr


class CiderD(Metric):
    """CIDEr-D: a group's score uses the group's own document frequencies (as a separate
    coco-caption run on it); a resample's is the mean of the group's per-pair CIDEr-D with
    the group's IDF held fixed (a multiset with duplicated pairs would count their references
    twice in the IDF)."""

    family = "CIDEr"
    aliases = ("cider-d", "ciderd")
    columns = ("CIDEr",)
    chart_column = "CIDEr"

    def compute(self, hypotheses, references) -> None:
        self.cache = CiderCache(hypotheses, references)
        self._per_pair = self.cache.score(range(len(hypotheses)))[1]

    def group(self, idx):
        return {"CIDEr": self.cache.score(idx)[0]}

    def per_pair(self):
        return {"CIDEr": self._per_pair}

    def resample(self, idx, weights):
        _, per_pair = self.cache.score(idx)
        return {"CIDEr": weights @ per_pair / len(idx)}

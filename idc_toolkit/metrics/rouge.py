"""ROUGE-L as coco-caption computes it: per pair (beta 1.2, best precision and best recall
taken independently over the references), and a group's score is the mean over its pairs.

The scores are pycocoevalcap's ``Rouge.calc_score`` bit for bit: the same tokens
(``split(" ")``), the same LCS lengths, and its float operations in its order; only the LCS
length is found another way, bit-parallel (Allison and Dix 1986; Hyyrö 2004) in place of
``my_lcs``'s O(n·m) table of Python lists.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Metric, once_per_distinct_pair, weighted_sums

#: ``Rouge().beta ** 2``, the same float pow pycocoevalcap evaluates per call
_BETA_SQUARED = 1.2 ** 2


def _position_masks(tokens: Sequence[str]) -> dict[str, int]:
    """Each distinct token's positions in ``tokens``, as the bits of one int."""
    masks: dict[str, int] = {}
    bit = 1
    for token in tokens:
        masks[token] = masks.get(token, 0) | bit
        bit <<= 1
    return masks


def _lcs_with_masks(masks: dict[str, int], tokens: Sequence[str]) -> int:
    """LCS length of the sequence ``masks`` was made from and ``tokens``."""
    row = 0
    for match in map(masks.get, tokens):
        if match:  # a token absent from the other sequence leaves the row as it is
            x = match | row
            row = x & ((x - ((row << 1) | 1)) ^ x)
    return row.bit_count()


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (``my_lcs``'s value)."""
    return _lcs_with_masks(_position_masks(a), b)


def rouge_l(hypothesis: str, references: Sequence[str]) -> float:
    """``Rouge().calc_score([hypothesis], references)``, the same float."""
    if not references:
        from pycocoevalcap.rouge.rouge import Rouge

        return Rouge().calc_score([hypothesis], list(references))  # its own assertion
    token_c = hypothesis.split(" ")
    masks = _position_masks(token_c)
    best_lcs = 0
    rec = []
    for reference in references:
        token_r = reference.split(" ")
        lcs = _lcs_with_masks(masks, token_r)
        best_lcs = max(best_lcs, lcs)
        rec.append(lcs / float(len(token_r)))
    # max of lcs / len(token_c) over references: division by one positive float is monotone
    prec_max = best_lcs / float(len(token_c))
    rec_max = max(rec)
    if prec_max != 0 and rec_max != 0:
        return ((1 + _BETA_SQUARED) * prec_max * rec_max) / float(rec_max + _BETA_SQUARED * prec_max)
    return 0.0


def rouge_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per-pair ROUGE-L, equal to pycocoevalcap's ``Rouge.calc_score`` per pair."""
    return np.array(once_per_distinct_pair(hypotheses, references, rouge_l))


class RougeL(Metric):
    """ROUGE-L: per-pair scores; a group's (and a resample's) score is their mean."""

    family = "ROUGE_L"
    aliases = ("rouge", "rouge-l")
    columns = ("ROUGE_L",)
    chart_column = "ROUGE_L"
    paper_columns = {"ROUGE_L": "R"}

    def compute(self, hypotheses, references) -> None:
        self.values = rouge_scores(hypotheses, references)

    def group(self, idx):
        return {"ROUGE_L": float(np.mean(self.values[idx])) if idx else 0.0}

    def per_pair(self):
        return {"ROUGE_L": self.values}

    def resample(self, idx, weights):
        # a row's pairs: its weights' sum
        return {"ROUGE_L": weighted_sums(weights, self.values[idx]) / weights.sum(axis=1)}

"""ROUGE-L as coco-caption computes it: per pair (beta 1.2, best precision and best recall
taken independently over the references), and a group's score is the mean over its pairs."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Metric, once_per_distinct_pair


def rouge_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per-pair ROUGE-L with pycocoevalcap's own ``Rouge.calc_score``."""
    from pycocoevalcap.rouge.rouge import Rouge

    rouge = Rouge()
    return np.array(once_per_distinct_pair(hypotheses, references, lambda h, r: rouge.calc_score([h], list(r))))


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
        return {"ROUGE_L": weights @ self.values[idx] / weights.sum(axis=1)}  # a row's pairs: its weights' sum

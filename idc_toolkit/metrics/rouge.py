"""ROUGE-L as coco-caption computes it: per pair (beta 1.2, best precision and best recall
taken independently over the references), and a group's score is the mean over its pairs."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def rouge_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per-pair ROUGE-L with pycocoevalcap's own ``Rouge.calc_score``."""
    from pycocoevalcap.rouge.rouge import Rouge

    rouge = Rouge()
    return np.array([rouge.calc_score([h], list(r)) for h, r in zip(hypotheses, references)])

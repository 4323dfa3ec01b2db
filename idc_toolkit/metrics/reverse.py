"""Reversibility without a judge (``Reverse_ROUGE_L``): a weaker, n-gram stand-in for the judge's
``Judge_reversibility``.

Each pair's A -> B caption is inverted word by word with a fixed table (added <-> removed,
appeared <-> disappeared, ...) and the B -> A caption is scored against it with coco-caption's
ROUGE-L. What the table cannot invert lowers the score of a consistent model as much as an
inconsistent one: attribute changes ("the red cube is now blue" reverses to "the blue cube is
now red", which the table leaves as is) and moves. Use it to compare models on the same pairs,
not as an absolute rate; the judge decides inverse changes in any words.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np

from .base import PairMeans
from .rouge import rouge_scores

_PAIRS = [("added", "removed"), ("add", "remove"), ("adds", "removes"), ("adding", "removing"),
          ("appeared", "disappeared"), ("appears", "disappears"), ("appear", "disappear"),
          ("new", "missing"), ("more", "fewer"), ("gained", "lost"), ("put", "taken"),
          ("placed", "taken"), ("entered", "left"), ("arrived", "left"), ("opened", "closed"),
          ("on", "off"), ("larger", "smaller"), ("bigger", "smaller")]
INVERSE = {**{a: b for a, b in _PAIRS}, **{b: a for a, b in _PAIRS[::-1]}}


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def invert(caption: str) -> str:
    """``caption`` with every word of the table replaced by its inverse (lower case, no punctuation)."""
    return " ".join(INVERSE.get(w, w) for w in words(caption))


def reverse_overlap(forward: Sequence[str], backward: Sequence[str]) -> np.ndarray:
    """Per pair: ROUGE-L of the B -> A caption against the inverted A -> B caption."""
    return rouge_scores([" ".join(words(b)) for b in backward], [[invert(f)] for f in forward])


class ReverseOverlap(PairMeans):
    """``Reverse_ROUGE_L``: per-pair values from the raw captions (:class:`~.base.PairMeans`)."""

    family = "REVERSE"
    columns = ("Reverse_ROUGE_L",)
    chart_column = "Reverse_ROUGE_L"
    paper_columns = {"Reverse_ROUGE_L": "Rev-R"}

    def __init__(self, ids: Sequence[str], forward: Mapping[str, str], backward: Mapping[str, str]):
        super().__init__({"Reverse_ROUGE_L": reverse_overlap([forward[i] for i in ids], [backward[i] for i in ids])})

"""Reversibility without a judge (``Reverse_ROUGE_L``): a weaker, n-gram stand-in for the judge's
``Judge_reversibility``.

Each pair's A -> B caption is inverted word by word with a fixed table (added <-> removed,
appeared <-> disappeared, ...) and the B -> A caption is scored against it with coco-caption's
ROUGE-L. What the table cannot invert lowers the score of a consistent model as much as an
inconsistent one: attribute changes ("the red cube is now blue" reverses to "the blue cube is
now red", which the table leaves as is) and moves. Use it to compare models on the same pairs,
not as an absolute rate; the judge decides inverse changes in any words.

A pair's value is 0 where either caption is empty (nothing described is nothing reversed), and
undefined (NaN: no part in any mean) where the A -> B caption holds no word of the table: a
caption that names no direction ("there is no change", "the cube changed colour") reads the
same both ways, so its overlap would be perfect whether or not the model is consistent. A
model that writes nothing, or one constant caption, cannot rank first on it.
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


def directional(caption: str) -> bool:
    """Whether ``caption`` holds a word the table inverts."""
    return any(w in INVERSE for w in words(caption))


def reverse_overlap(forward: Sequence[str], backward: Sequence[str]) -> np.ndarray:
    """Per pair: ROUGE-L of the B -> A caption against the inverted A -> B caption (0 where
    either is empty, NaN where the A -> B caption names no direction: module docstring)."""
    scores = np.asarray(rouge_scores([" ".join(words(b)) for b in backward], [[invert(f)] for f in forward]), dtype=np.float64)
    empty = np.array([not words(f) or not words(b) for f, b in zip(forward, backward)], dtype=bool)
    undirected = np.array([not directional(f) for f in forward], dtype=bool)
    return np.where(empty, 0.0, np.where(undirected, np.nan, scores))


class ReverseOverlap(PairMeans):
    """``Reverse_ROUGE_L``: per-pair values from the raw captions (:class:`~.base.PairMeans`)."""

    family = "REVERSE"
    columns = ("Reverse_ROUGE_L",)
    chart_column = "Reverse_ROUGE_L"
    paper_columns = {"Reverse_ROUGE_L": "Rev-R"}

    def __init__(self, ids: Sequence[str], forward: Mapping[str, str], backward: Mapping[str, str]):
        super().__init__({"Reverse_ROUGE_L": reverse_overlap([forward[i] for i in ids], [backward[i] for i in ids])})

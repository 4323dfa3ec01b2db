"""What the judge is asked about one pair, and its answers gathered back into the pair's record."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .prompts import render

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of a caption (split after . ! ? ; and at line breaks), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip(" .!?;")]


def default_differences(references: Sequence[str]) -> list[str]:
    """A pair's differences when the dataset lists none: the sentences of its reference with the
    most sentences (the most complete annotator's list; the first on a tie). CLEVR-Change's
    one-sentence references give one difference; Spot-the-Diff's give one per sentence."""
    best: list[str] = []
    for ref in references:
        found = sentences(ref)
        if len(found) > len(best):
            best = found
    return best


@dataclass
class PairQuestions:
    pair_id: str
    differences: list[str]
    claims: list[str]
    no_change: bool
    stated: list[str]  # one prompt per difference
    supported: list[str]  # one prompt per claim
    says_no_change: Optional[str]  # the prompt, on a no-change pair
    inverse: Optional[str] = None  # the prompt, where the pair was also captioned with before and after swapped
    reversed_caption: Optional[str] = None

    def prompts(self) -> list[str]:
        return [*self.stated, *self.supported, *(p for p in (self.says_no_change, self.inverse) if p)]


def ask(pair_id: str, caption: str, references: Sequence[str], differences: Sequence[str], no_change: bool,
        reversed_caption: Optional[str] = None) -> PairQuestions:
    """Every question of one pair: a change pair's differences are each checked against the
    caption; every pair's claims against its references; a no-change pair also gets whether it
    says nothing changed; a pair captioned both ways, whether the two captions are inverses."""
    diffs = [] if no_change else [d for d in differences if d.strip()]
    claims = sentences(caption)
    listed = "\n".join(f"- {r.strip()}" for r in references if r.strip())
    return PairQuestions(
        pair_id, diffs, claims, no_change,
        stated=[render("stated", difference=d, caption=caption.strip()) for d in diffs],
        supported=[render("supported", references=listed, claim=c) for c in claims],
        says_no_change=render("no_change", caption=caption.strip()) if no_change else None,
        inverse=None if reversed_caption is None else render("inverse", forward=caption.strip(),
                                                             backward=reversed_caption.strip()),
        reversed_caption=reversed_caption,
    )


def record(q: PairQuestions, answers: dict[str, bool]) -> dict:
    """The pair's judgement record (one row of ``judgements.jsonl``)."""
    return {"pair_id": q.pair_id, "differences": q.differences, "stated": [answers[p] for p in q.stated],
            "claims": q.claims, "supported": [answers[p] for p in q.supported], "no_change": q.no_change,
            "says_no_change": answers[q.says_no_change] if q.says_no_change else None,
            "reversed": q.reversed_caption, "inverse": answers[q.inverse] if q.inverse else None}

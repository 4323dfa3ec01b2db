"""What the judge is asked about one pair, and its answers gathered back into the pair's record."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from .answers import FAILED, UNPARSED, as_bool
from .prompts import references_block, render

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
#: a question decided without asking: an empty caption states nothing and says nothing (docs/scoring.md)
DECIDED_NO = None


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
    """A pair's questions; a prompt of ``None`` is a question decided "no" without asking."""

    pair_id: str
    differences: list[str]
    claims: list[str]
    no_change: bool
    stated: list[Optional[str]]  # one prompt per difference
    supported: list[str]  # one prompt per claim
    says_no_change: Optional[str]  # the prompt, on a no-change pair
    inverse: Optional[str] = None  # the prompt, where the pair was also captioned with before and after swapped
    reversed_caption: Optional[str] = None
    decided: tuple[str, ...] = ()  # the single questions ("no_change", "inverse") decided "no" without asking

    def by_kind(self) -> dict[str, list[str]]:
        """The prompts put to the judge, by question kind."""
        return {"stated": [p for p in self.stated if p], "supported": list(self.supported),
                "no_change": [self.says_no_change] if self.says_no_change else [],
                "inverse": [self.inverse] if self.inverse else []}

    def prompts(self) -> list[str]:
        return [p for kind in self.by_kind().values() for p in kind]


def ask(pair_id: str, caption: str, references: Sequence[str], differences: Sequence[str], no_change: bool,
        reversed_caption: Optional[str] = None) -> PairQuestions:
    """Every question of one pair: a change pair's differences are each checked against the
    caption; every pair's claims against its references; a no-change pair also gets whether it
    says nothing changed; a pair captioned both ways, whether the two captions are inverses.
    An empty caption is never sent: it states no difference, makes no claim, does not say that
    nothing changed, and is no inverse of the other direction's caption (nor is one to it)."""
    diffs = [] if no_change else [d for d in differences if d.strip()]
    caption = (caption or "").strip()
    claims = sentences(caption)
    listed = references_block(references)
    decided = []
    if no_change and not caption:
        decided.append("no_change")
    inverse = None
    if reversed_caption is not None:
        if caption and reversed_caption.strip():
            inverse = render("inverse", forward=caption, backward=reversed_caption.strip())
        else:
            decided.append("inverse")
    return PairQuestions(
        pair_id, diffs, claims, no_change,
        stated=[render("stated", difference=d, caption=caption) if caption else DECIDED_NO for d in diffs],
        supported=[render("supported", references=listed, claim=c) for c in claims],
        says_no_change=render("no_change", caption=caption) if no_change and caption else None,
        inverse=inverse, reversed_caption=reversed_caption, decided=tuple(decided),
    )


def record(q: PairQuestions, answers: Mapping[str, str]) -> dict:
    """The pair's judgement record (one row of ``judgements.jsonl``): ``True`` / ``False`` per
    question, ``None`` where the judge gave no answer (the kind is then listed under
    ``unparsed`` or ``failed``); ``asked`` counts the questions put to the judge, by kind."""
    by_kind = q.by_kind()
    unanswered = {UNPARSED: [], FAILED: []}
    for kind, prompts in by_kind.items():
        for p in prompts:
            if answers[p] in unanswered:
                unanswered[answers[p]].append(kind)

    def single(kind: str, prompt: Optional[str]) -> Optional[bool]:
        return False if kind in q.decided else as_bool(answers[prompt]) if prompt else None

    return {"pair_id": q.pair_id, "differences": q.differences,
            "stated": [as_bool(answers[p]) if p else False for p in q.stated],
            "claims": q.claims, "supported": [as_bool(answers[p]) for p in q.supported], "no_change": q.no_change,
            "says_no_change": single("no_change", q.says_no_change),
            "reversed": q.reversed_caption, "inverse": single("inverse", q.inverse),
            "asked": {kind: len(prompts) for kind, prompts in by_kind.items()},
            UNPARSED: unanswered[UNPARSED], FAILED: unanswered[FAILED]}

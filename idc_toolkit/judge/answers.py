"""How a judge's reply is read: yes, no, or unparsed (never a silent no), and what was asked in all.

The rule (docs/scoring.md writes it out):

1. A reasoning block is dropped: the answer is the text after the last ``</think>``; a reply
   whose ``<think>`` never closes has no answer (unparsed).
2. Markdown emphasis, quotes, brackets and leading punctuation are dropped, and so are common
   lead-ins at the start, repeatedly: "sure", "certainly", "okay", "answer:", "final answer:",
   "the answer is", "my answer is", "I would say", "response:".
3. The first word then decides: "yes" is yes, "no" is no (a whole word: "not", "none",
   "nothing" and "nope" are not "no"). Anything else, an empty reply and a reply with no text
   content at all, is *unparsed*: counted, never read as an answer.

A question the endpoint could not answer after its retries is *failed*. Unparsed and failed
answers take no part in a judge column's value;
:func:`idc_toolkit.metrics.judge_columns.answer_counts` counts them per question kind.
"""

from __future__ import annotations

import re
from typing import Optional

YES, NO, UNPARSED, FAILED = "yes", "no", "unparsed", "failed"
#: the answers a rerun keeps (a failed question is asked again)
FINAL = (YES, NO, UNPARSED)

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_NOISE = "*_`#>\"'“”‘’«»()[]{}.,:;!-–— \t\r\n"
_LEAD_INS = re.compile(r"^(?:sure|certainly|okay|ok|of course|well|so|answer|final answer|the answer is|"
                       r"my answer is|the final answer is|i would say|i'd say|response|verdict)\b[\s*_`\"'“”:,.!-]*",
                       re.IGNORECASE)
_FIRST_WORD = re.compile(r"[a-z]+", re.IGNORECASE)


def parse_answer(reply: Optional[str]) -> str:
    """:data:`YES`, :data:`NO` or :data:`UNPARSED` for one reply (module docstring)."""
    if not isinstance(reply, str):
        return UNPARSED
    text = reply
    if _THINK_CLOSE in text:
        text = text.rpartition(_THINK_CLOSE)[2]
    elif _THINK_OPEN in text:
        return UNPARSED  # cut off inside its reasoning: no final answer was given
    text = text.strip(_NOISE)
    while True:
        stripped = _LEAD_INS.sub("", text, count=1).lstrip(_NOISE)
        if stripped == text:
            break
        text = stripped
    word = _FIRST_WORD.match(text)
    if word is None:
        return UNPARSED
    first = word.group(0).lower()
    return YES if first == "yes" else NO if first == "no" else UNPARSED


def as_bool(answer: str) -> Optional[bool]:
    """A record's value for an answer: True / False, or None where the judge gave none."""
    return True if answer == YES else False if answer == NO else None

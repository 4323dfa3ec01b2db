"""Caption hygiene before the Java tools see a caption.

pycocoevalcap writes one caption per line for the PTB tokenizer and splits its output on
``\\n`` only. The Java tokenizer, however, also starts a new line at ``\\r``, ``\\v``, ``\\f``,
U+0085, U+2028 and U+2029, so one such character silently shifts every later caption onto
the wrong image (measured: no error, keys still match). A ``\\n`` that reaches METEOR
desynchronises its line protocol. Every such separator becomes a space here. :func:`one_copy`
holds a file's repeated captions once.
"""

from __future__ import annotations

import re
from typing import Callable

LINE_SEPARATORS = "\r\n\x0b\x0c\x85\u2028\u2029"
_SEPARATORS = re.compile("[" + re.escape(LINE_SEPARATORS) + "]")


def sanitize_caption(text: str) -> str:
    """Replace every line/paragraph separator by a space (nothing else changes)."""
    return _SEPARATORS.sub(" ", text)


def has_separator(text: str) -> bool:
    return _SEPARATORS.search(text) is not None


def one_copy() -> Callable[[str], str]:
    """``one(text)``: the first string equal to ``text`` given to this ``one``. A file's repeated
    captions ("no change", a template's sentence) are then held once: 400,000 CLEVR-shaped
    references hold 2,261 distinct sentences, and each JSON string is its own object."""
    distinct: dict[str, str] = {}

    def one(text: str) -> str:
        return distinct.setdefault(text, text)

    return one


#: characters of a text split at a time by :func:`lines_once`
LINES_PIECE = 1 << 20


def lines_once(text: str) -> list[str]:
    """``text.split("\\n")`` with repeated lines held once (:func:`one_copy`), split a piece at a
    time: 400,000 CLEVR-shaped lines are never all separate objects at once."""
    one, out, start = one_copy(), [], 0
    while True:
        end = text.find("\n", start + LINES_PIECE) if start + LINES_PIECE < len(text) else -1
        out.extend(map(one, (text[start:] if end < 0 else text[start:end]).split("\n")))
        if end < 0:
            return out
        start = end + 1

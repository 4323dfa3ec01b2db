"""Small text repairs shared by the builders and the augmentation."""

from __future__ import annotations


def strip_surrounding_quotes(text: str, quotes: str = '"', allow_empty: bool = True) -> str:
    """``text`` stripped of whitespace and of surrounding quote pairs, repeatedly
    (``'""nested""'`` -> ``nested``); inner quotes stay (``say "hi" now``). With
    ``allow_empty=False`` a pair enclosing nothing is kept (``'""'`` stays ``'""'``)."""
    text = text.strip()
    while len(text) >= 2 and text[0] in quotes and text[-1] in quotes:
        inner = text[1:-1].strip()
        if not inner and not allow_empty:
            return text
        text = inner
    return text

"""Java 17's ``String.toLowerCase`` in Python, for the two jars' text rules (the PTB tokenizer
lower-cases each token, METEOR each line).

Python's ``str.lower`` differs from it in two places: a capital sigma (Java picks the final ``ς``
by the JDK's word-break rules, not Unicode's), and capitals whose lower case is newer than Java
17's Unicode 13 (Java keeps them). Both are replayed here; everything else is ``str.lower``.
"""

from __future__ import annotations

import re
import unicodedata

#: capitals whose lower case is newer than Java 17's Unicode 13 (14.0; 16.0 for later Pythons): Java keeps them
NEWER_CAPITALS = re.compile("([\u2c2f\ua7c0\ua7d0\ua7d6\ua7d8\U00010570-\U0001057a\U0001057c-\U0001058a"
                             "\U0001058c-\U00010592\U00010594\U00010595\u1c89\ua7cb\ua7cc\ua7da\ua7dc"
                             "\U00010d50-\U00010d65])")


def java_lower(s: str) -> str:
    """``String.toLowerCase()`` of ``s`` as Java 17 does it in an English locale (a capital sigma's
    final form decided over the words of ``s``, as Java decides it over the whole string)."""
    if NEWER_CAPITALS.search(s) is not None:
        return "".join(part if k % 2 else _lower_sigma(part) for k, part in enumerate(NEWER_CAPITALS.split(s)))
    return _lower_sigma(s)


def _lower_sigma(s: str) -> str:
    if "\u03a3" not in s:
        return s.lower()
    parts = s.split("\u03a3")
    out = []
    at = 0
    bounds = _word_bounds(s)
    for k, part in enumerate(parts):
        out.append(part.lower())
        at += len(part)
        if k < len(parts) - 1:
            out.append("\u03c2" if _final_sigma(s, at, bounds) else "\u03c3")
            at += 1
    return "".join(out)


# --- a capital sigma's lower case in Java: final (ς) when, within the word java.text.BreakIterator
# (the JDK's word rules) puts it in, a cased letter precedes it and none follows it
_KANA_RUNS = {"kata": ("kata", "cjk"), "cjk": ("kata", "cjk"), "hira": ("hira", "cjk"), "kanji": ("kanji",)}


def _word_kind(c: str) -> str:
    cat = unicodedata.category(c)
    if cat == "Cf" and c != "\u00ad":
        return "ignore"
    if cat in ("Mn", "Me"):
        return "mark"
    if c == "\u3005" or "\u4e00" <= c <= "\u9fa5" or "\uf900" <= c <= "\ufa2d":
        return "kanji"
    if "\u30a1" <= c <= "\u30fa" or c in "\u30fd\u30fe":
        return "kata"
    if "\u3041" <= c <= "\u3094" or c in "\u309d\u309e":
        return "hira"
    if "\u3099" <= c <= "\u309c" or c in "\u30fb\u30fc":
        return "cjk"
    if cat[0] == "L" or cat == "Mc":
        return "letter"
    return "digit" if cat[0] == "N" else "other"


def _word_bounds(s: str) -> set:
    n = len(s)
    kinds = [_word_kind(c) for c in s]

    def past_ignored(q):
        while q < n and kinds[q] == "ignore":
            q += 1
        return q

    bounds = {0}
    p = 0
    while p < n:
        kind = kinds[p]
        q = p + 1
        if kind in ("letter", "digit"):  # words and numbers, each joined by one inner punctuation mark
            last, danda = kind, False
            while True:
                q2 = past_ignored(q)
                if q2 >= n:
                    q = q2
                    break
                k2, c = kinds[q2], s[q2]
                if k2 in ("letter", "digit", "mark"):
                    if danda and k2 != "digit":
                        break
                    danda = False
                    last = last if k2 == "mark" else k2
                    q = q2 + 1
                    continue
                r = past_ignored(q2 + 1)
                if last == "letter" and r < n and kinds[r] == "letter" and (
                        unicodedata.category(c) in ("Pd", "Pc") or c in "\u00ad\u2027\"'."):
                    q = r
                elif last == "digit" and r < n and kinds[r] == "digit" and c in "\"',\u066b.":
                    q = r
                elif last == "letter" and c in "\u0964\u0965" and not danda:
                    q, danda = q2 + 1, True  # a danda ends a word; a number may follow
                else:
                    if last == "digit" and c in "%&\u00a2\u066a\u2030\u2031":
                        q = q2 + 1
                    break
        elif kind in _KANA_RUNS:
            while q < n and (kinds[q] in _KANA_RUNS[kind] or kinds[q] == "ignore"):
                q += 1
        else:
            while q < n and kinds[q] in ("mark", "ignore"):
                q += 1
        bounds.add(q)
        p = q
    # isBoundary() also answers true just after a supplementary character that does not open the text
    bounds.update(j + 1 for j in range(1, n) if s[j] > "\uffff")
    return bounds


def _cased(c: str) -> bool:
    if unicodedata.category(c) in ("Lu", "Ll", "Lt"):
        return True
    cp = ord(c)  # Java's list of Other_Lowercase / Other_Uppercase
    return (0x2b0 <= cp <= 0x2b8 or 0x2c0 <= cp <= 0x2c1 or 0x2e0 <= cp <= 0x2e4 or cp in (0x345, 0x37a)
            or 0x1d2c <= cp <= 0x1d61 or 0x2160 <= cp <= 0x217f or 0x24b6 <= cp <= 0x24e9)


def _final_sigma(s: str, k: int, bounds: set) -> bool:
    i = k
    while i > 0 and i not in bounds:
        if _cased(s[i - 1]):
            j = k + 1
            while j < len(s) and j not in bounds:
                if _cased(s[j]):
                    return False
                j += 1
            return True
        i -= 1
    return False

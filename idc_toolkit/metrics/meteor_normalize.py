"""METEOR 1.5's ``-norm`` text handling in Python: ``Normalizer.normalizeLine`` for English with
punctuation kept, then Java's lower-casing, and the Java string rules the aligner relies on.

Each step is the jar's, in its order, with Java's regular-expression semantics written out: ``\\s``
is ``[ \\t\\n\\x0B\\f\\r]``, ``\\p{Digit}`` is ``[0-9]`` and ``\\p{Lower}`` is ``[a-z]`` (Java's POSIX
classes are ASCII), ``StringTokenizer`` splits on ``[ \\t\\n\\r\\f]`` only, ``String.trim`` strips
every character up to U+0020. Lower-casing is Python's ``str.lower``, which is Java's
``toLowerCase`` under a non-Turkish locale except for a capital sigma (Java picks its final form
with a word-boundary iterator) and letters whose case Unicode gave after version 13 (Java 17's):
:func:`vouched` says where the two are known to agree.
"""

from __future__ import annotations

import re
from typing import Optional

from .java_text import java_lower

#: ``Normalizer.alpha`` / ``alnum``: Western European and Cyrillic letters
_ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\xc0-\xd6\xd8-\xf6\xf8-\u017e"
          "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \s

_SEP_OTHER = re.compile("([^" + _ALNUM + _JAVA_SPACE + r"\.'`,\-" + "\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.(\.+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])")
_COMMA = re.compile("([^0-9]),([^0-9])")
_COMMA2 = re.compile("([0-9]),([^0-9])")
_COMMA3 = re.compile("([^0-9]),([0-9])")
_QUOTE = re.compile("([`\u2018\u2019])")
_QUOTE2 = re.compile("([\u201c\u201d]|'')")
_RM_DASH = re.compile("([" + _ALNUM + r"\.])-([" + _ALNUM + "])")
_CONT_EN = re.compile("([^" + _ALPHA + "])'([^" + _ALPHA + "])")
_CONT_EN2 = re.compile("([^" + _ALPHA + "0-9])'([" + _ALPHA + "])")
_CONT_EN3 = re.compile("([" + _ALPHA + "])'([^" + _ALPHA + "])")
_CONT_EN4 = re.compile("([" + _ALPHA + "])'([" + _ALPHA + "])")
_CONT_EN5 = re.compile("([0-9])'(s)")
_WHITE = re.compile("[ \u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000\xa0]+")
_HAS_ALPHA = re.compile("[" + _ALPHA + "]")
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")
_LINE_BREAK = re.compile("\r\n|\r|\n")
_TURKIC = ("tr", "az")
#: lines the normalizer gives back as they are, but for case: words of ASCII letters and digits
#: between single spaces, none spelling its escape for dots (``DOTMULTI``, which becomes ".")
_PLAIN = re.compile("[A-Za-z0-9]+(?: [A-Za-z0-9]+)*")

NBP_ANY, NBP_NUM_ONLY = 1, 2


def vouched(text: str) -> bool:
    """Whether ``text`` is lower-cased here as the jar's JVM does (:func:`.java_text.java_lower`),
    which holds but for an ``I`` in a Turkish or Azeri locale (Java's default locale, read from
    the environment as the JVM reads it, lower-cases it to a dotless ``ı`` there)."""
    return not (("I" in text or "\u0130" in text) and _turkic_locale())


def _turkic_locale() -> bool:
    import os

    return any(os.environ.get(name, "").lower().startswith(_TURKIC) for name in ("LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LANG"))


def java_trim(text: str) -> str:
    """``String.trim``: every character up to U+0020 off both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


#: the characters ``str.split()`` also splits at beyond StringTokenizer's " \t\n\r\f" (the ASCII ones)
_OTHER_ASCII_BLANKS = frozenset("\x0b\x1c\x1d\x1e\x1f")


def java_tokens(text: str) -> list[str]:
    """``new StringTokenizer(text)``'s tokens."""
    if text.isascii() and _OTHER_ASCII_BLANKS.isdisjoint(text):
        return text.split()  # the same split, in C
    return [t for t in _TOKEN_SPLIT.split(text) if t]


def java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` over ``text``: the lines, the last one's terminator optional."""
    lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def utf16_length(text: str) -> int:
    """``String.length``: UTF-16 code units."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF) if not text.isascii() else len(text)


def java_hash(text: str) -> int:
    """``String.hashCode`` (as an unsigned 32-bit number): over UTF-16 code units."""
    h = 0
    data = text.encode() if text.isascii() else _utf16_units(text)
    for unit in data:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def _utf16_units(text: str) -> list[int]:
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[k] | raw[k + 1] << 8 for k in range(0, len(raw), 2)]


def as_utf16(text: str) -> str:
    """``text`` with each character beyond the BMP as its two surrogates (Java's ``char`` view)."""
    if text.isascii() or all(ord(c) <= 0xFFFF for c in text):
        return text
    return "".join(map(chr, _utf16_units(text)))


def normalize_line(line: str, prefixes: dict[str, int]) -> str:
    """``Normalizer.normalizeLine(line, LANG_EN, true)``; ``prefixes`` is the jar's English
    nonbreaking-prefix table (prefix -> :data:`NBP_ANY` or :data:`NBP_NUM_ONLY`)."""
    s = " " + line + " "
    s = _SEP_OTHER.sub(r" \1 ", s)
    s = _MULTI_DOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", s)
        s = s.replace("DOTMULTI.", "DOTDOTMULTI")
    s = _COMMA.sub(r"\1 , \2", s)
    s = _COMMA2.sub(r"\1 , \2", s)
    s = _COMMA3.sub(r"\1 , \2", s)
    s = _QUOTE.sub("'", s)
    s = _QUOTE2.sub(' " ', s)
    s = s.replace("\u2013", "-").replace("--", "-")
    s = _RM_DASH.sub(r"\1 \2", s)
    s = _CONT_EN.sub(r"\1 ' \2", s)
    s = _CONT_EN2.sub(r"\1 ' \2", s)
    s = _CONT_EN3.sub(r"\1 ' \2", s)
    s = _CONT_EN4.sub(r"\1 '\2", s)
    s = _CONT_EN5.sub(r"\1 '\2", s)
    words = java_tokens(s)
    out = []
    last = len(words) - 1
    for i, word in enumerate(words):
        if len(word) > 1 and word.endswith("."):
            pre = word[:-1]
            kind: Optional[int] = prefixes.get(pre)
            if "." in pre and _HAS_ALPHA.search(pre):
                out.append(word.replace(".", ""))
            elif kind == NBP_ANY or (i < last and "a" <= words[i + 1][0] <= "z"):
                out.append(word)
            elif kind == NBP_NUM_ONLY and i < last and "0" <= words[i + 1][0] <= "9":
                out.append(word)
            else:
                out.append(pre + " .")
        else:
            out.append(word)
        out.append(" ")
    s = "".join(out)
    while "DOTDOTMULTI" in s:
        s = s.replace("DOTDOTMULTI", "DOTMULTI.")
    s = s.replace("DOTMULTI", ".")
    return java_trim(_WHITE.sub(" ", s))


def meteor_words(text: str, prefixes: dict[str, int]) -> tuple[str, ...]:
    """The words METEOR aligns for ``text`` under ``-norm``: normalized, lower-cased, tokenized."""
    if _PLAIN.fullmatch(text) and "DOTMULTI" not in text:
        return tuple(text.lower().split(" "))
    return tuple(java_tokens(java_lower(normalize_line(text, prefixes))))

"""coco-caption's PTB tokenizer in pure Python: Stanford CoreNLP 3.4.1's ``PTBTokenizer
-preserveLines -lowerCase`` (the jar pycocoevalcap 1.2 ships) followed by pycocoevalcap's
punctuation filter, token for token, line for line, with no Java.

The jar's lexer is a JFlex scanner (``PTBLexer.flex``, CoreNLP tag v3.4.1); this module runs the
same rules in the same order with JFlex's semantics written out:

* at each position every rule's longest match is taken and the longest wins, ties going to the
  earlier rule; a rule's trailing context (``r1/r2``) counts towards its length, then the text is
  the longest ``r1`` the rest of the match allows;
* ``%caseless`` makes the letters of literal strings caseless (``i`` also matches ``İ`` and ``ı``,
  ``k`` the Kelvin sign, ``s`` the long s), never those of character classes, so ``[M]ass`` only
  starts with a capital;
* the text is UTF-16 code units: a character beyond the BMP is two units that no class but a
  negated one holds, deleted as untokenizable;
* ``[:letter:]``, ``[:digit:]`` and ``[:uppercase:]`` are the Unicode tables JFlex compiled into
  the jar (Unicode 6.x, with Java's Other_Uppercase); they are below as measured from the jar
  over every BMP character, so no Python version's Unicode data enters the lexing.

The options are the command line's, ``tokenizeNLs`` (from ``-preserveLines``) and nothing else:
``americanize`` stays off (the lexer's default in 3.4.1, whatever the javadoc says: "colour"
stays "colour"), untokenizable characters are deleted, PTB escaping is on (``(`` → ``-LRB-``,
quotes → `````` / ``''``, ``...``, ``--``, ``&amp;`` → ``&``, ``½`` → ``1/2``, ``£`` → ``#``).
Lower-casing is Java 17's ``toLowerCase(Locale.ENGLISH)`` of each token: Python's ``str.lower``,
with a capital sigma's final form decided by Java's rule (no cased letter after it in the word
``java.text.BreakIterator`` finds, one before it) and the capitals newer than Java 17's Unicode 13
left as they are (a newer JVM lower-cases them; only URL-like tokens can hold them).

Most captions take a shortcut that gives the same tokens: a line of ASCII words, blanks and a
comma, period, "!" or "?" after a word needs no rule but WORD (and "?!") when no abbreviation, single letter or
split word ("cannot") stands in it and no digits face each other across a blank.

:func:`tokenize_lines` is what ``tokenizer._run_tokenizer`` returns for the same lines (one file),
:func:`tokenize_files` what pycocoevalcap's ``PTBTokenizer`` returns for each of several files
(each read to its true end: a smiley or an apostrophe and two digits there reads as ":" and ")",
"'" and "90").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Sequence

from .java_text import NEWER_CAPITALS, java_lower

__all__ = ["PUNCTUATIONS", "jar_output", "tokenize_lines", "tokenize_text", "tokenize_files"]

#: pycocoevalcap.tokenizer.ptbtokenizer.PUNCTUATIONS (compared in the tests)
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])

# --- the jar's Unicode character classes (hex ranges; "/2": every other code point), its own
# 2014 tables, which Python's unicodedata does not reproduce (tests/test_ptb_tokenizer.py checks them)
_LETTER = """
41-5a 61-7a aa b5 ba c0-d6 d8-f6 f8-2c1 2c6-2d1 2e0-2e4 2ec 2ee 370-374 376-377 37a-37d 386 388-38a 38c
38e-3a1 3a3-3f5 3f7-481 48a-527 531-556 559 561-587 5d0-5ea 5f0-5f2 620-64a 66e-66f 671-6d3 6d5 6e5-6e6
6ee-6ef 6fa-6fc 6ff 710 712-72f 74d-7a5 7b1 7ca-7ea 7f4-7f5 7fa 800-815 81a 824 828 840-858 8a0 8a2-8ac
904-939 93d 950 958-961 971-977 979-97f 985-98c 98f-990 993-9a8 9aa-9b0 9b2 9b6-9b9 9bd 9ce 9dc-9dd 9df-9e1
9f0-9f1 a05-a0a a0f-a10 a13-a28 a2a-a30 a32-a33 a35-a36 a38-a39 a59-a5c a5e a72-a74 a85-a8d a8f-a91 a93-aa8
aaa-ab0 ab2-ab3 ab5-ab9 abd ad0 ae0-ae1 b05-b0c b0f-b10 b13-b28 b2a-b30 b32-b33 b35-b39 b3d b5c-b5d b5f-b61
b71 b83 b85-b8a b8e-b90 b92-b95 b99-b9a b9c b9e-b9f ba3-ba4 ba8-baa bae-bb9 bd0 c05-c0c c0e-c10 c12-c28
c2a-c33 c35-c39 c3d c58-c59 c60-c61 c85-c8c c8e-c90 c92-ca8 caa-cb3 cb5-cb9 cbd cde ce0-ce1 cf1-cf2 d05-d0c
d0e-d10 d12-d3a d3d d4e d60-d61 d7a-d7f d85-d96 d9a-db1 db3-dbb dbd dc0-dc6 e01-e30 e32-e33 e40-e46 e81-e82
e84 e87-e88 e8a e8d e94-e97 e99-e9f ea1-ea3 ea5 ea7 eaa-eab ead-eb0 eb2-eb3 ebd ec0-ec4 ec6 edc-edf f00
f40-f47 f49-f6c f88-f8c 1000-102a 103f 1050-1055 105a-105d 1061 1065-1066 106e-1070 1075-1081 108e 10a0-10c5
10c7 10cd 10d0-10fa 10fc-1248 124a-124d 1250-1256 1258 125a-125d 1260-1288 128a-128d 1290-12b0 12b2-12b5
12b8-12be 12c0 12c2-12c5 12c8-12d6 12d8-1310 1312-1315 1318-135a 1380-138f 13a0-13f4 1401-166c 166f-167f
1681-169a 16a0-16ea 1700-170c 170e-1711 1720-1731 1740-1751 1760-176c 176e-1770 1780-17b3 17d7 17dc 1820-1877
1880-18a8 18aa 18b0-18f5 1900-191c 1950-196d 1970-1974 1980-19ab 19c1-19c7 1a00-1a16 1a20-1a54 1aa7 1b05-1b33
1b45-1b4b 1b83-1ba0 1bae-1baf 1bba-1be5 1c00-1c23 1c4d-1c4f 1c5a-1c7d 1ce9-1cec 1cee-1cf1 1cf5-1cf6 1d00-1dbf
1e00-1f15 1f18-1f1d 1f20-1f45 1f48-1f4d 1f50-1f57 1f59-1f5f/2 1f60-1f7d 1f80-1fb4 1fb6-1fbc 1fbe 1fc2-1fc4
1fc6-1fcc 1fd0-1fd3 1fd6-1fdb 1fe0-1fec 1ff2-1ff4 1ff6-1ffc 2071 207f 2090-209c 2102 2107 210a-2113 2115
2119-211d 2124-212a/2 212b-212d 212f-2139 213c-213f 2145-2149 214e 2183-2184 2c00-2c2e 2c30-2c5e 2c60-2ce4
2ceb-2cee 2cf2-2cf3 2d00-2d25 2d27 2d2d 2d30-2d67 2d6f 2d80-2d96 2da0-2da6 2da8-2dae 2db0-2db6 2db8-2dbe
2dc0-2dc6 2dc8-2dce 2dd0-2dd6 2dd8-2dde 2e2f 3005-3006 3031-3035 303b-303c 3041-3096 309d-309f 30a1-30fa
30fc-30ff 3105-312d 3131-318e 31a0-31ba 31f0-31ff 3400-4db5 4e00-9fcc a000-a48c a4d0-a4fd a500-a60c a610-a61f
a62a-a62b a640-a66e a67f-a697 a6a0-a6e5 a717-a71f a722-a788 a78b-a78e a790-a793 a7a0-a7aa a7f8-a801 a803-a805
a807-a80a a80c-a822 a840-a873 a882-a8b3 a8f2-a8f7 a8fb a90a-a925 a930-a946 a960-a97c a984-a9b2 a9cf aa00-aa28
aa40-aa42 aa44-aa4b aa60-aa76 aa7a aa80-aaaf aab1 aab5-aab6 aab9-aabd aac0 aac2 aadb-aadd aae0-aaea aaf2-aaf4
ab01-ab06 ab09-ab0e ab11-ab16 ab20-ab26 ab28-ab2e abc0-abe2 ac00-d7a3 d7b0-d7c6 d7cb-d7fb f900-fa6d fa70-fad9
fb00-fb06 fb13-fb17 fb1d fb1f-fb28 fb2a-fb36 fb38-fb3c fb3e fb40-fb41 fb43-fb44 fb46-fbb1 fbd3-fd3d fd50-fd8f
fd92-fdc7 fdf0-fdfb fe70-fe74 fe76-fefc ff21-ff3a ff41-ff5a ff66-ffbe ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc
"""
_DIGIT = """
30-39 660-669 6f0-6f9 7c0-7c9 966-96f 9e6-9ef a66-a6f ae6-aef b66-b6f be6-bef c66-c6f ce6-cef d66-d6f e50-e59
ed0-ed9 f20-f29 1040-1049 1090-1099 17e0-17e9 1810-1819 1946-194f 19d0-19d9 1a80-1a89 1a90-1a99 1b50-1b59
1bb0-1bb9 1c40-1c49 1c50-1c59 a620-a629 a8d0-a8d9 a900-a909 a9d0-a9d9 aa50-aa59 abf0-abf9 ff10-ff19
"""
_UPPER = """
41-5a c0-d6 d8-de 100-136/2 139-147/2 14a-178/2 179-17d/2 181-182 184 186-187 189-18b 18e-191 193-194 196-198
19c-19d 19f-1a0 1a2-1a6/2 1a7 1a9 1ac 1ae-1af 1b1-1b3 1b5 1b7-1b8 1bc 1c4 1c7 1ca 1cd-1db/2 1de-1ee/2 1f1 1f4
1f6-1f8 1fa-232/2 23a-23b 23d-23e 241 243-246 248-24e/2 370 372 376 386 388-38a 38c 38e-38f 391-3a1 3a3-3ab
3cf 3d2-3d4 3d8-3ee/2 3f4 3f7 3f9-3fa 3fd-42f 460-480/2 48a-4c0/2 4c1-4cd/2 4d0-526/2 531-556 10a0-10c5 10c7
10cd 1e00-1e94/2 1e9e-1efe/2 1f08-1f0f 1f18-1f1d 1f28-1f2f 1f38-1f3f 1f48-1f4d 1f59-1f5f/2 1f68-1f6f
1fb8-1fbb 1fc8-1fcb 1fd8-1fdb 1fe8-1fec 1ff8-1ffb 2102 2107 210b-210d 2110-2112 2115 2119-211d 2124-212a/2
212b-212d 2130-2133 213e-213f 2145 2160-216f 2183 24b6-24cf 2c00-2c2e 2c60 2c62-2c64 2c67-2c6d/2 2c6e-2c70
2c72 2c75 2c7e-2c80 2c82-2ce2/2 2ceb 2ced 2cf2 a640-a66c/2 a680-a696/2 a722-a72e/2 a732-a76e/2 a779-a77d/2
a77e-a786/2 a78b a78d a790 a792 a7a0-a7aa/2 ff21-ff3a
"""
#: the grammar's LETTER beyond [:letter:]: soft hyphen, modifier letters, combining marks
_WORD_EXTRA = """
ad 2c2-2c5 2d2-2df 2e5-2eb 2ed 2ef-36f 375 378-379 384-385 3f6 483-487 55a-55f 591-5bd 5bf 5c1-5c2 5c4-5c5
5c7 615-61a 64b-65e 670 6d6-6e4 6e7-6ed 6fd-6fe 70f 711 730-74c 7a6-7b0 7eb-7f3 900-903 93c 93e-94e 951-955
962-963 981-983 9bc 9be-9c4 9c7-9c8 9cb-9cd 9d7 9e2-9e3 a01-a03 a3c a3e-a4f a81-a83 abc abe-acf b82 bbe-bc2
bc6-bc8 bca-bcd c01-c03 c3e-c56 d3e-d44 d46-d48 e31 e34-e3a e47-e4e eb1 eb4-ebc ec8-ecd
"""
#: MISCSYMBOL: symbols that stand alone as tokens
_MISC = """
25-26 2b 5c 5e 7c 7e a6-a9 ac ae-ba d7 f7 387 5be 5c0 5c3 5c6 5f3-5f4 600-603 606-60a 60c 614 61b 61e 66a 66d
703-70d 7f6-7f8 964-965 e4f 1fbd 2016-2017 2020-2023 2030-2038 203b 203e-2042 2044 207a-207f 208a-208e
2100-214f 2190-21ff 2200-2bff 3012 30fb ff01-ff0f ff1a-ff20 ff3b-ff40 ff5b-ff65
"""


def _class(spec: str) -> str:
    """A regular-expression class body from the hex ranges above."""
    parts = []
    for item in spec.split():
        step = 2 if item.endswith("/2") else 1
        lo, _, hi = item.removesuffix("/2").partition("-")
        a, b = int(lo, 16), int(hi or lo, 16)
        if step == 2:
            parts.extend("\\u%04x" % c for c in range(a, b + 1, 2))
        else:
            parts.append("\\u%04x" % a if a == b else "\\u%04x-\\u%04x" % (a, b))
    return "".join(parts)


L = _class(_LETTER)          # [:letter:]
D = _class(_DIGIT)           # [:digit:] (= the grammar's DIGIT: N'Ko digits are in it)
UP = _class(_UPPER)          # [:uppercase:]
LX = L + _class(_WORD_EXTRA)  # LETTER's single characters
MISC = _class(_MISC)


def _ascii_members(spec: str) -> str:
    """The class body of the ASCII members of the hex ranges ``spec``."""
    members = set()
    for item in spec.split():
        step = 2 if item.endswith("/2") else 1
        lo, _, hi = item.removesuffix("/2").partition("-")
        members.update(range(int(lo, 16), min(int(hi or lo, 16), 127) + 1, step))
    runs = [[c, c] for c in sorted(members)]
    for k in range(len(runs) - 1, 0, -1):  # consecutive members as one range
        if runs[k][0] == runs[k - 1][1] + 1:
            runs[k - 1][1] = runs.pop(k)[1]
    return _class(" ".join(f"{a:x}-{b:x}" for a, b in runs))


#: each big class body and its ASCII members, the longer first (LX begins with L): in a pattern
#: that only ever sees ASCII text the two match alike, and the short one compiles far sooner
_ASCII_BODIES = ((LX, _ascii_members(_LETTER + _WORD_EXTRA)), (L, _ascii_members(_LETTER)),
                 (D, _ascii_members(_DIGIT)), (UP, _ascii_members(_UPPER)), (MISC, _ascii_members(_MISC)))


def ascii_only(pattern: str) -> str:
    """``pattern`` for ASCII text: its big Unicode classes cut to their ASCII members (none of them
    stands in a negated class, where cutting would change what it matches)."""
    for body, ascii_body in _ASCII_BODIES:
        pattern = pattern.replace(body, ascii_body)
    return pattern

#: %caseless: the characters Java's case mappings tie to an ASCII letter
_CASE_FRIENDS = {"i": "iI\u0130\u0131", "k": "kK\u212a", "s": "sS\u017f"}


def ci(literal: str) -> str:
    """A literal string as JFlex's ``%caseless`` matches it."""
    out = []
    for ch in literal:
        low = ch.lower()
        if "a" <= low <= "z":
            out.append("[" + _CASE_FRIENDS.get(low, low + low.upper()) + "]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def words(spec: str) -> str:
    """Alternatives written as in the grammar: letters caseless, ``[X]`` exact, ``?`` optional,
    ``(a|b)`` groups, ``.`` a period."""
    out = []
    k = 0
    while k < len(spec):
        ch = spec[k]
        if ch == "[":
            end = spec.index("]", k)
            out.append(spec[k:end + 1])
            k = end + 1
            continue
        if ch in "?|":
            out.append(ch)
        elif ch == "(":
            out.append("(?:")
        elif ch == ")":
            out.append(")")
        else:
            out.append(ci(ch))
        k += 1
    return "(?:" + "".join(out) + ")"


# --- the grammar's macros
SPACE = " \\t\\u00a0\\u2000-\\u200a\\u3000"
NLCHARS = "\\r\\n\\u2028\\u2029\\x0b\\x0c\\x85"
SPACENL = "(?:\\r\\n|[" + SPACE + NLCHARS + "])"
SPACENLS = "[" + SPACE + NLCHARS + "]+"
NAME = "[A-Za-z][A-Za-z0-9_:.\\-]*"
SGML = ("<(?:[!?][A-Za-z\\-][^>\\r\\n]*|" + NAME + "(?: +" + NAME + "(?: *= *(?:'[^']*'|\"[^\"]*\"))?)* */?|/"
        + NAME + ") *>")
SPLET = "&[aeiouAEIOU](?:" + ci("acute") + "|" + ci("grave") + "|" + ci("uml") + ");"
LETTER = "(?:[" + LX + "]|" + SPLET + ")"
LETTERS_OR_DIGITS = "[" + LX + D + "]*(?:" + SPLET + "[" + LX + D + "]*)*"
WORD = LETTER + LETTERS_OR_DIGITS + "(?:[.!?]" + LETTER + LETTERS_OR_DIGITS + ")*"
LD1 = "(?:[" + LX + D + "]|" + SPLET + ")" + LETTERS_OR_DIGITS  # ({LETTER}|{DIGIT})+
APOS = "(?:['\\u0092\\u2019]|&" + ci("apos") + ";)"
APOSETC = "(?:['`\\u0091\\u0092\\u2018\\u2019\\u201b]|&" + ci("apos") + ";)"
REDAUX = APOS + "(?:[msdMSD]|" + ci("re") + "|" + ci("ve") + "|" + ci("ll") + ")"
SWORD = "[A-Za-z\\u00ad]*[A-MO-Za-mo-z]\\u00ad*"
SREDAUX = ci("n") + APOSETC + ci("t")
HYPHEN = "[\\-_\\u058a\\u2010\\u2011]"
THINGPART = "(?:[dDoOlL]" + APOSETC + "[" + L + D + "])?[" + L + D + "]+"
THING = THINGPART + "(?:" + HYPHEN + THINGPART + ")*"
THINGA = "[A-Z]+(?:(?:&" + ci("amp") + ";|[+&])[A-Z]+)+"
THING3 = "[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}"
ACRO_SPECIAL = ("(?:" + words("Canada|Sino|Korean|EU|Japan|non") + "-" + ci("u.s") + "|"
                + ci("u.s.-") + "(?:" + ci("u.k") + "|" + ci("u.s.s.r") + "))")
ACRO = "(?:[A-Za-z](?:\\.[A-Za-z])*|" + ACRO_SPECIAL + ")"
ACRO2 = "(?:[A-Za-z](?:\\.[A-Za-z])+|" + ACRO_SPECIAL + ")"
HTHING = "[A-Za-z0-9][A-Za-z0-9.,\\u00ad]*(?:-(?:" + ACRO2 + "\\.|[A-Za-z0-9\\u00ad]+))+"
FILENAME_EXT = words("bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov|mp3|pdf|php"
                     "|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip")
FILENAME = LD1 + "(?:\\." + LD1 + ")*\\." + FILENAME_EXT
URL_END = "[^ \\t\\n\\f\\r\"<>|.!?(){},\\-]"
ASTRAL = "[\\U00010000-\\U0010ffff]"  # two UTF-16 units: "x+y" of two negated classes holds one alone
FULLURL_BODY = "[^ \\t\\n\\f\\r\"<>|(){}]"
FULLURL = [ci("http") + "[sS\u017f]?://" + FULLURL_BODY + "+" + URL_END,
           ci("http") + "[sS\u017f]?://" + FULLURL_BODY + "*" + ASTRAL]
URL_PATH = "(?:/(?:[^ \\t\\n\\f\\r\"<>|()]+" + URL_END + "|[^ \\t\\n\\f\\r\"<>|()]*" + ASTRAL + "))?"
URL_HOST_WWW = ci("www") + "\\.(?:[^ \\t\\n\\f\\r\"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4}"
URL_HOST_TLD = "(?:[^ \\t\\n\\f\\r\"`'<>|.!?(){}\\x2c-\\x5f$]+\\.)+" + words("com|net|org|edu")
EMAIL_DOMAIN = "[^ \\t\\n\\f\\r\"<>|(){}.\\u00a0]+"
EMAIL = ("(?:&" + ci("lt") + ";|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r\"<>|()\\u00a0{}]*@(?:" + EMAIL_DOMAIN + "\\.)*"
         + EMAIL_DOMAIN + "(?:&" + ci("gt") + ";|>)?")
TWITTER = "@[a-zA-Z_][a-zA-Z_0-9]*|#(?:[" + LX + "]|" + SPLET + ")[" + LX + "]*(?:" + SPLET + "[" + LX + "]*)*"
ABMONTH = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
ABDAYS = "Mon|Tue|Tues|Wed|Thu|Thurs|Fri"
ABSTATE = ("Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich|Minn"
           "|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo")
ABCOMP = "Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys"
ABNUM = "tel|est|ext|sq"
ABPTIT = "Jr|Sr|Bros|(Ed|Ph).D|Blvd|Rd|Esq"
ABBREV1 = words("|".join([ABMONTH, ABDAYS, ABSTATE, ABCOMP, ABNUM, ABPTIT, "etc|al|seq|Bldg"])) + "\\."
ABTITLE = ("Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt"
           "|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp"
           "|Mlle|Mme|Msgr|Sfc")
ABBREV4_WORDS = words(ABTITLE + "|vs|Alex|Wm|Jos|Cie|a.k.a|cf|TREAS|Ph|Invt|Elec|Natl|M[ft]g|Dept")
ABBREV3 = words("ca|figs?|prop|nos?|art|bldg|pp|op") + "\\."
#: the words after which an acronym's period also ends a sentence
SENTENCE_STARTERS = ("(?:" + "|".join(w[0] + ci(w[1:]) for w in (
    "About According Additionally After An A As At But Earlier He Her Here However If In It Last Many More "
    "Mr. Ms. Now Once One Other Our She Since So Some Such That The Their Then There These They This We When "
    "While What Yet You").split()) + "|" + SGML + ")")
PHONE_CORE = "[0-9]{3,4}[\\- \\u00a0]?[0-9]{3,5}"
INSENTP = "[,;:\\u3001]"
QUOTE_CHARS = "[`\\u2018\\u2019\\u201a\\u201b\\u201c\\u201d\\u0091\\u0092\\u0093\\u0094\\u201e\\u201f\\u2039\\u203a\\u00ab\\u00bb]"
DBLQUOT = "(?:\"|&" + ci("quot") + ";)"
TWO_UNITS = "(?:[\\U00010000-\\U0010ffff]|[\\s\\S]{2})"  # [^][^]: two UTF-16 code units
ANY_DIGIT = "[" + D + "]"


# --- token texts (the lexer's normalizations)
def _soft(s: str) -> str:
    if "\u00ad" not in s:
        return s
    return s.replace("\u00ad", "") or "-"


_AMP = re.compile("&[aA][mM][pP];")
_LEFT_QUOTES = str.maketrans({"'": "`", '"': "``", "\u0091": "`", "\u2018": "`", "\u201b": "`", "\u2039": "`",
                              "\u0092": "'", "\u2019": "'", "\u203a": "'", "\u0093": "``", "\u201c": "``",
                              "\u00ab": "``", "\u0094": "''", "\u201d": "''", "\u00bb": "''"})
_RIGHT_QUOTES = str.maketrans({"'": "'", '"': "''", "\u0091": "`", "\u2018": "`", "\u201b": "`", "\u2039": "`",
                               "\u0092": "'", "\u2019": "'", "\u203a": "'", "\u0093": "``", "\u201c": "``",
                               "\u00ab": "``", "\u0094": "''", "\u201d": "''", "\u00bb": "''"})


def _quotes(s: str, left: bool) -> str:
    # &apos; and &quot; are replaced case-sensitively (Java's patterns), before the characters
    s = s.replace("&apos;", "'").replace("&quot;", '"')
    return s.translate(_LEFT_QUOTES if left else _RIGHT_QUOTES)


_FRACTIONS = str.maketrans({"\u00bc": "1/4", "\u00bd": "1/2", "\u00be": "3/4", "\u2153": "1/3", "\u2154": "2/3"})
_CURRENCY = str.maketrans({"\u00a2": "cents", "\u00a3": "#", "\u0080": "$", "\u00a4": "$", "\u20a0": "$", "\u20ac": "$"})
_PARENS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})

_SKIP = object()  # whitespace and deleted characters: no token
_NEWLINE = object()  # a line break of the output


def _keep(s: str) -> str:
    return s


# --- the rules, in the grammar's order: (name, first characters, alternatives, trailing context, token text).
# A rule's alternatives together are its full pattern (trailing context included); the trailing
# context is None, a fixed length, or the pattern of r1 (the text is its longest match that
# leaves the rest to r2).
def _rules():
    R = []

    def rule(name, first, alts, trail, text, run=None):
        R.append((name, first, alts if isinstance(alts, list) else [alts], trail, text, run))

    letters_all = "A-Za-z\u017f\u212a\u0130\u0131"
    rule("c++", "cC", "[cC][+][+]", None, _keep)
    rule("c#", "cCfF", "[cCfF]#", None, _keep)
    rule("cannot", "cC", ci("cannot"), 3, _keep)  # split: "can" now, "not" next
    rule("'twas", "'", "'" + ci("twas"), 3, _keep)
    rule("'tis", "'", "'" + ci("tis"), 2, _keep)
    rule("gonna", "gGlLwW", words("gonna|gotta|lemme|gimme|wanna"), 2, _keep)
    rule("SGML", "<", SGML, None, lambda s: s.replace(" ", "\u00a0"))
    rule("SPMDASH", "&\u0096\u0097\u2013\u2014\u2015", "&" + words("MD|mdash|ndash") + ";|[\\u0096\\u0097\\u2013\\u2014\\u2015]",
         None, lambda s: "--")
    rule("SPAMP", "&", "&" + ci("amp") + ";", None, lambda s: _AMP.sub("&", s))
    rule("SPPUNC", "&", "&(?:" + words("HT|TL|UR|LR|QC|QL|QR|odq|cdq") + "|#[0-9]+);", None, _keep)
    rule("WORD/REDAUX", "WORD", WORD + REDAUX, "(" + WORD + ")" + REDAUX, _soft)
    rule("SWORD/SREDAUX", "A-Za-z\u00ad", SWORD + SREDAUX, "(" + SWORD + ")" + SREDAUX, _soft)
    rule("WORD", "WORD", WORD, None, _soft)
    apoword = [APOS + ci("n") + APOS + "?", "[lLdDjJ]" + APOS, ci("dunkin") + APOS, ci("somethin") + APOS,
               ci("ol") + APOS, APOS + ci("em"), "[A-HJ-XZn]" + APOSETC + "[" + L + "]{2,}",
               APOS + "[2-9]0" + ci("s"), APOS + ci("til") + ci("l") + "?",
               "[" + L + "]+[aeiouyAEIOUY]" + APOSETC + "[aeiouA-Z][" + L + "]*", APOS + ci("cause"),
               ci("cont") + "'" + ci("d") + "\\.?", "'" + ci("twas"), ci("nor") + "'" + ci("easter"),
               ci("c") + "'" + ci("mon"), ci("e") + "'" + ci("er"), ci("s") + "'" + ci("mores"),
               ci("ev") + "'" + ci("ry"), ci("li") + "'" + ci("l"), ci("nat") + "'" + ci("l"),
               ci("o") + APOSETC + ci("o")]
    rule("APOWORD", "LETTER'\u0092\u2019&", apoword, None, _keep)
    rule("APOWORD2", "yY", ci("y") + APOS + "[" + L + "]", 1, _keep)
    rule("FULLURL", "hH", FULLURL, None, _keep)
    rule("LIKELYURL", "URL", [URL_HOST_WWW + URL_PATH, URL_HOST_TLD + URL_PATH], None, _keep, "[ \\t\\n\\f\\r\"<>|]")
    rule("EMAIL", "<&a-zA-Z0-9", EMAIL, None, _keep, "[ \\t\\n\\f\\r\"|()\\u00a0{}]")
    rule("TWITTER", "@#", TWITTER, None, _keep)
    rule("REDAUX/", "'\u0092\u2019&", REDAUX + "[^A-Za-z]", 1, lambda s: _quotes(s, False))
    rule("SREDAUX/", "nN", SREDAUX + "[^A-Za-z]", 1, lambda s: _quotes(s, False))
    rule("DATE", "DIGIT", ANY_DIGIT + "{1,2}[\\-/]" + ANY_DIGIT + "{1,2}[\\-/]" + ANY_DIGIT + "{2,4}", None, _keep)
    rule("NUMBER", "-+.:,\u00ad\u066b\u066cDIGIT",
         ["[\\-+]?" + ANY_DIGIT + "+", "[\\-+]?" + ANY_DIGIT + "*(?:[.:,\\u00ad\\u066b\\u066c]" + ANY_DIGIT + "+)+"],
         None, _soft)
    rule("SUBSUPNUM", "\u207a\u207b\u208a\u208b\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u2080-\u2089",
         "[\\u207a\\u207b\\u208a\\u208b]?(?:[\\u2070\\u00b9\\u00b2\\u00b3\\u2074-\\u2079]+|[\\u2080-\\u2089]+)", None, _keep)
    frac_tail = ANY_DIGIT + "{1,4}(?:\\\\?/|\\u2044)" + ANY_DIGIT + "{1,4}"
    rule("FRAC", "DIGIT", [ANY_DIGIT + "{1,4}[\\- \\u00a0]" + frac_tail, frac_tail], None,
         lambda s: s.replace(" ", "\u00a0"))
    rule("FRAC2", "\u00bc\u00bd\u00be\u2153-\u215e", "[\\u00bc\\u00bd\\u00be\\u2153-\\u215e]", None,
         lambda s: s.translate(_FRACTIONS))
    amp = "(?:&|&" + ci("amp") + ";)"
    rule("TBSPEC", "\\-cCpPaAsS\u017f",
         ["-" + words("RRB|LRB|RCB|LCB|RSB|LSB") + "-", ci("c.d.s"), ci("pro") + "-", ci("anti") + "-",
          ci("s") + amp + ci("p") + "-500", ci("s") + amp + ci("ls"), ci("cap") + APOS + ci("n"),
          ci("c") + APOS + ci("est")], None, lambda s: _AMP.sub("&", s))
    rule("THING3", "A-Za-z0-9", THING3, None, _keep, "[^A-Za-z0-9\\-\\\\/]")
    rule("DOLSIGN", "A-Z$#", "[A-Z]*\\$|#", None, _keep)
    rule("DOLSIGN2", "\u00a2\u00a3\u00a4\u00a5\u0080\u20a0\u20ac\u060b\u0e3f\u20a4\uffe0\uffe1\uffe5\uffe6",
         "[\\u00a2\\u00a3\\u00a4\\u00a5\\u0080\\u20a0\\u20ac\\u060b\\u0e3f\\u20a4\\uffe0\\uffe1\\uffe5\\uffe6]",
         None, lambda s: s.translate(_CURRENCY))
    rule("ACRONYM/", letters_all, ACRO + "\\." + SPACENLS + SENTENCE_STARTERS + SPACENL,
         "(" + ACRO + "\\.)" + SPACENLS + SENTENCE_STARTERS + SPACENL, "ACRONYM")
    rule("ABBREV3/", letters_all, ABBREV3 + SPACENL + "?" + ANY_DIGIT, "(" + ABBREV3 + ")" + SPACENL + "?" + ANY_DIGIT,
         _keep)
    rule("pty./", "pPcC", "(?:[pP][tT][eyEY]|" + ci("co") + ")\\.[" + SPACE + "]" + words("ltd|lim"), 4, _keep)
    rule("ABBREV1/SENTEND", letters_all, ABBREV1 + SPACENL + "(?:" + SGML + "|" + SPACENL + "|[" + UP + "])",
         "(" + ABBREV1 + ")" + SPACENL + "(?:" + SGML + "|" + SPACENL + "|[" + UP + "])", "PERIOD_AGAIN")
    rule("ABBREV1/..", letters_all, ABBREV1 + TWO_UNITS, "(" + ABBREV1 + ")" + TWO_UNITS, _keep)
    rule("ABBREV1", letters_all, ABBREV1, None, "PERIOD_AGAIN")
    rule("ABBREV2", letters_all, [ABBREV4_WORDS + "\\.", ACRO + "\\."], None, _keep)
    rule("ABBREV4/", letters_all, [ABBREV4_WORDS + "[" + SPACE + "]", ACRO + "[" + SPACE + "]"], 1, _keep)
    rule("ACRO/", letters_all, ACRO + SPACENL, "(" + ACRO + ")" + SPACENL, _keep)
    rule("TBSPEC2/", "'\u0092\u2019&", APOS + "[0-9][0-9]" + SPACENL, "(" + APOS + "[0-9][0-9])" + SPACENL, _keep)
    rule("FILENAME/", "WORDDIGIT", FILENAME + "(?:" + SPACENL + "|[.?!,])", "(" + FILENAME + ")(?:" + SPACENL + "|[.?!,])",
         _keep)
    rule("WORD./", "WORD", WORD + "\\." + INSENTP, 1, _soft)
    phone = ["\\([0-9]{2,3}\\)[ \\u00a0]?" + PHONE_CORE,
             "(?:\\+\\+?)?[0-9]{2,4}[\\- \\u00a0][0-9]{2,4}[\\- \\u00a0]" + PHONE_CORE,
             "(?:\\+\\+?)?[0-9]{2,4}[\\- \\u00a0]" + PHONE_CORE,
             "(?:\\+\\+?)?[0-9]{2,4}\\.[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}",
             "[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}"]
    rule("PHONE", "(+0-9", phone, None, lambda s: s.replace(" ", "\u00a0").translate(_PARENS))
    rule("DBLQUOT/", "\"&", DBLQUOT + "[A-Za-z0-9$]", 1, lambda s: _quotes(s, True))
    rule("DBLQUOT", "\"&", DBLQUOT, None, lambda s: _quotes(s, False))
    rule("DEL", "\x7f", "\\x7f", None, _SKIP)
    rule("LESSTHAN", "<&", "<|&" + ci("lt") + ";", None, lambda s: "<")
    rule("GREATERTHAN", ">&", ">|&" + ci("gt") + ";", None, lambda s: ">")
    rule("SMILEY/", "<>:;=", "[<>]?[:;=][\\-o*']?[()DPdpO\\\\{@|\\[\\]][^A-Za-z0-9]", 1, lambda s: s.translate(_PARENS))
    # the first alternative's unescaped "~" is JFlex's upto operator: "~<" is any text up to the first "<"
    asian = ["[\\^x=~<>]\\.\\[\\^[xX]=[^<]*<>\\]", "[\\-\\^x=~<>']_[\\-\\^x=~<>']",
             "\\([\\-\\^x=~<>'][_.]?[\\-\\^x=~<>']\\)", "\\([\\^x=~<>']-[\\^x=~<>'`]\\)"]
    rule("ASIANSMILEY", "\\^x=~<>'(\\-", asian, None, lambda s: s.translate(_PARENS))
    rule("{", "{", "\\{", None, lambda s: "-LCB-")
    rule("}", "}", "\\}", None, lambda s: "-RCB-")
    rule("[", "\\[", "\\[", None, lambda s: "-LSB-")
    rule("]", "\\]", "\\]", None, lambda s: "-RSB-")
    rule("(", "(", "\\(", None, lambda s: "-LRB-")
    rule(")", ")", "\\)", None, lambda s: "-RRB-")
    rule("HYPHENS", "\\-", "-+", None, lambda s: "--" if 3 <= len(s) <= 4 else s)
    rule("LDOTS", ".\u0085\u2026", ["\\.{3,5}", "(?:\\.[ \\u00a0]){2,4}\\.", "[\\u0085\\u2026]"], None, lambda s: "...")
    rule("FNMARKS", "@#_", "@+|#+|_+", None, _keep)
    rule("ASTS", "*\\\\", "\\*+|(?:\\\\\\*){1,3}", None, _keep)
    rule("INSENTP", ",;:\u3001", INSENTP, None, _keep)
    rule("?!", "?!", "[?!]+", None, _keep)
    rule("PUNCT", ".\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002",
         "[.\\u00a1\\u00bf\\u037e\\u0589\\u061f\\u06d4\\u0700-\\u0702\\u07fa\\u3002]", None, _keep)
    rule("=", "=", "=", None, _keep)
    rule("/", "/", "/", None, _keep)
    rule("HTHING./", "A-Za-z0-9", HTHING + "\\." + INSENTP, 1, _soft, "[^A-Za-z0-9.,\\u00ad\\-;:\\u3001]")
    rule("HTHING", "A-Za-z0-9", HTHING, None, _soft, "[^A-Za-z0-9.,\\u00ad\\-]")
    rule("THING./", "THING", THING + "\\." + INSENTP, 1, _keep)
    rule("THING", "THING", THING, None, _keep)
    rule("THINGA./", "A-Z", THINGA + "\\." + INSENTP, 1, lambda s: _AMP.sub("&", s))
    rule("THINGA", "A-Z", THINGA, None, lambda s: _AMP.sub("&", s), "[^A-Za-z+&;]")
    rule("'/", "'", "'[A-Za-z][^ \\t\\n\\r\\u00a0]", 2, lambda s: _quotes(s, True))
    rule("REDAUX", "'\u0092\u2019&", REDAUX, None, lambda s: _quotes(s, False))
    rule("SREDAUX", "nN", SREDAUX, None, lambda s: _quotes(s, False))
    rule("QUOTES", "'\u0092\u2019&`\u2018\u201a\u201b\u201c\u201d\u0091\u0093\u0094\u201e\u201f\u2039\u203a\u00ab\u00bb",
         [APOS, "''", QUOTE_CHARS + "{1,2}"], None, lambda s: _quotes(s, False))
    rule("FAKEDUCKFEET", "<>", "<<|>>", None, _keep)
    rule("MISCSYMBOL", "MISC", "[" + MISC + "]", None, _keep)
    rule("SPACES", "\\x00 \\t\u00a0\u2000-\u200a\u3000\u200b\u200e\u200f\ufeff",
         "\\x00|[" + SPACE + "]+|[\\u200b\\u200e\\u200f\\ufeff]", None, _SKIP)
    rule("NEWLINE", NLCHARS, "\\r\\n|[" + NLCHARS + "]", None, _NEWLINE)
    rule("&nbsp;", "&", "&" + ci("nbsp") + ";", None, _SKIP)
    return R


# first-character classes named above, for the rules whose first character is a big class
_FIRST = {
    "WORD": "[" + LX + "&]",
    "WORDDIGIT": "[" + LX + D + "&]",
    "LETTER'\u0092\u2019&": "[" + L + "'\u0092\u2019&]",
    "URL": "[^ \\t\\n\\f\\r\"`'<>|.!?(){}\\x2c-\\x5f$]|[wW]",
    "DIGIT": "[" + D + "]",
    "-+.:,\u00ad\u066b\u066cDIGIT": "[\\-+.:,\\u00ad\\u066b\\u066c" + D + "]",
    "THING": "[" + L + D + "]",
    "MISC": "[" + MISC + "]",
}


#: characters one of which a rule's match holds before the first ASCII blank: a rule whose
#: characters are all absent from the rest of the blank-free run is not tried
_APOS_CHARS = "'\u0092\u2019&"
_APOSETC_CHARS = "'`\u0091\u0092\u2018\u2019\u201b&"
_NEEDS = {
    "WORD/REDAUX": _APOS_CHARS, "SWORD/SREDAUX": _APOSETC_CHARS, "APOWORD": _APOSETC_CHARS, "APOWORD2": _APOS_CHARS,
    "FULLURL": ":", "LIKELYURL": ".", "EMAIL": "@", "SREDAUX/": _APOSETC_CHARS, "TBSPEC": "-.&'\u0092\u2019",
    "THING3": "/", "DOLSIGN": "$#", "ACRONYM/": ".", "ABBREV3/": ".", "pty./": ".", "ABBREV1/SENTEND": ".",
    "ABBREV1/..": ".", "ABBREV1": ".", "ABBREV2": ".", "WORD./": ".", "FILENAME/": ".", "HTHING./": "-",
    "HTHING": "-", "THING./": ".", "THINGA./": "+&", "THINGA": "+&", "SREDAUX": _APOSETC_CHARS,
}
_BLANK_RUN_END = re.compile("[ \t\n\r\x0c]")


class _Rule:
    __slots__ = ("index", "name", "first", "first_ascii", "fixed", "text", "needs", "spec", "compiled")

    def __init__(self, index, name, first, alts, trail, text, run):
        self.index = index
        self.name = name
        self.first = _FIRST[first] if first in _FIRST else "[" + first + "]"  # compiled where a non-ASCII character needs it
        self.first_ascii = re.compile(ascii_only(self.first))
        self.fixed = trail if isinstance(trail, int) else 0
        self.text = text
        self.needs = frozenset(_NEEDS[name]) if name in _NEEDS else None
        self.spec = (alts, trail, run)
        # compiled at the rule's first try, once for ASCII text and once for any: most lines need few rules
        self.compiled: list = [None, None]

    def patterns(self, ascii: bool) -> "_Patterns":
        p = self.compiled[ascii]
        if p is None:
            p = self.compiled[ascii] = _Patterns(*self.spec, ascii_only if ascii else str)
        return p


class _Patterns:
    """A rule's expressions, compiled for ASCII text or for any."""

    __slots__ = ("pats", "split", "full", "run_end")

    def __init__(self, alts, trail, run, cut) -> None:
        self.split = re.compile(cut(trail)).fullmatch if isinstance(trail, str) else None
        # rules whose greedy first match may not be the longest: every end up to the end of the
        # run of characters the rule can hold is tried, longest first
        self.full = [re.compile(cut(a)).fullmatch for a in alts] if run else None
        self.run_end = re.compile(cut(run)).search if run else None
        self.pats = [re.compile(cut(a)).match for a in alts]


@lru_cache(maxsize=None)
def compiled_rules() -> list[_Rule]:
    """The grammar's rules, made at first need, each compiling its expressions at its first try:
    a fresh process compiles only the rules its lines reach."""
    return [_Rule(k, *spec) for k, spec in enumerate(_rules())]


_BY_CHAR: dict = {}


def _candidates(ch: str) -> tuple:
    rules = _BY_CHAR.get(ch)
    if rules is None:
        # an ASCII character: the cut class says what the whole one does
        rules = _BY_CHAR[ch] = tuple(r for r in compiled_rules()
                                     if (r.first_ascii.match(ch) if ch.isascii() else re.match(r.first, ch)))
    return rules


def _longest(p: _Patterns, text: str, i: int, found: int) -> int:
    stop = p.run_end(text, found)
    for end in range(len(text) if stop is None else stop.start(), found, -1):
        if any(full(text, i, end) for full in p.full):
            return end
    return found


def ascii_from(text: str) -> int:
    """Where the ASCII tail of ``text`` starts: a match starting there sees only ASCII."""
    end = len(text)
    while end > 0:
        start = max(0, end - 4096)
        if not text[start:end].isascii():
            return next(k for k in range(end - 1, start - 1, -1) if not text[k].isascii()) + 1
        end = start
    return 0


#: the words the grammar splits: "cannot" → "can" "not", "gonna" → "gon" "na"
_SPLIT_WORDS = frozenset(["cannot", "gonna", "gotta", "lemme", "gimme", "wanna"])
#: an ASCII word before a blank: WORD's token, whatever else could match (the rules reaching past
#: a blank all need a period, a digit or a bracket first)
_PLAIN_WORD = re.compile("[A-Za-z][A-Za-z0-9]*(?=[ \t\r\n]|\\Z)").match
#: SPACES: only it starts at a space or a tab, and it takes the whole run of spaces that follows
_BLANKS = re.compile("[ \t][" + SPACE + "]*").match


def _lex_line(text: str, i: int, toks: list, ascii_at: int) -> tuple:
    """Lex from ``i`` to the end of the output line: tokens (not lower-cased) appended to ``toks``;
    returns the position after the line break token, or the text's end, and whether a break came.
    From ``ascii_at`` on, the text is ASCII (:func:`ascii_from`)."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            return i + 1, True
        if ch == " " or ch == "\t":
            i = _BLANKS(text, i).end()
            continue
        if "A" <= ch <= "z":
            m = _PLAIN_WORD(text, i)
            if m is not None and m.group().lower() not in _SPLIT_WORDS:
                toks.append(m.group())
                i = m.end()
                continue
        best = None
        best_end = i
        present = None
        ascii = i >= ascii_at
        for rule in _candidates(ch):
            if rule.needs is not None:
                if present is None:
                    stop = _BLANK_RUN_END.search(text, i)
                    present = frozenset(text[i:n if stop is None else stop.start()])
                if rule.needs.isdisjoint(present):
                    continue
            p = rule.patterns(ascii)
            end = i
            for match in p.pats:
                m = match(text, i)
                if m is not None and m.end() > end:
                    end = m.end()
            if end > i and p.full is not None:
                end = _longest(p, text, i, end)
            if end > best_end:
                best, best_end, best_p = rule, end, p
        if best is None:  # `.`: untokenizable, deleted
            i += 1
            continue
        if best_p.split is not None:
            end = best_p.split(text, i, best_end).end(1)
        else:
            end = best_end - best.fixed
        action = best.text
        if action is _SKIP:
            pass
        elif action is _NEWLINE:
            return end, True
        elif action == "ACRONYM":  # "I." before "The": "I" then "."; "U.S.": "U.S." then "."
            if end - i == 2:
                end = i + 1
                toks.append(text[i])
            else:
                toks.append(text[i:end])
                end -= 1
        elif action == "PERIOD_AGAIN":  # the abbreviation with its period, then the period again
            toks.append(text[i:end])
            end -= 1
        else:
            toks.append(action(text[i:end]))
        i = end
    return n, False


# --- a whole line of ASCII words, single spaces or tabs, and a comma, period, "!" or "?" after a
# word: its tokens are its words and marks, unless a word is one the grammar splits, a period follows an
# abbreviation or a single letter (its token and the next line's start then matter), or digits
# stand on both sides of a blank (a phone number, "5 7/8")
_SIMPLE_LINE = re.compile("[ \t]*(?:[A-Za-z0-9]+[.,!?]?(?:[ \t]+|\\Z))*").fullmatch
_SIMPLE_TOKENS = re.compile("[A-Za-z0-9]+|[.,!?]").findall
_SIMPLE_WORDS = re.compile("[A-Za-z0-9]+").findall
_BEFORE_PERIOD = re.compile("([A-Za-z0-9]+)\\.").findall
_DIGITS_ACROSS_BLANK = re.compile("[0-9][.,]?[ \t]+[0-9]").search
_ABBREVIATION = re.compile("(?:" + ABBREV1 + "|" + ABBREV3 + "|" + ABBREV4_WORDS + "\\.|(?:pt[eyEY]|co)\\.|[A-Za-z]\\.)",
                           re.IGNORECASE).fullmatch


@lru_cache(maxsize=1 << 16)
def _abbreviation(word: str) -> bool:
    return _ABBREVIATION(word + ".") is not None


def _simple(line: str) -> Optional[str]:
    """A simple line's filtered, lower-cased tokens (its words), or None."""
    if _SIMPLE_LINE(line) is None or _DIGITS_ACROSS_BLANK(line) is not None:
        return None
    low = line.lower()
    if "." in low and any(_abbreviation(w) for w in _BEFORE_PERIOD(low)):
        return None
    words = _SIMPLE_WORDS(low)
    return " ".join(words) if _SPLIT_WORDS.isdisjoint(words) else None


#: distinct simple lines remembered at a time: repeated captions hit it, a corpus of distinct
#: ones does not grow it without bound
KNOWN_LINES = 1 << 15


def _raw_lines(text: str, simple_text: bool = True) -> tuple:
    """The jar's output lines for ``text``, each as the tokens before lower-casing or, for a simple
    line, as the line itself (``None`` without ``simple_text``), with its filtered tokens beside it
    (``None`` for the others)."""
    n = len(text)
    out: list = []
    simple: list = []
    pos = 0
    toks: list = []
    ascii_at = ascii_from(text)
    known: dict[str, Optional[str]] = {}
    while True:
        if not toks and (pos == 0 or text[pos - 1] == "\n"):
            end = text.find("\n", pos)
            if end < 0:
                end = n
            line = text[pos:end]
            # a simple line's tokens are its own alone: a repeated caption ("there is no change") is read once
            if line in known:
                done = known[line]
            else:
                if len(known) >= KNOWN_LINES:
                    known.clear()
                done = known[line] = _simple(line)
            if done is not None:
                out.append(line if simple_text else None)
                simple.append(done)
                if end == n:
                    return out, simple
                pos = end + 1
                continue
        pos, broke = _lex_line(text, pos, toks, ascii_at)
        out.append(" ".join(toks))
        simple.append(None)
        toks = []
        if not broke:
            return out, simple


def _lower_line(line: str) -> str:
    if "\u03a3" in line or NEWER_CAPITALS.search(line) is not None:  # per token, as Java lower-cases
        return "".join(java_lower(piece) for piece in re.split("([ \n])", line))
    return line.lower()


def jar_output(text: str) -> str:
    """What ``java edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase FILE`` writes for a
    file holding ``text``: each line's tokens joined by spaces, lines joined by ``\\n``."""
    raw, simple = _raw_lines(text)
    return "\n".join(_lower_line(line) if done is None else " ".join(_SIMPLE_TOKENS(line)).lower()
                     for line, done in zip(raw, simple))


def _filter(line: str) -> str:
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)


def tokenize_lines(lines: Sequence[str]) -> list[str]:
    """Each line's tokens, space-joined, after pycocoevalcap's punctuation filter: what
    ``tokenizer._run_tokenizer`` returns for the same lines (one file; a line's end is read in
    the light of the next line's start). Lines should hold no line separator (see :mod:`.text`)."""
    return tokenize_text("\n".join(lines), len(lines))


def tokenize_text(text: str, lines: int) -> list[str]:
    """:func:`tokenize_lines` of the ``lines`` lines that ``text`` joins with newlines: a caller
    holding a file's text already does not join it again."""
    raw, simple = _raw_lines(text, simple_text=False)
    if any(done is None and "\n" in line for line, done in zip(raw, simple)):
        # a token holding a newline moves the later lines, as in the jar's output
        return [_filter(line) for line in jar_output(text).split("\n")[:lines]]
    return [done if done is not None else _filter(_lower_line(line)) for line, done in zip(raw[:lines], simple)]


def tokenize_files(files: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each list of captions tokenized as pycocoevalcap's ``PTBTokenizer.tokenize`` tokenizes it: a
    file of its own (newlines inside a caption become spaces), its last caption read at the end of
    the file."""
    return [tokenize_lines([s.replace("\n", " ") for s in captions]) if captions else [] for captions in files]

"""What METEOR 1.5 (``-l en``) aligns with, read at run time from pycocoevalcap's own files:
the function words, nonbreaking prefixes and WordNet synonym files inside ``meteor-1.5.jar``
(``zipfile``), the paraphrase table through the toolkit's index of it (:mod:`.paraphrase`), and
the jar's Snowball English stemmer.

The stemmer is the jar's ``org.tartarus.snowball.ext.englishStemmer`` (Snowball of about 2010)
ported routine for routine, on UTF-16 code units as Java's ``char``: PyPI's ``snowballstemmer``
(3.1.1) comes from a later Snowball whose English stems differ (``added`` -> ``add``, the jar's ``ad``;
``biologist`` -> ``biolog``, the jar's ``biologist``: 205 of 336,101 words tested).
"""

from __future__ import annotations

import threading
import zipfile
from functools import lru_cache

from .meteor_normalize import NBP_ANY, NBP_NUM_ONLY, java_lines, java_tokens, utf16_length


def jar_path():
    from .tokenizer import pycocoevalcap_dir

    return pycocoevalcap_dir() / "meteor" / "meteor-1.5.jar"


@lru_cache(maxsize=None)
def _jar_text(name: str) -> str:
    with zipfile.ZipFile(jar_path()) as jar:
        return jar.read(name).decode("utf-8")


@lru_cache(maxsize=None)
def function_words() -> frozenset:
    """``function/english.words``: one word a line (``Aligner.setupModules``)."""
    return frozenset(java_lines(_jar_text("function/english.words")))


@lru_cache(maxsize=None)
def nonbreaking_prefixes() -> dict[str, int]:
    """``nonbreaking/english.prefixes`` as ``Normalizer.nbpList`` reads it."""
    table: dict[str, int] = {}
    for line in java_lines(_jar_text("nonbreaking/english.prefixes")):
        tokens = java_tokens(line)
        if not tokens or tokens[0].startswith("#"):
            continue
        table[tokens[0]] = NBP_NUM_ONLY if len(tokens) > 1 and tokens[1] == "#NUMERIC_ONLY#" else NBP_ANY
    return table


class SynonymDictionary:
    """``SynonymDictionary``: WordNet synsets of a word and of its base forms (the exceptions
    list, else WordNet's ``morph`` suffix rules). A word's synset line is parsed when asked."""

    # WordNet 3's detachment rules, in ``SynonymDictionary``'s order
    SUFFIXES = ("s", "ses", "xes", "zes", "ches", "shes", "men", "ies", "s", "ies", "es", "es", "ed", "ed", "ing", "ing",
                "er", "est", "er", "est")
    ENDINGS = ("", "s", "x", "z", "ch", "sh", "man", "y", "", "y", "e", "", "e", "", "e", "", "", "", "e", "e")

    def __init__(self) -> None:
        bases: dict[str, list[str]] = {}
        lines = java_lines(_jar_text("synonym/english.exceptions"))
        for base, forms in zip(lines[0::2], lines[1::2]):
            for form in java_tokens(forms):
                bases.setdefault(form, []).append(base)
        self.bases = bases
        lines = java_lines(_jar_text("synonym/english.synsets"))
        self.synset_lines = dict(zip(lines[0::2], lines[1::2]))  # a repeated word: its last line, as Hashtable.put
        self._sets: dict[str, frozenset] = {}

    def synsets(self, word: str) -> frozenset:
        found = self._sets.get(word)
        if found is None:
            line = self.synset_lines.get(word)
            found = frozenset(int(t) for t in java_tokens(line)) if line is not None else frozenset()
            self._sets[word] = found
        return found

    def stem_synsets(self, word: str) -> frozenset:
        bases = self.bases.get(word)
        if bases is not None:
            return frozenset().union(*(self.synsets(b) for b in bases))
        return self.synsets(self.morph(word))

    def morph(self, word: str) -> str:
        # a word ending in "ful" keeps that ending on the base found (none of the suffixes can match it)
        end = "ful" if word.endswith("ful") else ""
        if word.endswith("ss") or utf16_length(word) <= 2:
            return word
        for suffix, ending in zip(self.SUFFIXES, self.ENDINGS):
            if word.endswith(suffix):
                base = word[:len(word) - len(suffix)] + ending
                if base in self.synset_lines:
                    return base + end
        return ""

    def all_synsets(self, word: str) -> frozenset:
        """What ``SynonymMatcher`` compares: ``getSynSets`` and ``getStemSynSets`` together."""
        return self.synsets(word) | self.stem_synsets(word)


_SYNONYMS: list[SynonymDictionary] = []
_LOCK = threading.Lock()


def synonyms() -> SynonymDictionary:
    with _LOCK:
        if not _SYNONYMS:
            _SYNONYMS.append(SynonymDictionary())
        return _SYNONYMS[0]


# -- the jar's Snowball English stemmer ------------------------------------------------------

# each table: (string, substring_i, result), in the jar's order (find_among's binary search needs it)
_A0 = (("arsen", -1, -1), ("commun", -1, -1), ("gener", -1, -1))
_A1 = (("'", -1, 1), ("'s'", 0, 1), ("'s", -1, 1))
_A2 = (("ied", -1, 2), ("s", -1, 3), ("ies", 1, 2), ("sses", 1, 1), ("ss", 1, -1), ("us", 1, -1))
_A3 = (("", -1, 3), ("bb", 0, 2), ("dd", 0, 2), ("ff", 0, 2), ("gg", 0, 2), ("bl", 0, 1), ("mm", 0, 2), ("nn", 0, 2),
       ("pp", 0, 2), ("rr", 0, 2), ("at", 0, 1), ("tt", 0, 2), ("iz", 0, 1))
_A4 = (("ed", -1, 2), ("eed", 0, 1), ("ing", -1, 2), ("edly", -1, 2), ("eedly", 3, 1), ("ingly", -1, 2))
_A5 = (("anci", -1, 3), ("enci", -1, 2), ("ogi", -1, 13), ("li", -1, 16), ("bli", 3, 12), ("abli", 4, 4),
       ("alli", 3, 8), ("fulli", 3, 14), ("lessli", 3, 15), ("ousli", 3, 10), ("entli", 3, 5), ("aliti", -1, 8),
       ("biliti", -1, 12), ("iviti", -1, 11), ("tional", -1, 1), ("ational", 14, 7), ("alism", -1, 8),
       ("ation", -1, 7), ("ization", 17, 6), ("izer", -1, 6), ("ator", -1, 7), ("iveness", -1, 11),
       ("fulness", -1, 9), ("ousness", -1, 10))
_A6 = (("icate", -1, 4), ("ative", -1, 6), ("alize", -1, 3), ("iciti", -1, 4), ("ical", -1, 4), ("tional", -1, 1),
       ("ational", 5, 2), ("ful", -1, 5), ("ness", -1, 5))
_A7 = (("ic", -1, 1), ("ance", -1, 1), ("ence", -1, 1), ("able", -1, 1), ("ible", -1, 1), ("ate", -1, 1),
       ("ive", -1, 1), ("ize", -1, 1), ("iti", -1, 1), ("al", -1, 1), ("ism", -1, 1), ("ion", -1, 2), ("er", -1, 1),
       ("ous", -1, 1), ("ant", -1, 1), ("ent", -1, 1), ("ment", 15, 1), ("ement", 16, 1))
_A8 = (("e", -1, 1), ("l", -1, 2))
_A9 = (("succeed", -1, -1), ("proceed", -1, -1), ("exceed", -1, -1), ("canning", -1, -1), ("inning", -1, -1),
       ("earring", -1, -1), ("herring", -1, -1), ("outing", -1, -1))
_A10 = (("andes", -1, -1), ("atlas", -1, -1), ("bias", -1, -1), ("cosmos", -1, -1), ("dying", -1, 3),
        ("early", -1, 9), ("gently", -1, 7), ("howe", -1, -1), ("idly", -1, 6), ("lying", -1, 4), ("news", -1, -1),
        ("only", -1, 10), ("singly", -1, 11), ("skies", -1, 2), ("skis", -1, 1), ("sky", -1, -1), ("tying", -1, 5),
        ("ugly", -1, 8))
_EXCEPTION1 = {1: "ski", 2: "sky", 3: "die", 4: "lie", 5: "tie", 6: "idl", 7: "gentl", 8: "ugli", 9: "earli",
               10: "onli", 11: "singl"}
_STEP2 = {1: "tion", 2: "ence", 3: "ance", 4: "able", 5: "ent", 6: "ize", 7: "ate", 8: "al", 9: "ful", 10: "ous",
          11: "ive", 12: "ble", 14: "ful", 15: "less"}
_STEP3 = {1: "tion", 2: "ate", 3: "al", 4: "ic"}
_V = frozenset("aeiouy")  # g_v
_V_WXY = frozenset("Yaeiouwxy")  # g_v_WXY
_VALID_LI = frozenset("cdeghkmnrt")  # g_valid_LI


class _EnglishStemmer:
    """``SnowballProgram`` + ``englishStemmer``: a cursor over ``cur`` between ``lb`` and ``limit``."""

    def stem(self, word: str) -> str:
        self.cur, self.cursor, self.limit, self.lb, self.bra, self.ket = word, 0, len(word), 0, 0, len(word)
        self.y_found, self.p1, self.p2 = False, 0, 0
        v1 = self.cursor
        if self.exception1():
            return self.cur
        self.cursor = v1
        if v1 + 3 > self.limit:  # hop 3
            return self.cur
        self.cursor = v1
        self.prelude()
        self.cursor = v1
        self.mark_regions()
        self.cursor = v1
        self.lb, self.cursor = self.cursor, self.limit
        v5 = self.limit - self.cursor
        self.step_1a()
        self.cursor = self.limit - v5
        v6 = self.limit - self.cursor
        if not self.exception2():
            self.cursor = self.limit - v6
            for step in (self.step_1b, self.step_1c, self.step_2, self.step_3, self.step_4, self.step_5):
                v = self.limit - self.cursor
                step()
                self.cursor = self.limit - v
        self.cursor = self.lb
        v13 = self.cursor
        self.postlude()
        self.cursor = v13
        return self.cur

    # -- SnowballProgram
    def in_grouping(self, group) -> bool:
        if self.cursor >= self.limit or self.cur[self.cursor] not in group:
            return False
        self.cursor += 1
        return True

    def in_grouping_b(self, group) -> bool:
        if self.cursor <= self.lb or self.cur[self.cursor - 1] not in group:
            return False
        self.cursor -= 1
        return True

    def out_grouping(self, group) -> bool:
        if self.cursor >= self.limit or self.cur[self.cursor] in group:
            return False
        self.cursor += 1
        return True

    def out_grouping_b(self, group) -> bool:
        if self.cursor <= self.lb or self.cur[self.cursor - 1] in group:
            return False
        self.cursor -= 1
        return True

    def eq_s(self, s: str) -> bool:
        if self.limit - self.cursor < len(s) or self.cur[self.cursor:self.cursor + len(s)] != s:
            return False
        self.cursor += len(s)
        return True

    def eq_s_b(self, s: str) -> bool:
        if self.cursor - self.lb < len(s) or self.cur[self.cursor - len(s):self.cursor] != s:
            return False
        self.cursor -= len(s)
        return True

    def find_among(self, v) -> int:
        i, j, c, lim = 0, len(v), self.cursor, self.limit
        common_i = common_j = 0
        first_key_inspected = False
        while True:
            k = i + ((j - i) >> 1)
            diff = 0
            common = min(common_i, common_j)
            w = v[k][0]
            for i2 in range(common, len(w)):
                if c + common == lim:
                    diff = -1
                    break
                diff = ord(self.cur[c + common]) - ord(w[i2])
                if diff != 0:
                    break
                common += 1
            if diff < 0:
                j, common_j = k, common
            else:
                i, common_i = k, common
            if j - i <= 1:
                if i > 0 or j == i or first_key_inspected:
                    break
                first_key_inspected = True
        while True:
            s, substring_i, result = v[i]
            if common_i >= len(s):
                self.cursor = c + len(s)
                return result
            i = substring_i
            if i < 0:
                return 0

    def find_among_b(self, v) -> int:
        i, j, c, lb = 0, len(v), self.cursor, self.lb
        common_i = common_j = 0
        first_key_inspected = False
        while True:
            k = i + ((j - i) >> 1)
            diff = 0
            common = min(common_i, common_j)
            w = v[k][0]
            for i2 in range(len(w) - 1 - common, -1, -1):
                if c - common == lb:
                    diff = -1
                    break
                diff = ord(self.cur[c - 1 - common]) - ord(w[i2])
                if diff != 0:
                    break
                common += 1
            if diff < 0:
                j, common_j = k, common
            else:
                i, common_i = k, common
            if j - i <= 1:
                if i > 0 or j == i or first_key_inspected:
                    break
                first_key_inspected = True
        while True:
            s, substring_i, result = v[i]
            if common_i >= len(s):
                self.cursor = c - len(s)
                return result
            i = substring_i
            if i < 0:
                return 0

    def replace_s(self, c_bra: int, c_ket: int, s: str) -> int:
        adjustment = len(s) - (c_ket - c_bra)
        self.cur = self.cur[:c_bra] + s + self.cur[c_ket:]
        self.limit += adjustment
        if self.cursor >= c_ket:
            self.cursor += adjustment
        elif self.cursor > c_bra:
            self.cursor = c_bra
        return adjustment

    def slice_from(self, s: str) -> None:
        self.replace_s(self.bra, self.ket, s)

    def slice_del(self) -> None:
        self.replace_s(self.bra, self.ket, "")

    def insert(self, c_bra: int, c_ket: int, s: str) -> None:
        adjustment = self.replace_s(c_bra, c_ket, s)
        if c_bra <= self.bra:
            self.bra += adjustment
        if c_bra <= self.ket:
            self.ket += adjustment

    # -- englishStemmer
    def gopast(self, group) -> bool:
        while not self.in_grouping(group):
            if self.cursor >= self.limit:
                return False
            self.cursor += 1
        return True

    def gopast_out(self, group) -> bool:
        while not self.out_grouping(group):
            if self.cursor >= self.limit:
                return False
            self.cursor += 1
        return True

    def gopast_b(self, group) -> bool:
        while not self.in_grouping_b(group):
            if self.cursor <= self.lb:
                return False
            self.cursor -= 1
        return True

    def prelude(self) -> None:
        self.y_found = False
        v1 = self.cursor
        self.bra = self.cursor
        if self.eq_s("'"):
            self.ket = self.cursor
            self.slice_del()
        self.cursor = v1
        self.bra = self.cursor
        if self.eq_s("y"):
            self.ket = self.cursor
            self.slice_from("Y")
            self.y_found = True
        self.cursor = v1
        while True:  # repeat: goto (v [y]) <- 'Y'
            v4 = self.cursor
            found = False
            while True:
                v5 = self.cursor
                if self.in_grouping(_V):
                    self.bra = self.cursor
                    if self.eq_s("y"):
                        self.ket = self.cursor
                        self.cursor = v5
                        found = True
                        break
                self.cursor = v5
                if self.cursor >= self.limit:
                    break
                self.cursor += 1
            if not found:
                self.cursor = v4
                break
            self.slice_from("Y")
            self.y_found = True
        self.cursor = v1

    def mark_regions(self) -> None:
        self.p1 = self.limit
        self.p2 = self.limit
        v1 = self.cursor
        if self.find_among(_A0) == 0:
            self.cursor = v1
            if not (self.gopast(_V) and self.gopast_out(_V)):
                self.cursor = v1
                return
        self.p1 = self.cursor
        if self.gopast(_V) and self.gopast_out(_V):
            self.p2 = self.cursor
        self.cursor = v1

    def shortv(self) -> bool:
        v1 = self.limit - self.cursor
        if self.out_grouping_b(_V_WXY) and self.in_grouping_b(_V) and self.out_grouping_b(_V):
            return True
        self.cursor = self.limit - v1
        return self.out_grouping_b(_V) and self.in_grouping_b(_V) and not self.cursor > self.lb

    def step_1a(self) -> bool:
        v1 = self.limit - self.cursor
        self.ket = self.cursor
        if self.find_among_b(_A1) == 0:
            self.cursor = self.limit - v1
        else:
            self.bra = self.cursor
            self.slice_del()
        self.ket = self.cursor
        among = self.find_among_b(_A2)
        if among == 0:
            return False
        self.bra = self.cursor
        if among == 1:
            self.slice_from("ss")
        elif among == 2:
            v2 = self.limit - self.cursor
            c = self.cursor - 2
            if not (self.lb > c or c > self.limit):
                self.cursor = c
                self.slice_from("i")
            else:
                self.cursor = self.limit - v2
                self.slice_from("ie")
        elif among == 3:
            if self.cursor <= self.lb:
                return False
            self.cursor -= 1
            if not self.gopast_b(_V):
                return False
            self.slice_del()
        return True

    def step_1b(self) -> bool:
        self.ket = self.cursor
        among = self.find_among_b(_A4)
        if among == 0:
            return False
        self.bra = self.cursor
        if among == 1:
            if not self.p1 <= self.cursor:
                return False
            self.slice_from("ee")
        elif among == 2:
            v1 = self.limit - self.cursor
            if not self.gopast_b(_V):
                return False
            self.cursor = self.limit - v1
            self.slice_del()
            v3 = self.limit - self.cursor
            among = self.find_among_b(_A3)
            if among == 0:
                return False
            self.cursor = self.limit - v3
            if among == 1:
                c = self.cursor
                self.insert(self.cursor, self.cursor, "e")
                self.cursor = c
            elif among == 2:
                self.ket = self.cursor
                if self.cursor <= self.lb:
                    return False
                self.cursor -= 1
                self.bra = self.cursor
                self.slice_del()
            elif among == 3:
                if self.cursor != self.p1:
                    return False
                v4 = self.limit - self.cursor
                if not self.shortv():
                    return False
                self.cursor = self.limit - v4
                c = self.cursor
                self.insert(self.cursor, self.cursor, "e")
                self.cursor = c
        return True

    def step_1c(self) -> bool:
        self.ket = self.cursor
        v1 = self.limit - self.cursor
        if not self.eq_s_b("y"):
            self.cursor = self.limit - v1
            if not self.eq_s_b("Y"):
                return False
        self.bra = self.cursor
        if not self.out_grouping_b(_V):
            return False
        if not self.cursor > self.lb:
            return False
        self.slice_from("i")
        return True

    def step_2(self) -> bool:
        self.ket = self.cursor
        among = self.find_among_b(_A5)
        if among == 0:
            return False
        self.bra = self.cursor
        if not self.p1 <= self.cursor:
            return False
        if among in _STEP2:
            self.slice_from(_STEP2[among])
        elif among == 13:
            if not self.eq_s_b("l"):
                return False
            self.slice_from("og")
        elif among == 16:
            if not self.in_grouping_b(_VALID_LI):
                return False
            self.slice_del()
        return True

    def step_3(self) -> bool:
        self.ket = self.cursor
        among = self.find_among_b(_A6)
        if among == 0:
            return False
        self.bra = self.cursor
        if not self.p1 <= self.cursor:
            return False
        if among in _STEP3:
            self.slice_from(_STEP3[among])
        elif among == 5:
            self.slice_del()
        elif among == 6:
            if not self.p2 <= self.cursor:
                return False
            self.slice_del()
        return True

    def step_4(self) -> bool:
        self.ket = self.cursor
        among = self.find_among_b(_A7)
        if among == 0:
            return False
        self.bra = self.cursor
        if not self.p2 <= self.cursor:
            return False
        if among == 1:
            self.slice_del()
        elif among == 2:
            v1 = self.limit - self.cursor
            if not self.eq_s_b("s"):
                self.cursor = self.limit - v1
                if not self.eq_s_b("t"):
                    return False
            self.slice_del()
        return True

    def step_5(self) -> bool:
        self.ket = self.cursor
        among = self.find_among_b(_A8)
        if among == 0:
            return False
        self.bra = self.cursor
        if among == 1:
            v1 = self.limit - self.cursor
            if not self.p2 <= self.cursor:
                self.cursor = self.limit - v1
                if not self.p1 <= self.cursor:
                    return False
                v2 = self.limit - self.cursor
                if self.shortv():
                    return False
                self.cursor = self.limit - v2
            self.slice_del()
        elif among == 2:
            if not self.p2 <= self.cursor:
                return False
            if not self.eq_s_b("l"):
                return False
            self.slice_del()
        return True

    def exception2(self) -> bool:
        self.ket = self.cursor
        if self.find_among_b(_A9) == 0:
            return False
        self.bra = self.cursor
        return not self.cursor > self.lb

    def exception1(self) -> bool:
        self.bra = self.cursor
        among = self.find_among(_A10)
        if among == 0:
            return False
        self.ket = self.cursor
        if self.cursor < self.limit:
            return False
        if among in _EXCEPTION1:
            self.slice_from(_EXCEPTION1[among])
        return True

    def postlude(self) -> None:
        if not self.y_found:
            return
        while True:  # repeat: goto [Y] <- 'y'
            v1 = self.cursor
            found = False
            while True:
                v2 = self.cursor
                self.bra = self.cursor
                if self.eq_s("Y"):
                    self.ket = self.cursor
                    self.cursor = v2
                    found = True
                    break
                self.cursor = v2
                if self.cursor >= self.limit:
                    break
                self.cursor += 1
            if not found:
                self.cursor = v1
                return
            self.slice_from("y")


_STEMMER = _EnglishStemmer()
_STEM_LOCK = threading.Lock()


def stem(word: str) -> str:
    """The jar's English stem of ``word`` (given as UTF-16 code units: :func:`.meteor_normalize.as_utf16`)."""
    with _STEM_LOCK:
        return _STEMMER.stem(word)


def paraphrase_index():
    """The paraphrase table as word ids (:func:`.paraphrase.table_index`; built in memory where
    the toolkit's cache cannot keep it)."""
    from . import paraphrase

    with _LOCK:
        if not _INDEX:
            index = paraphrase.table_index()
            _INDEX.append(index if index is not None else paraphrase.build_index(paraphrase.table_path()))
        return _INDEX[0]


_INDEX: list = []

"""Multiple-choice questions about a pair (VLM-SubtleBench's form), written once: an item's
lettered choices in a fixed order, the question as a vision-language model is asked it, and how
a letter is read from its answer. ``idc-eval --model vlm`` asks with :func:`prompt`, the scorer
(``MC_accuracy``) reads answers with :func:`read_answer`; both record :data:`CHOICE_ORDER` (and
the runner :data:`PROMPT`, the scorer :data:`PARSE_RULE`) in their run's fingerprint.

A dataset asks a question where it has the columns :data:`COLUMNS`: ``question`` (a string),
``answer`` (the correct choice's text) and ``distractors`` (the wrong choices' texts), as
``vlm_subtlebench`` builds them. The release stores no letter (its authors shuffle the choices
with Python's global ``random.shuffle`` as they read each item); here the order is a function of
the item alone (:data:`CHOICE_ORDER_RULE`), the same in every process and on every machine.

Reading an answer (:data:`PARSE_STEPS`, docs/scoring.md "Multiple-choice questions") follows
the authors' ``ResponseParser`` where it is unambiguous (their ``### Answer`` heading, a line or
a word that is a capital letter) and, where theirs takes the last of several letters, gives
none: an answer naming two different letters, or matching two choices, is **unparsed**, and
so is one naming none. An unparsed answer is not correct: accuracy is correct answers over
items asked, as the authors' (``correct_count / evaluated_count``), and the unparsed count is
reported beside it.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

#: the dataset columns of a multiple-choice item
QUESTION, ANSWER, DISTRACTORS = "question", "answer", "distractors"
COLUMNS = (QUESTION, ANSWER, DISTRACTORS)
LETTERS = string.ascii_uppercase

#: the version of the choice order (in the fingerprints of the runs that ask and score)
CHOICE_ORDER = "mc-order-1"
CHOICE_ORDER_RULE = ("the choices are [answer] + distractors, a text repeating an earlier choice's left out; ordered by "
                     "the SHA-256 of the UTF-8 bytes of pair_id, a NUL byte and the choice's text, ascending; lettered "
                     "A, B, C, ... in that order")
#: the version of the answer-reading rule (in the scorer's fingerprint)
PARSE_RULE = "mc-parse-1"
PARSE_STEPS = (  # markdown: the docs print them (docs/tables.py)
    "the text after the last `</think>` (none where a `<think>` never closes); markdown emphasis (asterisks, "
    "underscores around words, backticks) and heading marks (`#`) removed",
    "where an answer label occurs (`Answer:`, `The answer is`, a line ending in `Answer` such as `### Answer`), only "
    "the text after the last one is read (the whole text where nothing follows it)",
    "a letter alone, any case, in brackets or with punctuation (`B`, `(B)`, `B.`, `b)`, `**B**`): that letter",
    "the text of one choice alone (case-insensitive; punctuation and runs of spaces as one space; a leading `the`, "
    "`a` or `an` ignored): that choice; the text of two choices: unparsed",
    "lines that each hold a letter alone (as in step 3), all the same letter: that letter; two different: unparsed",
    "otherwise the letters the text names: a letter in brackets (`(B)`, `[b]`), a letter with `.`, `)` or `:` at the "
    "start of a line (`B. the red cube`, `b) ...`), and a capital letter standing as a word (`I choose B`), except "
    "the pronoun `I` and a sentence's first word `A` followed by a lower-case word other than or, and, is, was, "
    "seems, looks, would, should, because, since, but, nor, vs, versus, then, fits, matches, describes (the article); "
    "letters beyond the item's choices are not letters of it. One letter: that letter, unless a line reads "
    "`X. <text>` and `<text>` is another choice's text (unparsed); two or more different letters: unparsed; none: "
    "unparsed",
)
#: the question as a model is asked it (one user turn after the pair's images); ``{options}`` is
#: one ``A. text`` line per choice
PROMPT = ("Question: {question}\n\n"
          "Carefully examine the images and choose the best description of the key visual difference. Unless an "
          "option says otherwise, the difference is described in terms of the second image relative to the first.\n\n"
          "Options:\n{options}\n\n"
          "Answer with the letter of one option only.")
#: put before :data:`PROMPT` where the model is shown the pair composed into one image
ONE_IMAGE_NOTE = ("The two images are shown composed into one picture: below, 'the first image' is the before image "
                  "and 'the second image' the after image.\n\n")


@dataclass(frozen=True)
class Item:
    """One question with its choices in the fixed order and the correct one's letter."""

    pair_id: str
    question: str
    choices: tuple[str, ...]
    correct: str

    @property
    def letters(self) -> str:
        return LETTERS[:len(self.choices)]

    def options(self) -> str:
        """``A. text`` lines, one per choice."""
        return "\n".join(f"{letter}. {text}" for letter, text in zip(self.letters, self.choices))


def _key(pair_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{pair_id}\0{text}".encode("utf-8")).digest()


def ordered_choices(pair_id: str, answer: str, distractors: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """The item's choices in the fixed order (:data:`CHOICE_ORDER_RULE`) and the correct letter."""
    texts = list(dict.fromkeys([answer, *distractors]))
    if len(texts) > len(LETTERS):
        raise ValueError(f"{len(texts)} choices: at most {len(LETTERS)} can be lettered")
    order = sorted(texts, key=lambda t: _key(str(pair_id), t))
    return tuple(order), LETTERS[order.index(answer)]


def asks(question: Any) -> bool:
    """Whether a ``question`` cell asks a question (a string with a non-space character)."""
    return isinstance(question, str) and bool(question.strip())


def item(pair_id: str, question: Any, answer: Any, distractors: Any) -> Optional[Item]:
    """The item of one row's cells; ``None`` where it asks no question (:func:`asks`); ValueError
    where it asks one whose answer or distractors are not what the columns hold."""
    if not asks(question):
        return None
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError(f"pair {pair_id!r} asks a question, but its {ANSWER!r} is {answer!r}, not a choice's text")
    if not isinstance(distractors, (list, tuple)) or not all(isinstance(d, str) for d in distractors):
        raise ValueError(f"pair {pair_id!r}: {DISTRACTORS!r} must be a list of strings, found {distractors!r}")
    choices, correct = ordered_choices(str(pair_id), answer, distractors)
    return Item(str(pair_id), question, choices, correct)


def item_of_row(row: Mapping[str, Any]) -> Optional[Item]:
    """:func:`item` of a dataset row (``pair_id`` and :data:`COLUMNS`)."""
    return item(str(row["pair_id"]), row.get(QUESTION), row.get(ANSWER), row.get(DISTRACTORS))


def prompt(it: Item, one_image: bool = False) -> str:
    """What the model is asked about the item (:data:`PROMPT`; ``one_image``: the pair is shown composed)."""
    return (ONE_IMAGE_NOTE if one_image else "") + PROMPT.format(question=it.question.strip(), options=it.options())


# ---- reading an answer (PARSE_STEPS) ----

_EMPHASIS = re.compile(r"[*`]+|(?<![^\W_])_+|_+(?![^\W_])")
_HEADING = re.compile(r"(?m)^[ \t]{0,3}#+[ \t]*")
_LABEL = re.compile(r"(?i)\banswer\b(?:[ \t]*[:：]|[ \t]+is\b|[ \t]*(?=\n|$))")
_EDGES = string.punctuation + " \t\r\n\u00a0“”‘’«»"
_BRACKETED = re.compile(r"[(\[]\s*([A-Za-z])\s*[)\]]")
_LINE_START = re.compile(r"(?m)^[ \t]*([A-Za-z])[.):](?=\s|$)(.*)$")
_WORD = re.compile(r"(?<![\w'’-])([A-Z])(?![\w'’-])")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n])\s*$")
_LOWER_WORD = re.compile(r"\s+([a-z]+)")
#: words after a sentence's first "A" that make it a letter, not the article ("A or B", "A is right")
_NOT_ARTICLE = frozenset({"or", "and", "is", "was", "seems", "looks", "would", "should", "because", "since", "but", "nor",
                          "vs", "versus", "then", "fits", "matches", "describes"})


def normalised(text: str) -> str:
    """Case-folded, every run of non-alphanumeric characters one space, a leading article dropped."""
    words = re.sub(r"[\W_]+", " ", text.casefold()).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def _visible(text: str) -> str:
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif "<think>" in text:
        return ""
    return _EMPHASIS.sub("", _HEADING.sub("", text))


def _after_label(text: str) -> str:
    last = None
    for last in _LABEL.finditer(text):
        pass
    if last is not None and text[last.end():].strip(_EDGES):
        return text[last.end():]
    return text


@dataclass(frozen=True)
class Reading:
    """What an answer says: the letter read (``None``: unparsed) and, where unparsed, why."""

    letter: Optional[str]
    why: str = ""


def _alone(text: str, letters: str) -> Optional[str]:
    """The letter ``text`` is, alone with brackets or punctuation around it, any case; else ``None``."""
    bare = text.strip(_EDGES)
    return bare.upper() if len(bare) == 1 and bare.upper() in letters else None


def _named_letters(text: str, letters: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The letters ``text`` names (in order, with repeats) and its ``X. rest`` line starts."""
    found: list[tuple[int, str]] = [(m.start(), m.group(1).upper()) for m in _BRACKETED.finditer(text)]
    starts = [(m.group(1).upper(), m.group(2)) for m in _LINE_START.finditer(text)]
    found += [(m.start(), m.group(1).upper()) for m in _LINE_START.finditer(text)]
    for m in _WORD.finditer(text):
        letter, before, after = m.group(1), text[:m.start()], text[m.end():]
        if letter == "I":
            continue
        following = _LOWER_WORD.match(after)
        if letter == "A" and _SENTENCE_START.search(before) and following and following.group(1) not in _NOT_ARTICLE:
            continue
        found.append((m.start(), letter))
    return [letter for _, letter in sorted(found) if letter in letters], [s for s in starts if s[0] in letters]


def read_answer(answer: Any, it: Item) -> Reading:
    """The letter an answer gives for the item (:data:`PARSE_STEPS`), or why none is read."""
    if not isinstance(answer, str) or not answer.strip():
        return Reading(None, "empty answer")
    visible = _visible(answer)
    if not visible.strip():
        return Reading(None, "no answer after the reasoning")
    text = _after_label(visible).strip()
    letters = it.letters
    alone = _alone(text, letters)
    if alone:
        return Reading(alone)
    target = normalised(text)
    matches = [letters[k] for k, c in enumerate(it.choices) if target and normalised(c) == target]
    if len(matches) == 1:
        return Reading(matches[0])
    if len(matches) > 1:
        return Reading(None, f"the text of {len(matches)} choices ({', '.join(matches)})")
    lines = list(dict.fromkeys(filter(None, (_alone(line, letters) for line in text.splitlines()))))
    if len(lines) == 1:
        return Reading(lines[0])
    if len(lines) > 1:
        return Reading(None, f"lines with {len(lines)} different letters alone ({', '.join(lines)})")
    named, starts = _named_letters(text, letters)
    distinct = list(dict.fromkeys(named))
    if len(distinct) > 1:
        return Reading(None, f"{len(distinct)} different letters ({', '.join(distinct)})")
    if not distinct:
        return Reading(None, "no letter and no choice's text")
    letter = distinct[0]
    for start, rest in starts:
        said = normalised(rest)
        other = [letters[k] for k, c in enumerate(it.choices) if said and normalised(c) == said]
        if other and letter not in other:
            return Reading(None, f"letter {letter} with the text of choice {other[0]}")
    return Reading(letter)


def fingerprint_fields(with_prompt: bool = False) -> dict[str, str]:
    """What a run that asks or scores questions records of this module (its fingerprint's part)."""
    fields = {"choice_order": CHOICE_ORDER}
    if with_prompt:
        fields["prompt"] = PROMPT
        fields["one_image_note"] = ONE_IMAGE_NOTE
    else:
        fields["parse_rule"] = PARSE_RULE
    return fields

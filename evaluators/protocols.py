"""Evaluation protocols: the procedures the field's tables come from (``--protocol``).

* ``rcc`` (default) — RobustChangeCaptioning's ``evaluate.py`` and its family (SCORER, DIRL):
  every group its own coco-caption evaluation. RCC-family ids are taken as they are:
  ``000123.png`` / ``000123.png_n`` in predictions, coco reference files and category maps
  are the same pairs as the toolkit's ``000123`` / ``000123_n``; with RCC's own
  ``type_mapping.json`` (no distractor key) the ``_n`` pairs form ``distractor`` and
  ``change_only`` is formed, as ``evaluate.py``'s separate nsc run and sc-by-type runs do.
* ``blip2idc`` — BLIP2IDC's ``eval_utils.py``: a no-change pair whose prediction is one of its
  8 no-change phrases gets a random reference of that pair as its prediction before scoring
  (seeded here), and ``--drop-last-batch N`` reproduces its test loaders' ``drop_last=True``.
  This inflates no-change and total scores, so the output says it is not comparable with
  ``rcc`` numbers.
* ``rsicc`` — RSICC's ``eval.py`` (LEVIR-CC papers), with their S*m column: no PTB tokenizer; every caption becomes
  its lower-cased words mapped one-to-one to vocabulary ids, and BLEU / METEOR / ROUGE-L /
  CIDEr score those id strings (BLEU, ROUGE-L and CIDEr are unchanged by the mapping; METEOR is
  not: no stems, synonyms, paraphrases or function words — 0.1303 against 0.1091 on the DDLA
  Spot-the-Diff set). Groups ``change`` / ``no_change`` are decided by each pair's *second*
  reference being one of RSICC's 5 no-change sentences, and the change / no-change
  classification accuracy of the predictions is reported. RSICC's CIDEr patch for a group of
  a single pair (``ref_len = 1``) is not reproduced; a note says so when such a group occurs.

A protocol is one small class with a name, a description and hooks; the registry is the dict
:data:`PROTOCOLS`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, TypeVar

from idc_toolkit.errors import EvaluationError
from idc_toolkit.registry import Registry
from idc_toolkit.schema import NO_CHANGE_CATEGORIES

V = TypeVar("V")
_RCC_ID = re.compile(r"(\d+)\.png(_n)?")

#: BLIP2IDC ``eval_utils.py``: the generated texts it treats as "no change"
BLIP2IDC_NO_CHANGE = (
    "no change was made", "there is no change", "the two scenes seem identical", "the scene is the same as before",
    "the scene remains the same", "nothing has changed", "nothing was modified", "no change has occurred",
)


def rcc_id(key: str) -> str:
    """``000123.png`` -> ``000123`` and ``000123.png_n`` -> ``000123_n``; other ids unchanged."""
    m = _RCC_ID.fullmatch(key)
    return m.group(1) + (m.group(2) or "") if m else key


def normalise_ids(mapping: dict[str, V], where: str) -> dict[str, V]:
    """``mapping`` with RCC-family ids normalised; two spellings of one pair are an error. A mapping
    whose ids are all normalised already is returned itself, not copied."""
    if all(rcc_id(key) == key for key in mapping):
        return mapping
    out: dict[str, V] = {}
    spelled: dict[str, str] = {}
    for key, value in mapping.items():
        new = rcc_id(key)
        if new in out:
            raise EvaluationError(f"{where}: {spelled[new]!r} and {key!r} name the same pair; keep one")
        out[new], spelled[new] = value, key
    return out


def _is_no_change_text(text: str) -> bool:
    return text.strip().lower().rstrip(" .") in BLIP2IDC_NO_CHANGE


#: what a protocol's numbers are not, when they are not rcc's
_COMPARABLE = "comparable with rcc-protocol numbers"


@dataclass(frozen=True)
class Comparability:
    """The caveat of numbers scored under a protocol that is not comparable with rcc's, built
    here alone in each phrasing the outputs use; empty where the protocol is comparable."""

    protocol: str = "rcc"
    comparable: bool = True

    @classmethod
    def of(cls, protocol: dict[str, Any]) -> "Comparability":
        """From ``metrics.json``'s ``meta.protocol``."""
        return cls(protocol["name"], protocol["comparable_with_rcc"])

    @property
    def heading(self) -> str:
        """``metrics.md``'s first line, and idc-eval's."""
        return f"Protocol: {self.protocol}" + ("" if self.comparable else f" (NOT {_COMPARABLE})")

    @property
    def sentence(self) -> str:
        """A table caption's."""
        return "" if self.comparable else f"Protocol {self.protocol}: NOT {_COMPARABLE}."

    @property
    def note(self) -> str:
        """A leaderboard row's caveat."""
        return "" if self.comparable else f"protocol {self.protocol}: not {_COMPARABLE}"

    def row(self, name: str) -> str:
        """A table row's label."""
        return name if self.comparable else f"{name} ({self.protocol} protocol, not comparable with rcc)"


@dataclass
class Protocol:
    name: str = "rcc"
    description: str = "RobustChangeCaptioning evaluate.py: every group its own coco-caption evaluation"
    comparable_with_rcc: bool = True
    notes: list[str] = field(default_factory=list)
    #: why this protocol does not fit these references (``--strict`` refuses them), if it does not
    misfit: Optional[str] = None
    #: what this protocol's own grouping replaces, when it forms its groups itself (--groups etc. are refused)
    own_groups: ClassVar[Optional[str]] = None
    #: columns its papers derive from the metrics: name -> the columns it averages
    derived: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: True: it reproduces a loader that drops the last partial batch (``--drop-last-batch``)
    takes_drop_last_batch: ClassVar[bool] = False

    def references(self, refs: Any) -> Any:
        """RCC ids as the toolkit's; ``_n`` pairs without a category form ``distractor``."""
        refs.captions = normalise_ids(refs.captions, refs.source)
        refs.categories = normalise_ids(refs.categories, refs.source)
        refs.memberships = normalise_ids(refs.memberships, refs.source)
        has_no_change = any(c in NO_CHANGE_CATEGORIES for c in refs.categories.values())
        if refs.categories and not has_no_change and any(c is not None for c in refs.categories.values()):
            orphans = [pid for pid, c in refs.categories.items() if c is None and pid.endswith("_n")]
            for pid in orphans:
                refs.categories[pid] = "distractor"
            if orphans:
                self.notes.append(f"{len(orphans)} '_n' pair(s) without a category form 'distractor' "
                                  "(RCC's type_mapping.json has no distractor key; evaluate.py scores them as its nsc run)")
                refs.category_order = [*refs.category_order, "distractor"]
        return refs

    def predictions(self, predictions: dict[str, str], where: str) -> dict[str, str]:
        return normalise_ids(predictions, where)

    def prepare(self, hypotheses: dict[str, str], references: dict[str, list[str]],
                categories: dict[str, Optional[str]], seed: int) -> dict[str, str]:
        """The hypotheses actually scored (the rcc protocol scores them as they are)."""
        return hypotheses

    def kept_ids(self, ids: list[str]) -> list[str]:
        return ids

    #: caption tokenizer for the metrics (``None``: coco-caption's PTB tokenizer)
    tokenize = None

    def summary(self, hypotheses: dict[str, str], categories: dict[str, Optional[str]]) -> dict[str, Any]:
        """Protocol-specific results for ``metrics.json`` (none for rcc)."""
        return {}

    @property
    def comparability(self) -> Comparability:
        return Comparability(self.name, self.comparable_with_rcc)

    def misfit_check(self, strict: bool) -> None:
        """``--strict`` refuses a protocol applied to data it was not written for."""
        if strict and self.misfit:
            raise EvaluationError(f"{self.misfit}; refused under --strict")


@dataclass
class Blip2IdcProtocol(Protocol):
    name: str = "blip2idc"
    description: str = ("BLIP2IDC eval_utils.py: a no-change phrase predicted for a no-change pair is replaced by a "
                        "random reference of that pair; drop_last test loaders")
    comparable_with_rcc: bool = False
    drop_last_batch: int = 0
    takes_drop_last_batch: ClassVar[bool] = True

    def prepare(self, hypotheses, references, categories, seed):
        """BLIP2IDC's replacement: where a pair's references hold a no-change phrase and the
        prediction is one of its 8 no-change phrases, score a random reference instead."""
        rng = random.Random(seed)
        out, replaced = dict(hypotheses), 0
        for pid, hyp in hypotheses.items():
            refs = references[pid]
            if _is_no_change_text(hyp) and any(_is_no_change_text(r) for r in refs):
                out[pid] = rng.choice(refs)
                replaced += 1
        self.notes.append(f"{replaced} no-change prediction(s) replaced by a random reference of their pair "
                          f"(BLIP2IDC's eval_utils.py); NOT {_COMPARABLE}")
        return out

    def kept_ids(self, ids):
        """The pairs a ``drop_last=True`` loader of batch size N sees: the last partial batch is gone."""
        n = self.drop_last_batch
        if n <= 0 or len(ids) % n == 0:
            return ids
        kept = ids[: len(ids) - len(ids) % n]
        self.notes.append(f"--drop-last-batch {n}: the last {len(ids) - len(kept)} pair(s) are not scored, as BLIP2IDC's "
                          "drop_last=True test loaders skip them")
        return kept


#: RSICC ``eval.py``: a pair is "no change" when its 2nd reference is one of these
RSICC_NO_CHANGE = ("the scene is the same as before", "there is no difference", "the two scenes seem identical",
                   "no change has occurred", "almost nothing has changed")


def words(text: str) -> list[str]:
    """RSICC's captions are lower-cased word lists (no PTB tokenizer): letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


def vocabulary_ids(texts: list[str]) -> list[str]:
    """Each caption as the string of its words' vocabulary ids (ids given in order of first
    appearance: any one-to-one mapping scores the same)."""
    vocab: dict[str, int] = {}
    return [" ".join(str(vocab.setdefault(w, len(vocab) + 1)) for w in words(t)) for t in texts]


@dataclass
class RsiccProtocol(Protocol):
    name: str = "rsicc"
    description: str = ("RSICC eval.py: captions as vocabulary-id strings (no PTB tokenizer); change / no_change "
                        "groups from each pair's 2nd reference; change / no-change classification accuracy")
    comparable_with_rcc: bool = False
    own_groups: ClassVar[Optional[str]] = "change / no_change groups from each pair's 2nd reference"
    derived: ClassVar[dict[str, tuple[str, ...]]] = {"S*m": ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr")}
    #: why S*m is read with care (said wherever it is computed)
    S_M_NOTE: ClassVar[str] = ("S*m is the mean of BLEU-4, METEOR, ROUGE-L and CIDEr as the remote-sensing papers "
                               "report it; CIDEr's scale (up to 10) is not the others' (up to 1), so CIDEr dominates it: "
                               "compare S*m only with S*m; it has no bootstrap interval")

    @staticmethod
    def tokenize(texts: list[str]) -> list[str]:
        return vocabulary_ids(texts)

    def references(self, refs: Any) -> Any:
        refs = super().references(refs)
        own = sorted({c for c in refs.categories.values() if c is not None} - {"change", "no_change"})
        refs.categories = {pid: ("no_change" if " ".join(words(caps[1] if len(caps) > 1 else caps[0])) in RSICC_NO_CHANGE
                                 else "change") if caps else None for pid, caps in refs.captions.items()}
        refs.memberships, refs.category_order = {}, ["change", "no_change"]
        if own:
            counts = {n: sum(c == n for c in refs.categories.values()) for n in ("change", "no_change")}
            self.misfit = (f"--protocol rsicc was written for LEVIR-CC: it regrouped these pairs by their 2nd reference "
                           f"(change {counts['change']} / no_change {counts['no_change']}) and ignored their own "
                           f"categories ({', '.join(own[:6])})")
            self.notes.append(self.misfit)
        self.notes.append(self.S_M_NOTE)
        for name in ("change", "no_change"):
            if sum(c == name for c in refs.categories.values()) == 1:
                self.notes.append(f"group {name!r} has a single pair: RSICC's CIDEr patch (ref_len = 1) is not "
                                  "reproduced, its CIDEr is coco-caption's")
        return refs

    def summary(self, hypotheses, categories):
        """Change / no-change classification accuracy: a prediction says "no change" when its
        words are one of RSICC's 5 no-change sentences."""
        said = {pid: " ".join(words(h)) in RSICC_NO_CHANGE for pid, h in hypotheses.items()}
        out = {}
        for name, ids in (("change", [p for p in hypotheses if categories.get(p) == "change"]),
                          ("no_change", [p for p in hypotheses if categories.get(p) == "no_change"]),
                          ("overall", list(hypotheses))):
            right = [said[p] == (categories.get(p) == "no_change") for p in ids]
            out[name] = sum(right) / len(right) if right else None
        return {"classification_accuracy": out}


#: ``--protocol`` name -> class; a new protocol is one class and one line
PROTOCOLS = Registry("protocol", {
    "rcc": "idc_toolkit.evaluators.protocols:Protocol",
    "blip2idc": "idc_toolkit.evaluators.protocols:Blip2IdcProtocol",
    "rsicc": "idc_toolkit.evaluators.protocols:RsiccProtocol",
}, base_cls=Protocol)


def get_protocol(name: str, drop_last_batch: int = 0) -> Protocol:
    cls = PROTOCOLS.get(name)
    if drop_last_batch and not cls.takes_drop_last_batch:
        takers = [n for n in PROTOCOLS if PROTOCOLS.get(n).takes_drop_last_batch]
        raise EvaluationError(f"--drop-last-batch reproduces a released loader; it needs --protocol {' or '.join(takers)}")
    return cls(drop_last_batch=drop_last_batch) if cls.takes_drop_last_batch else cls()


def protocol_help() -> str:
    """``--protocol``'s help: each protocol's one-line description, from its class."""
    return "; ".join(f"{n}: {PROTOCOLS.describe(n)}" + ("" if PROTOCOLS.get(n).comparable_with_rcc else " (not comparable)")
                     for n in PROTOCOLS)

"""What every training recipe shares: its defaults, per-dataset defaults, labels, the caption loss.

A model module (``idc_toolkit/models/<name>.py``) holds its runner and its recipe side by side,
sharing one preprocessing and one decoding, so training, validation and ``idc-eval --model``
see the same inputs and the same captions. A recipe declares its own options
(:attr:`Recipe.Options`, a dataclass, as a runner does), its base model class, its LoRA layout, how
a batch of rows becomes model input and any loss beyond the caption cross-entropy. The
generic loop (:mod:`idc_toolkit.training.train`) knows no model by name.

Labels never depend on the tokenizer's padding side: :func:`pack` lays each row out as
``prefix`` (image slots, BOS, prompt: never trained) + ``target`` (caption, EOS) and pads on
the right itself, so a Llama tokenizer that pads left (Vicuna, unless told) and an OPT one
that pads right give the same batch.
"""

from __future__ import annotations

import argparse
import functools
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Optional, Union

from ..facts import DatasetFacts
from .base import NoOptions, make_options

if TYPE_CHECKING:
    from ..training.args import TrainRun

IGNORE = -100


@dataclass(frozen=True)
class DatasetDefaults:
    """A recipe's defaults for one dataset, and where each comes from (docs/training.md, its table)."""

    lora_rank: int
    lr: float
    source: str


@dataclass(frozen=True)
class RecipeDefaults:
    """What a run takes from its recipe, variant and dataset that no ``idc-train`` option sets:
    recorded beside the arguments (``train_config.json``, the fingerprint)."""

    lr_schedule: str
    weight_decay: float
    max_grad_norm: float
    lora_alpha: int
    max_caption_tokens: int
    #: the runner's decoding length (validation captions as ``idc-eval --model`` does)
    max_new_tokens: int
    select_by: str  #: ``CIDEr`` (validation captions, our scorer) or ``loss`` (validation loss)
    patience: int  #: epochs without improvement before stopping (0: never)
    defaults_source: str


@functools.lru_cache(maxsize=65536)
def consensus_reference(refs: tuple[str, ...]) -> str:
    """The reference with the highest mean ROUGE-L (coco-caption's, on lower-case words) against
    the pair's other references, the first on a tie: the consensus caption of Devlin et al. (2015).
    CIDEr rewards what the references share, and a model trained on a random reference each epoch
    learns no preference among a pair's paraphrases; one fixed central target gives it one."""
    import re

    from pycocoevalcap.rouge.rouge import Rouge

    if len(refs) < 2:
        return refs[0]
    words = [" ".join(re.findall(r"[a-z0-9]+", r.lower())) for r in refs]
    rouge = Rouge()
    means = [sum(rouge.calc_score([w], [o]) for j, o in enumerate(words) if j != i) / (len(refs) - 1)
             for i, w in enumerate(words)]
    return refs[max(range(len(refs)), key=lambda i: (means[i], -i))]


@dataclass(frozen=True)
class VariantDefaults:
    """What a recipe variant sets besides the per-dataset rank and lr."""

    epochs: float
    batch_size: int
    lr_schedule: str = "linear"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    select_by: str = "CIDEr"
    patience: int = 0
    max_caption_tokens: int = 30
    description: str = ""


class Recipe:
    name: ClassVar[str]
    #: transformers ``model_type`` the base model must have
    model_type: ClassVar[str]
    #: the transformers class the base loads as (``idc-train --dry-run`` builds it on ``meta``)
    model_class: ClassVar[str]
    base_model: ClassVar[str]
    revision: ClassVar[Optional[str]] = None
    #: dataset columns the recipe needs (the error says which pass makes them)
    required: ClassVar[dict[str, str]] = {"captions": "idc-build"}
    #: variant name -> its settings; the first is the default
    variants: ClassVar[dict[str, VariantDefaults]]
    #: builder name -> defaults (``None``: any other dataset)
    dataset_defaults: ClassVar[dict[Optional[str], DatasetDefaults]]
    #: the decoding that validation and ``idc-eval --model`` share: the runner's default (``RUNNER.Options``)
    max_new_tokens: ClassVar[int]
    #: BibTeX of the method, for the adapter's model card
    citation: ClassVar[str] = ""
    #: images the vision encoder reads per pair (BLIP2IDC: one stacked image; DAVIR: both)
    images_per_pair: ClassVar[int] = 1
    #: this recipe's own options (``idc-train --model NAME --help``), each recorded as its ``record`` says
    Options: ClassVar[type] = NoOptions

    # -- options and defaults --------------------------------------------------------------
    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """Add this recipe's own options (the fields of :attr:`Options`) to ``group``."""
        from ..options import add_options, cli_fields

        add_options(group, cls.Options, cli_fields(cls.Options), f"{cls.name}: ")

    @classmethod
    def make_options(cls, options: Union[None, Mapping[str, Any], Any] = None, **given: Any) -> Any:
        """This recipe's :attr:`Options` from an object, a dict of its fields or keywords; an unknown name is refused."""
        from dataclasses import fields

        from ..errors import IDCError

        names = set(options if isinstance(options, Mapping) else ()) | set(given)
        known = [f.name for f in fields(cls.Options)]
        unknown = sorted(names - set(known))
        if unknown:
            raise IDCError(f"{cls.name} has no option(s) {', '.join(unknown)}; its own: {', '.join(known) or 'none'}")
        return make_options(cls.Options, options, **given)

    @classmethod
    def defaults_for(cls, facts: DatasetFacts) -> DatasetDefaults:
        return cls.dataset_defaults.get(facts.builder, cls.dataset_defaults[None])

    @classmethod
    def check_dataset(cls, facts: DatasetFacts, columns: list[str], options: Any, where: str) -> None:
        """Refuse, before any model is loaded, a dataset this recipe cannot train on (as
        :meth:`~idc_toolkit.models.base.Runner.check_dataset`; ``options``: this recipe's :attr:`Options`)."""

    # -- the run ---------------------------------------------------------------------------
    def __init__(self, run: "TrainRun", facts: DatasetFacts):
        """``run``: the resolved run (its arguments and this recipe's defaults); ``facts``: the dataset's."""
        self.run, self.facts = run, facts
        self.options = self.make_options(run.options)

    def load(self, dtype):
        raise NotImplementedError

    def prepare(self, model) -> None:
        """What the recipe changes on a loaded base before LoRA wraps it (hooks, replaced forwards);
        ``--dry-run`` measures its slices of the model with the same changes."""

    def typical_prompt(self) -> str:
        """The text prompt of a typical training pair (``--dry-run`` counts its tokens); none by default."""
        return ""

    def lora_config(self, model):
        raise NotImplementedError

    def reference(self, captions: list[str], pair_index: int, epoch: int) -> str:
        """One reference per pair per epoch (``run.train_reference``): ``random``, drawn
        anew each epoch (seeded by seed, epoch and pair, so a resumed run draws the same);
        ``shortest`` (IER, as BLIP2IDC's code does); ``consensus``, the one closest to the pair's
        other references (:func:`consensus_reference`)."""
        refs = [c for c in captions if c.strip()] or [""]
        if self.run.train_reference == "shortest":
            return min(refs, key=len)
        if self.run.train_reference == "consensus":
            return consensus_reference(tuple(refs))
        return random.Random(f"{self.run.seed}/{epoch}/{pair_index}").choice(refs)

    def shuffle(self) -> bool:
        """Whether training batches are drawn in random order (the Trainer's default)."""
        return True

    def text_sequences(self, rows: list[dict[str, Any]]) -> list[tuple[list[int], list[int]]]:
        """``(prefix, target)`` token lists of the language side of each row (its ``__index`` and
        ``__epoch`` pick the reference): what :meth:`collate` packs."""
        raise NotImplementedError

    def text_lengths(self, rows: list[dict[str, Any]]) -> list[int]:
        """The language side's tokens of each row (no image is read): what ``--group-by-length`` groups by."""
        return [len(prefix) + len(target) for prefix, target in self.text_sequences(rows)]

    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def extra_loss(self, model, batch: dict[str, Any]):
        """Loss terms beyond the caption cross-entropy, as ``{name: mean over the batch}``."""
        return {}

    def generate(self, model, rows: list[dict[str, Any]]) -> list[str]:
        """Captions for validation: the runner's own decoding."""
        raise NotImplementedError

    def picture_every(self) -> int:
        """Every how many steps ``idc-train`` draws :meth:`attention_pictures` (0: never, the default)."""
        return 0

    def attention_pictures(self, model, rows: list[dict[str, Any]]) -> list:
        """Pictures of what the model attends to, one per row (``training.callbacks.AttentionPictures`` saves them)."""
        return []


def pack(sequences: list[tuple[list[int], list[int]]], pad_id: int):
    """``(input_ids, attention_mask, labels)`` of rows given as ``(prefix, target)`` token lists,
    padded on the right whatever the tokenizer's side: labels are the target tokens, -100
    on the prefix and the padding."""
    import torch

    width = max(len(p) + len(t) for p, t in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, IGNORE)
    for i, (prefix, target) in enumerate(sequences):
        n, m = len(prefix), len(target)
        ids[i, :n + m] = torch.tensor(prefix + target, dtype=torch.long)
        mask[i, :n + m] = 1
        labels[i, n:n + m] = torch.tensor(target, dtype=torch.long)
    return ids, mask, labels


def pad_id(tokenizer) -> int:
    """The id padding is written with: the tokenizer's pad token, else its UNK or EOS (Llama
    tokenizers ship none). Padded positions are masked, so the choice changes nothing."""
    for candidate in (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def caption_loss_sum(logits, labels):
    """``(sum of token cross-entropies, number of target tokens)``: next-token prediction,
    position t predicting label t + 1, -100 ignored. Summed so that gradient accumulation
    divides by the tokens of the whole optimizer step, not of each micro-batch."""
    total, count = caption_loss_terms(logits, labels)
    return total, int(count)


def caption_loss_terms(logits, labels):
    """:func:`caption_loss_sum` with the token count left a tensor on the logits' device: the
    training step reads nothing back from the device."""
    import torch.nn.functional as F

    logits = logits[:, -labels.shape[1]:, :]
    shift_logits = logits[:, :-1, :].float()
    shift_labels = labels[:, 1:].to(logits.device)
    total = F.cross_entropy(shift_logits.reshape(-1, shift_logits.shape[-1]), shift_labels.reshape(-1),
                            ignore_index=IGNORE, reduction="sum")
    return total, (shift_labels != IGNORE).sum()

"""BLIP2IDC (Evennou et al., WACV 2025): BLIP-2 OPT + LoRA on the stacked pair — runner and recipe.

Faithful to the paper's code: one image with the before image on top and the after image
below (:func:`~idc_toolkit.models.pairs.stacked_pair`; resize + blur for edit-style pairs,
as the dataset's ``pair_style`` fact says, or ``--pair-style``), the stock BLIP-2 processor, no
text prompt, greedy decoding with ``max_new_tokens=77``. The paper's base is
``Salesforce/blip2-opt-2.7b`` at revision ``51572668da0eb669e01a189dc22abe6088589a24``, whose
config predates ``image_token_index``: it is set on load (adding ``<image>`` if needed).
BLIP2IDC's evaluation replaced a no-change prediction by a reference before scoring; the runner
scores what the model wrote (``idc-eval --protocol blip2idc`` reproduces the replacement).

:class:`Blip2IDCInputs` is the one preprocessing and decoding: the runner captions with it,
the recipe trains and validates with it.

Recipe variants (``idc-train --variant``):

* ``ours`` (default): labels are the caption tokens + EOS (padding, image slots and BOS are
  -100), captions cut at 30 tokens with EOS kept, AdamW with weight decay 0, clipping at 1.0,
  linear decay, the best adapter by validation CIDEr, shuffled batches.
* ``released``: ``train_BLIP2IDC.py`` as released — labels are the input ids padded to 30
  with EOS as the pad token (padding is trained on, a truncated caption has no EOS), AdamW
  weight decay 0.01 (torch's default), no clipping, constant lr, the best checkpoint by
  validation loss with early stopping after 10 epochs without improvement (up to 100), the
  edit-pair blur sigma drawn anew on every call, shuffling and ``drop_last`` per dataset as
  its data loaders do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..cards import citations
from ..errors import IDCError
from ..checks import positive_int
from ..facts import DatasetFacts
from ..options import check_fields, option
from .recipe import DatasetDefaults, Recipe, VariantDefaults, pack, pad_id
from .adapters import apply_adapter
from ..devices import resolve_dtype
from .base import Runner, load_pretrained
from .pairs import stacked_pair

BASE_MODEL = "Salesforce/blip2-opt-2.7b"
BASE_REVISION = "51572668da0eb669e01a189dc22abe6088589a24"
MAX_NEW_TOKENS = 77


@dataclass
class TrainOptions:
    """BLIP2IDC's recipe options (``idc-train --model blip2idc``); the runner's :class:`Options` add to them."""

    pair_style: Optional[str] = option(None, "override the dataset card's pair style (edit pairs are resized and "
                                             "blurred; default: the card's)", choices=("scene", "edit"))

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class Options(TrainOptions):
    """BLIP2IDC's runner options (``idc-eval --model blip2idc``, ``idc-caption``)."""

    max_new_tokens: int = option(MAX_NEW_TOKENS, "greedy decoding length", check=positive_int)


def released_targets(n_qformer_layers: int) -> list[str]:
    """BLIP2IDC's released ``target_modules``: the Q-Former's cross-attention queries by layer name
    (the real Q-Former has one on every 2nd layer; peft skips the names that match nothing), every
    ``key``/``value``, the ViT's ``qkv`` and the OPT q/k/v projections."""
    return [f"qformer.encoder.layer.{i}.crossattention.attention.query" for i in range(n_qformer_layers)] + [
        "value", "key", "qkv", "q_proj", "k_proj", "v_proj"]


def check_pair_style(facts: DatasetFacts, override: Optional[str], where: str) -> None:
    """BLIP2IDC's preprocessing depends on the pair style: a dataset whose card does not say
    it is refused (runner and recipe alike) rather than guessed."""
    if not override and facts.pair_style not in ("scene", "edit"):
        raise IDCError(f"{where}: its card records no pair style (scene or edit), which decides BLIP2IDC's "
                       "resize + blur; pass --pair-style scene|edit")


class Blip2IDCInputs:
    """The stacked-pair input and greedy decoding, shared by the runner and the recipe."""

    def __init__(self, processor, resize_blur: bool, max_new_tokens: int, fresh_blur: bool = False):
        self.processor, self.resize_blur, self.max_new_tokens = processor, resize_blur, max_new_tokens
        self.fresh_blur = fresh_blur  #: the released training draws the blur sigma anew on every call

    def pixels(self, rows: list[dict[str, Any]]):
        images = [stacked_pair(r["before"], r["after"], self.resize_blur, None if self.fresh_blur else r["pair_id"])
                  for r in rows]
        return self.processor(images=images, return_tensors="pt")["pixel_values"]

    def decode(self, model, rows: list[dict[str, Any]]) -> list[str]:
        import torch

        with torch.no_grad():
            out = model.generate(pixel_values=self.pixels(rows).to(model.device, model.dtype),
                                 max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        return [t.strip() for t in self.processor.batch_decode(out, skip_special_tokens=True)]


class Blip2IDCRunner(Runner):
    name = "blip2idc"
    transformers_checkpoint = True
    summary = "BLIP2IDC (WACV 2025): BLIP-2 OPT + LoRA on the stacked pair"
    Options = Options

    @classmethod
    def check_dataset(cls, facts, columns, options, where) -> None:
        super().check_dataset(facts, columns, options, where)
        check_pair_style(facts, cls.make_options(options).pair_style, where)

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                 revision: Optional[str] = None, options: Optional[Options] = None, **given: Any):
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        o = self.make_options(options, **given)
        self.device = device
        self.dtype = resolve_dtype(dtype, device)
        model, processor = load_pretrained(Blip2ForConditionalGeneration, Blip2Processor, base_model, revision, self.dtype)
        if adapter:
            model = apply_adapter(model, adapter, base_model)
        self.model = model.to(device).eval()
        self.inputs = Blip2IDCInputs(processor, (o.pair_style or facts.pair_style) == "edit", o.max_new_tokens)

    @classmethod
    def description(cls, base_model, adapter, device, dtype, facts, revision=None, options: Optional[Options] = None,
                    **given: Any) -> dict[str, Any]:
        o = cls.make_options(options, **given)
        edit = (o.pair_style or facts.pair_style) == "edit"
        return {**super().description(base_model, adapter, device, dtype, facts, revision),
                "preprocess": "stacked pair" + (" + resize/blur" if edit else ""),
                "generation": f"greedy, max_new_tokens={o.max_new_tokens}, no prompt"}

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        return self.inputs.decode(self.model, rows)


#: where each per-dataset default comes from: the released adapters' adapter_config.json and
#: folder names (code_release/weights/ of gautierevn/BLIP2IDC)
_RELEASED = "released adapter code_release/weights/"


class Blip2IDCRecipe(Recipe):
    """BLIP2IDC (released ``train_BLIP2IDC.py``): BLIP-2 OPT, the stacked pair, no prompt, LoRA on
    the Q-Former cross-attention queries + ``key``/``value``, the ViT ``qkv`` and OPT's q/k/v,
    alpha = 2r, dropout 0.05, batch 16, captions cut at 30 tokens; rank and lr per dataset
    as the released adapters were trained."""

    name = "blip2idc"
    model_type = "blip-2"
    model_class = "Blip2ForConditionalGeneration"
    citation = citations.SYNED
    base_model = BASE_MODEL
    revision = BASE_REVISION
    Options = TrainOptions
    max_new_tokens = Blip2IDCRunner.Options.max_new_tokens  # validation decodes as idc-eval --model does
    variants = {
        "ours": VariantDefaults(epochs=10, batch_size=16, description="our corrected choices (docs/training.md)"),
        "released": VariantDefaults(epochs=100, batch_size=16, lr_schedule="constant", weight_decay=0.01,
                                    max_grad_norm=0.0, select_by="loss", patience=10,
                                    description="train_BLIP2IDC.py as released"),
    }
    dataset_defaults = {
        "clevr_change": DatasetDefaults(16, 1e-4, _RELEASED + "clevr_sota/clevr_change_loraRank16_1e-4 (r 16)"),
        "ier": DatasetDefaults(16, 1e-4, _RELEASED + "ier/ier_seed_1234 (r 16; lr: the script's default)"),
        "syned": DatasetDefaults(32, 4e-5, _RELEASED + "syned_sota/syned_full_lora_32_lr_4e-5 (r 32, lr 4e-5)"),
        "emu_edit": DatasetDefaults(8, 5e-5, _RELEASED + "syned+emu_sota/only_ours+emu_fixed_lr_5e-5 (r 8, lr 5e-5)"),
        "clevr_dc": DatasetDefaults(8, 5e-5, _RELEASED + "clevr_dc/training_clevr_DC_5e-5_8LoraRank (r 8, lr 5e-5)"),
        "spot_the_diff": DatasetDefaults(8, 1e-4, _RELEASED + "spot_sota/spot_1e-4_rank_8 (r 8, lr 1e-4)"),
        None: DatasetDefaults(8, 1e-4, "no released adapter: r 8 as most released adapters, lr 1e-4 (the script's default)"),
    }
    #: the released data loaders: shuffle per dataset (spot, IER and Syned pretraining were not shuffled)
    released_shuffle = {"spot_the_diff": False, "ier": False, "syned": False}

    @classmethod
    def check_dataset(cls, facts, columns, options, where) -> None:
        check_pair_style(facts, cls.make_options(options).pair_style, where)

    def shuffle(self) -> bool:
        return self.run.variant != "released" or self.released_shuffle.get(self.facts.builder, True)

    def load(self, dtype):
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        s = self.run
        model, processor = load_pretrained(Blip2ForConditionalGeneration, Blip2Processor, s.base_model, s.revision, dtype)
        processor.tokenizer.padding_side = "right"  # decoding of a batch without prompt pads nothing; labels are packed
        self.inputs = Blip2IDCInputs(processor, (self.options.pair_style or self.facts.pair_style) == "edit",
                                     s.max_new_tokens, fresh_blur=s.variant == "released")
        self.n_query = processor.num_query_tokens
        self.image_token = model.config.image_token_index
        return model

    def lora_config(self, model):
        from peft import LoraConfig

        targets = released_targets(model.config.qformer_config.num_hidden_layers)
        s = self.run
        return LoraConfig(r=s.lora_rank, lora_alpha=s.lora_alpha, lora_dropout=s.lora_dropout, bias="none",
                          target_modules=targets)

    def sequences(self, texts: list[str]) -> list[tuple[list[int], list[int]]]:
        """``(prefix, target)`` per caption: the query tokens' image slots and the tokenizer's
        own leading specials (OPT: ``</s>``) are the prefix."""
        tok = self.inputs.processor.tokenizer
        specials = tok("", add_special_tokens=True)["input_ids"]
        prefix = [self.image_token] * self.n_query + specials
        n = self.run.max_caption_tokens
        out = []
        for text in texts:
            words = tok(text, add_special_tokens=False)["input_ids"]
            if self.run.variant == "released":
                # tokenizer.encode(..., max_length=30, padding="max_length", truncation=True), pad = EOS
                ids = (specials + words)[:n]
                target = ids[len(specials):] + [tok.eos_token_id] * (n - len(ids))
            else:
                target = words[:n] + [tok.eos_token_id]
            out.append((prefix, target))
        return out

    def text_sequences(self, rows):
        return self.sequences([self.reference(r["captions"], r["__index"], r["__epoch"]) for r in rows])

    def collate(self, rows):
        ids, mask, labels = pack(self.text_sequences(rows), pad_id(self.inputs.processor.tokenizer))
        return {"pixel_values": self.inputs.pixels(rows), "input_ids": ids, "attention_mask": mask, "labels": labels}

    def generate(self, model, rows):
        return self.inputs.decode(model, rows)


RUNNER = Blip2IDCRunner
RECIPE = Blip2IDCRecipe

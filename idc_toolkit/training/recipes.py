"""Training recipes of ``idc-train``: what BLIP2IDC and DAVIR train, as their papers and code say.

A recipe knows its base model class, its LoRA layout, how a batch of pairs becomes model
input (the same preprocessing as the model's runner in :mod:`idc_toolkit.models`, so a trained
adapter is evaluated on what it was trained on), any loss beyond the caption cross-entropy,
and how to caption pairs for validation. Adding a model to ``idc-train`` is one recipe class
and one line in :data:`RECIPES`.

Where the released code has quirks, the recipe does the correct thing (README, "Training"):
BLIP2IDC's labels included padding tokens (here padding and image tokens are ``-100``) and it
cast the model with ``.half()`` (here mixed precision through ``TrainingArguments``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from ..errors import IDCError


@dataclass
class Settings:
    """Every resolved setting of a run (written to ``train_config.json``)."""

    model: str
    base_model: str
    revision: Optional[str]
    epochs: float
    batch_size: int
    grad_accum: int
    lr: float
    lora_rank: int
    lora_alpha: int
    lora_dropout: float
    max_caption_tokens: int
    fac_weight: float
    fac_reading: str
    max_steps: int
    seed: int
    dtype: str
    pair_style: Optional[str]
    num_entities: int
    split: str
    val_split: Optional[str]
    val_limit: int
    attention_every: int


class Recipe:
    name: ClassVar[str]
    #: transformers ``model_type`` the base model must have
    model_type: ClassVar[str]
    #: dataset columns the recipe needs (the error says which pass makes them)
    required: ClassVar[dict[str, str]] = {"captions": "idc-build"}
    defaults: ClassVar[dict[str, Any]] = {}

    @classmethod
    def resolve(cls, facts: dict[str, Any]) -> dict[str, Any]:
        """The recipe's defaults for a dataset (its card's facts): some depend on the dataset."""
        return dict(cls.defaults)

    def __init__(self, settings: Settings, facts: dict[str, Any]):
        self.settings, self.facts = settings, facts

    # -- model ----------------------------------------------------------------------------
    def load(self):
        raise NotImplementedError

    def lora_config(self, model):
        raise NotImplementedError

    # -- data -----------------------------------------------------------------------------
    def reference(self, captions: list[str], pair_index: int, epoch: int) -> str:
        """One reference per pair per epoch, drawn at random (seeded by seed, epoch and pair,
        so a resumed run draws the same); IER trains on the shortest (BLIP2IDC's code)."""
        refs = [c for c in captions if c.strip()] or [""]
        if self.facts.get("dataset") == "ier":
            return min(refs, key=len)
        return random.Random(f"{self.settings.seed}/{epoch}/{pair_index}").choice(refs)

    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def extra_loss(self, model, batch: dict[str, Any]):
        """Loss terms beyond the caption cross-entropy (none by default)."""
        return None

    def generate(self, model, rows: list[dict[str, Any]]) -> list[str]:
        raise NotImplementedError

    def _labels(self, input_ids, attention_mask, first_label):
        """Labels = input ids, with image tokens, prompt tokens (before ``first_label[i]``) and
        padding masked to -100 (the released BLIP2IDC code trained on its padding)."""
        labels = input_ids.clone()
        labels[attention_mask == 0] = -100
        for i, start in enumerate(first_label):
            labels[i, :start] = -100
        return labels


def _bos_offset(tokenizer) -> int:
    ids = tokenizer("a", add_special_tokens=True)["input_ids"]
    return len(ids) - len(tokenizer("a", add_special_tokens=False)["input_ids"])


class Blip2IDCRecipe(Recipe):
    """BLIP2IDC (released ``train_BLIP2IDC.py``): BLIP-2 OPT, the stacked pair, no prompt, LoRA on
    the Q-Former cross-attention queries + ``key``/``value``, the ViT ``qkv`` and OPT's
    q/k/v, r = 8 (16 for CLEVR-Change), alpha = 2r, dropout 0.05, AdamW lr 1e-4 (5e-5 for
    CLEVR-DC), batch 16, captions cut at 30 tokens."""

    name = "blip2idc"
    model_type = "blip-2"
    defaults = {"base_model": "Salesforce/blip2-opt-2.7b", "revision": "51572668da0eb669e01a189dc22abe6088589a24",
                "lr": 1e-4, "batch_size": 16, "epochs": 10, "lora_rank": 8, "max_caption_tokens": 30}

    @classmethod
    def resolve(cls, facts: dict[str, Any]) -> dict[str, Any]:
        out = dict(cls.defaults)
        if facts.get("dataset") == "clevr_change":
            out["lora_rank"] = 16
        if facts.get("dataset") == "clevr_dc":
            out["lr"] = 5e-5
        return out

    def load(self):
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        from ..models.base import load_pretrained, resolve_dtype

        s = self.settings
        model, self.processor = load_pretrained(Blip2ForConditionalGeneration, Blip2Processor, s.base_model, s.revision,
                                                resolve_dtype(s.dtype, "cpu"))
        self.resize_blur = (s.pair_style or self.facts.get("pair_style")) == "edit"
        return model

    def lora_config(self, model):
        from peft import LoraConfig

        n = model.config.qformer_config.num_hidden_layers
        targets = [f"qformer.encoder.layer.{i}.crossattention.attention.query" for i in range(n)] + [
            "value", "key", "qkv", "q_proj", "k_proj", "v_proj"]
        s = self.settings
        return LoraConfig(r=s.lora_rank, lora_alpha=s.lora_alpha, lora_dropout=s.lora_dropout, bias="none",
                          target_modules=targets)

    def _pixels(self, rows):
        from ..models.pairs import stacked_pair

        images = [stacked_pair(r["before"], r["after"], self.resize_blur, r["pair_id"]) for r in rows]
        return self.processor(images=images, return_tensors="pt")["pixel_values"]

    def collate(self, rows):
        import torch

        tok = self.processor.tokenizer
        n_query = self.processor.num_query_tokens
        image_token = tok.convert_tokens_to_ids("<image>")
        texts = [self.reference(r["captions"], r["__index"], r["__epoch"]) for r in rows]
        ids = [tok(t, add_special_tokens=True, truncation=True, max_length=self.settings.max_caption_tokens)["input_ids"]
               + [tok.eos_token_id] for t in texts]
        width = n_query + max(len(x) for x in ids)
        input_ids = torch.full((len(ids), width), tok.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(input_ids)
        for i, x in enumerate(ids):  # the processor's layout: the query tokens' <image> slots, then the text
            input_ids[i, :n_query] = image_token
            input_ids[i, n_query:n_query + len(x)] = torch.tensor(x)
            attention[i, :n_query + len(x)] = 1
        start = n_query + _bos_offset(tok)  # no prompt: the caption's first token is the first label
        return {"pixel_values": self._pixels(rows), "input_ids": input_ids, "attention_mask": attention,
                "labels": self._labels(input_ids, attention, [start] * len(ids))}

    def generate(self, model, rows):
        import torch

        with torch.no_grad():
            out = model.generate(pixel_values=self._pixels(rows).to(model.device, model.dtype), max_new_tokens=30,
                                 do_sample=False, num_beams=1)
        return [t.strip() for t in self.processor.batch_decode(out, skip_special_tokens=True)]


class DavirRecipe(Recipe):
    """DAVIR (§3, appendix): InstructBLIP, LoRA r = 4 on the ViT and Q-Former QKV and r = 8 on
    the LLM, 20 epochs, batch 16, lr 1e-5, the entity prompt (eq. 10), loss = caption
    cross-entropy + λ L_attn (eq. 12, λ = 0.1), L_attn = eq. 7 on the final-layer CLS-to-patch
    attention of each image against eq. 6's soft mask of the ``change_mask`` column."""

    name = "davir"
    model_type = "instructblip"
    required = {"captions": "idc-build", "entities": "idc-precompute entities", "change_mask": "idc-precompute masks"}
    defaults = {"base_model": "Salesforce/instructblip-vicuna-7b", "revision": None, "lr": 1e-5, "batch_size": 16,
                "epochs": 20, "lora_rank": 4, "max_caption_tokens": 30, "fac_weight": 0.1}

    def load(self):
        from transformers import InstructBlipForConditionalGeneration, InstructBlipProcessor

        from ..models.base import load_pretrained, resolve_dtype
        from ..models.davir import pair_forward

        s = self.settings
        model, self.processor = load_pretrained(InstructBlipForConditionalGeneration, InstructBlipProcessor, s.base_model,
                                                s.revision, resolve_dtype(s.dtype, "cpu"))
        vision = model.config.vision_config
        self.grid = vision.image_size // vision.patch_size  #: patches per side: M̂'s grid
        self.attention = pair_forward(model.vision_model, capture=s.fac_weight > 0 or s.attention_every > 0)
        return model

    def lora_config(self, model):
        from peft import LoraConfig

        s = self.settings
        llm = ["q_proj", "k_proj", "v_proj"]
        vision_qformer = ["qkv", "query", "key", "value"]
        return LoraConfig(r=s.lora_rank, lora_alpha=s.lora_alpha, lora_dropout=s.lora_dropout, bias="none",
                          target_modules=vision_qformer + llm,
                          rank_pattern={m: 2 * s.lora_rank for m in llm},  # r = 8 on the LLM when r = 4 elsewhere
                          alpha_pattern={m: 4 * s.lora_rank for m in llm})

    def _inputs(self, rows, texts):
        import torch

        from ..models.davir import build_prompt

        prompts = [build_prompt(list(r.get("entities") or []), self.settings.num_entities) for r in rows]
        full = prompts if texts is None else [f"{p} {t}" for p, t in zip(prompts, texts)]
        befores = [r["before"].convert("RGB") for r in rows]
        afters = [r["after"].convert("RGB") for r in rows]
        enc = self.processor(images=befores, text=full, return_tensors="pt", padding=True)
        prompt_only = self.processor(images=befores, text=prompts, return_tensors="pt", padding=True)
        after_pixels = self.processor.image_processor(afters, return_tensors="pt")["pixel_values"]
        enc["pixel_values"] = torch.cat([enc["pixel_values"], after_pixels], dim=1)
        enc["qformer_input_ids"] = prompt_only["qformer_input_ids"]  # the Q-Former reads the instruction only
        enc["qformer_attention_mask"] = prompt_only["qformer_attention_mask"]
        return enc, prompt_only

    def collate(self, rows):
        import numpy as np
        from PIL import Image

        from ..masks.fac import soft_patch_mask

        texts = [self.reference(r["captions"], r["__index"], r["__epoch"]) for r in rows]
        enc, prompt_only = self._inputs(rows, texts)
        batch = with_eos(enc, self.processor.tokenizer)
        first = prompt_only["attention_mask"].sum(dim=1).tolist()  # right padding: the prompt's length
        batch["labels"] = self._labels(batch["input_ids"], batch["attention_mask"], first)
        side = self.grid * 8  # masks at a common size, then pooled to the patch grid (eq. 6)
        masks = [np.asarray(r["change_mask"].convert("L").resize((side, side), Image.NEAREST)) > 127
                 if r.get("change_mask") is not None else np.zeros((side, side), dtype=bool) for r in rows]
        batch["idc_soft_mask"] = soft_patch_mask(np.stack(masks).astype(np.float32), self.grid)
        return batch

    def extra_loss(self, model, batch):
        from ..masks.fac import fac_loss

        s = self.settings
        if s.fac_weight <= 0:
            return None
        att = self.attention.last  # (B, 2, N) from the forward that just ran
        g = self.grid
        mask = batch["idc_soft_mask"].to(att.device)
        return s.fac_weight * fac_loss(att[:, 0].reshape(-1, g, g), att[:, 1].reshape(-1, g, g), mask, s.fac_reading)

    def generate(self, model, rows):
        import torch

        enc, _ = self._inputs(rows, None)
        enc = {k: v.to(model.device) for k, v in enc.items()}
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=30, do_sample=False, num_beams=1)
        n = enc["input_ids"].shape[1]
        return [t.strip() for t in self.processor.batch_decode(out[:, n:] if out.shape[1] > n else out, skip_special_tokens=True)]


def with_eos(enc, tok):
    """Append EOS after each sequence's last real token (right padding), so the model learns to stop."""
    import torch

    ids, mask = enc["input_ids"], enc["attention_mask"]
    n = ids.shape[0]
    ids = torch.cat([ids, torch.full((n, 1), tok.pad_token_id, dtype=ids.dtype)], dim=1)
    mask = torch.cat([mask, torch.zeros((n, 1), dtype=mask.dtype)], dim=1)
    lengths = enc["attention_mask"].sum(dim=1)
    for i, L in enumerate(lengths.tolist()):
        ids[i, L] = tok.eos_token_id
        mask[i, L] = 1
    out = {k: v for k, v in enc.items() if k not in ("input_ids", "attention_mask")}
    out["input_ids"], out["attention_mask"] = ids, mask
    return out


#: ``idc-train --model`` name -> recipe
RECIPES: dict[str, type[Recipe]] = {"blip2idc": Blip2IDCRecipe, "davir": DavirRecipe}


def get_recipe(name: str) -> type[Recipe]:
    if name not in RECIPES:
        raise IDCError(f"unknown model {name!r}; idc-train knows {', '.join(RECIPES)}")
    return RECIPES[name]

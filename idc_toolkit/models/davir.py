"""DAVIR: InstructBLIP + LoRA, prompted with change entities, both images through one encoder.

DAVIR's paper is under review and neither code nor weights are public; every point below is
our reading of it, written down so a user can check it against the paper:

* Base: ``InstructBlipForConditionalGeneration`` with a LoRA adapter on the ViT and Q-Former
  QKV and the LLM (any peft LoRA adapter loads; see :mod:`.adapters`).
* Pair input: the before and after images go separately through the shared vision encoder;
  their patch embeddings are concatenated along the sequence, so the Q-Former's queries
  cross-attend to both images at once (:func:`pair_forward`; the rest of InstructBLIP runs
  unchanged, and ``idc-train --model davir`` trains through the same function).
* Prompt (eq. 10): ``"[Prompt] Entity: e1, ..."`` with [Prompt] = ``"Describe the difference
  between the two images."`` and the top ``--num-entities`` entities (1 by default, the paper's
  best) of the dataset's ``entities`` column (``idc-precompute entities``); the same text goes to
  the Q-Former and the LLM, as InstructBLIP does.
* Decoding: greedy, ``max_new_tokens=77`` (as BLIP2IDC; the paper gives no value), left
  padding for a batch (a decoder-only LLM continues the prompt's last token).
* :class:`DavirInputs` is the one preprocessing and decoding of the runner and the recipe.
* ``--save-attention DIR``: final-layer CLS-to-patch attention of the vision encoder (that
  layer computed eagerly, as SDPA returns no weights; the others keep SDPA), head-averaged,
  drawn over the before and the after image, with the change mask's outline when the dataset
  has one (:func:`draw_attention`).
"""

from __future__ import annotations

from pathlib import Path
from dataclasses import dataclass
from typing import Any, Optional

from ..checks import non_negative_float, non_negative_int, positive_int
from ..facts import DatasetFacts
from .davir_fac import FAC_READINGS
from ..options import check_fields, option
from ..files import file_name_for, inside
from .recipe import DatasetDefaults, Recipe, VariantDefaults, pack, pad_id
from .adapters import apply_adapter
from ..devices import resolve_dtype
from .base import Runner, load_pretrained

PROMPT = "Describe the difference between the two images."
MAX_NEW_TOKENS = 77


@dataclass
class SharedOptions:
    """The options DAVIR's runner (:class:`Options`) and recipe (:class:`TrainOptions`) both take."""

    num_entities: int = option(1, "entities in the prompt (1: the paper's best)", check=positive_int)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class Options(SharedOptions):
    """DAVIR's runner options (``idc-eval --model davir``, ``idc-caption``)."""

    max_new_tokens: int = option(MAX_NEW_TOKENS, "greedy decoding length", check=positive_int)
    # where the pictures go, not what the captions are: the run's fingerprint leaves it out
    save_attention: Optional[str] = option(None, "save final-layer CLS-to-patch attention maps over both images "
                                                 "(Fig. 4 style)", metavar="DIR", record=False)


@dataclass
class TrainOptions(SharedOptions):
    """DAVIR's recipe options (``idc-train --model davir``)."""

    fac_weight: float = option(0.1, "lambda of the attention loss (eq. 12)", check=non_negative_float)
    fac_reading: str = option("paper", "eq. 7 as the paper writes it, or our normalised reading (docs/training.md)",
                              choices=FAC_READINGS)
    attention_every: int = option(0, "every N steps, Fig. 4-style attention pictures in OUT/attention/",
                                  check=non_negative_int, metavar="N")


def build_prompt(entities: list[str], n: int) -> str:
    picked = [e for e in entities[:n] if e]
    return f"{PROMPT} Entity: {', '.join(picked)}." if picked else PROMPT


def captured_pictures(holder: "PairAttention", rows) -> list:
    """Fig. 4 pictures of the maps :func:`pair_forward` captured on its last call, one per row:
    what ``--save-attention`` writes and what ``idc-train --attention-every`` draws."""
    att = holder.last.float().cpu().numpy()  # (B, 2, patches)
    g = int(round(att.shape[-1] ** 0.5))
    return [draw_attention(row["before"], row["after"], maps.reshape(2, g, g), row.get("change_mask"))
            for row, maps in zip(rows, att)]


class PairAttention:
    """What :func:`pair_forward` captured on its last call: ``last`` = (B, 2, patches), the
    final-layer CLS-to-patch attention of the before and the after image, head-averaged."""

    last = None


def pair_forward(vision_model, capture: bool = False) -> PairAttention:
    """Let the shared vision encoder take ``pixel_values`` of shape (B, 6, H, W) — before and
    after on the channel axis — encode each image and concatenate the two token sequences, so
    the Q-Former's queries cross-attend to both images at once. The encoder's ``forward`` is
    replaced on the instance, so parameter names (and LoRA adapter keys) stay those of the
    plain encoder. With ``capture``, the final layer's attention is computed eagerly (SDPA
    returns no weights) and kept for the FAC loss and the attention pictures; every other layer
    keeps the model's own attention (SDPA): eager attention saves each layer's whole attention
    matrix for the backward pass (6.4 GiB for the ViT-g at batch 16), and only the last is read."""
    import torch
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    original = vision_model.forward
    holder = PairAttention()
    weights: list = []
    collecting = [False]  # not while checkpointing recomputes the layer in the backward pass
    if capture:
        final = eager_final_attention(vision_model)
        final.register_forward_hook(lambda module, args, output: weights.append(output[1]) if collecting[0] else None)

    def forward(pixel_values=None, **kwargs):
        if pixel_values is None or pixel_values.shape[1] != 6:
            return original(pixel_values=pixel_values, **kwargs)
        kwargs.pop("return_dict", None)
        kwargs.pop("output_attentions", None)
        weights.clear()
        collecting[0] = True
        try:
            outs = [original(pixel_values=pixel_values[:, k:k + 3], return_dict=True, **kwargs) for k in (0, 3)]
        finally:
            collecting[0] = False
        if capture:
            holder.last = torch.stack([w[:, :, 0, 1:].mean(1) for w in weights[-2:]], dim=1)
            weights.clear()
        hidden = torch.cat([o.last_hidden_state for o in outs], dim=1)
        return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=hidden[:, 0])

    vision_model.forward = forward
    return holder


def eager_final_attention(vision_model):
    """The vision encoder's final self-attention module, switched to eager attention on its own
    (a copy of the configuration that only it reads), so it returns its attention weights while
    the other layers keep the model's implementation."""
    import copy

    final = vision_model.encoder.layers[-1].self_attn
    config = copy.copy(final.config)
    config._attn_implementation = "eager"
    final.config = config
    return final


def draw_attention(before, after, maps, mask=None):
    """DAVIR Fig. 4 style: each image with its attention map in red and, when given, the
    change mask's outline in green; before | after side by side."""
    import numpy as np
    from PIL import Image, ImageFilter

    panels = []
    for img, m in zip((before, after), maps):
        rgb = img.convert("RGB")
        m = np.asarray(m, dtype=np.float32)
        heat = (m - m.min()) / max(float(m.max() - m.min()), 1e-8)
        heat_img = Image.fromarray((heat * 255).astype(np.uint8)).resize(rgb.size, Image.BILINEAR)
        red = Image.merge("RGB", (heat_img, Image.new("L", rgb.size, 0), Image.new("L", rgb.size, 0)))
        panel = Image.blend(rgb, red, 0.5)
        if mask is not None:
            m_img = _mask_image(mask).resize(rgb.size, Image.NEAREST)
            edge = np.asarray(m_img.filter(ImageFilter.FIND_EDGES)) > 0
            arr = np.asarray(panel).copy()
            arr[edge] = (0, 255, 0)
            panel = Image.fromarray(arr)
        panels.append(panel)
    canvas = Image.new("RGB", (sum(p.width for p in panels), max(p.height for p in panels)))
    x = 0
    for p in panels:
        canvas.paste(p, (x, 0))
        x += p.width
    return canvas


def check_entities(facts: DatasetFacts, where: str) -> None:
    made_by = facts.entities_strategy
    if made_by not in (None, "davir"):
        from ..errors import IDCError

        raise IDCError(f"{where}: its entities were retrieved with the {made_by!r} strategy (its card says so); "
                       "DAVIR's prompt takes DAVIR's entities: run idc-precompute entities --strategy davir")


class DavirInputs:
    """DAVIR's input (the entity prompt, both images on the channel axis for
    :func:`pair_forward`) and greedy decoding, shared by the runner and the recipe."""

    def __init__(self, processor, num_entities: Optional[int] = None, max_new_tokens: Optional[int] = None):
        """``None``: the runner's default (:class:`Options`)."""
        self.processor = processor
        self.num_entities = Options.num_entities if num_entities is None else num_entities
        self.max_new_tokens = Options.max_new_tokens if max_new_tokens is None else max_new_tokens
        tok = processor.tokenizer
        if tok.pad_token is None:  # Llama / Vicuna tokenizers ship none; padded positions are masked
            tok.pad_token = tok.unk_token or tok.eos_token

    def prompts(self, rows) -> list[str]:
        return [build_prompt(list(r.get("entities") or []), self.num_entities) for r in rows]

    def pixels(self, rows):
        import torch

        ip = self.processor.image_processor
        befores = ip([r["before"].convert("RGB") for r in rows], return_tensors="pt")["pixel_values"]
        afters = ip([r["after"].convert("RGB") for r in rows], return_tensors="pt")["pixel_values"]
        return torch.cat([befores, afters], dim=1)

    def qformer(self, prompts: list[str]) -> dict:
        enc = self.processor.qformer_tokenizer(prompts, padding=True, return_tensors="pt")
        return {"qformer_input_ids": enc["input_ids"], "qformer_attention_mask": enc["attention_mask"]}

    def text(self, rows) -> dict:
        """The prompts' tokens as InstructBLIP's processor lays them out for generation: the query
        tokens' image slots, then each prompt padded on the left (a decoder-only LLM continues the
        prompt's last token), and the Q-Former's tokens. The processor is asked for text only: its
        own pass over the images would be discarded for :meth:`pixels`' pair."""
        import torch

        processor, tok = self.processor, self.processor.tokenizer
        side, tok.padding_side = tok.padding_side, "left"
        try:
            enc = dict(processor(text=self.prompts(rows), return_tensors="pt", padding=True))
        finally:
            tok.padding_side = side
        token = getattr(processor.image_token, "content", processor.image_token)
        slots = tok(token * processor.num_query_tokens, add_special_tokens=False)  # as the processor writes them
        n = len(rows)
        for key in ("input_ids", "attention_mask"):
            enc[key] = torch.cat([torch.tensor([slots[key]] * n, dtype=enc[key].dtype), enc[key]], dim=1)
        return enc

    def decode(self, model, rows) -> list[str]:
        import torch

        enc = self.text(rows)
        enc["pixel_values"] = self.pixels(rows)
        enc = {k: v.to(model.device) for k, v in enc.items()}
        enc["pixel_values"] = enc["pixel_values"].to(model.dtype)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        n = enc["input_ids"].shape[1]
        return [t.strip() for t in self.processor.batch_decode(out[:, n:] if out.shape[1] > n else out,
                                                               skip_special_tokens=True)]


class DavirRunner(Runner):
    name = "davir"
    summary = "DAVIR: InstructBLIP + LoRA prompted with change entities (our reading of the paper)"
    required_columns = ("pair_id", "before", "after", "entities")
    transformers_checkpoint = True
    Options = Options

    @classmethod
    def check_dataset(cls, facts, columns, options, where) -> None:
        super().check_dataset(facts, columns, options, where)
        check_entities(facts, where)

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                 revision: Optional[str] = None, options: Optional[Options] = None, **given: Any):
        from transformers import InstructBlipForConditionalGeneration, InstructBlipProcessor

        o = self.make_options(options, **given)
        self.device, self.dtype = device, resolve_dtype(dtype, device)
        model, processor = load_pretrained(InstructBlipForConditionalGeneration, InstructBlipProcessor, base_model,
                                           revision, self.dtype)
        if adapter:
            model = apply_adapter(model, adapter, base_model)  # LoRA names refer to the plain encoder
        self.attention_dir = Path(o.save_attention) if o.save_attention else None
        # with --save-attention the one vision pass of generation also yields the maps
        self.attention = pair_forward(model.vision_model, capture=self.attention_dir is not None)
        self.model = model.to(device).eval()
        self.inputs = DavirInputs(processor, o.num_entities, o.max_new_tokens)
        if self.attention_dir:
            self.attention_dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def description(cls, base_model, adapter, device, dtype, facts, revision=None, options: Optional[Options] = None,
                    **given: Any) -> dict[str, Any]:
        o = cls.make_options(options, **given)
        return {**super().description(base_model, adapter, device, dtype, facts, revision),
                "prompt": f"{PROMPT} Entity: <top {o.num_entities} of the entities column>",
                "pair_input": "before and after encoded separately, tokens concatenated for the Q-Former",
                "generation": f"greedy, max_new_tokens={o.max_new_tokens}, left padding"}

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        texts = self.inputs.decode(self.model, rows)
        if self.attention_dir:
            self.save_attention(rows)
        return texts

    def save_attention(self, rows) -> None:
        """Draw the maps :func:`pair_forward` captured during the batch's generation; the file
        name is made from the pair id but can never leave the folder."""
        for row, picture in zip(rows, captured_pictures(self.attention, rows)):
            picture.save(inside(self.attention_dir, file_name_for(row["pair_id"], ".png")))


class DavirRecipe(Recipe):
    """DAVIR (§3, appendix): InstructBLIP, LoRA r = 4 on the ViT and Q-Former QKV and r = 8 on
    the LLM, 20 epochs, batch 16, lr 1e-5, the entity prompt (eq. 10), loss = caption
    cross-entropy + λ L_attn (eq. 12, λ = 0.1), L_attn = eq. 7 on the final-layer CLS-to-patch
    attention of each image against eq. 6's soft mask of the ``change_mask`` column."""

    name = "davir"
    model_type = "instructblip"
    model_class = "InstructBlipForConditionalGeneration"
    images_per_pair = 2
    base_model = "Salesforce/instructblip-vicuna-7b"
    required = {"captions": "idc-build", "entities": "idc-precompute entities", "change_mask": "idc-precompute masks"}
    variants = {"paper": VariantDefaults(epochs=20, batch_size=16, description="the paper's settings, our reading")}
    dataset_defaults = {None: DatasetDefaults(4, 1e-5, "DAVIR appendix: r 4 (8 on the LLM), lr 1e-5, every dataset")}
    Options = TrainOptions
    max_new_tokens = DavirRunner.Options.max_new_tokens  # validation decodes as idc-eval --model does

    @classmethod
    def check_dataset(cls, facts, columns, options, where) -> None:
        check_entities(facts, where)

    def load(self, dtype):
        from transformers import InstructBlipForConditionalGeneration, InstructBlipProcessor

        s, o = self.run, self.options
        model, processor = load_pretrained(InstructBlipForConditionalGeneration, InstructBlipProcessor, s.base_model,
                                           s.revision, dtype)
        self.inputs = DavirInputs(processor, o.num_entities, s.max_new_tokens)
        self.n_query = processor.num_query_tokens
        self.image_token = model.config.image_token_index
        vision = model.config.vision_config
        self.grid = vision.image_size // vision.patch_size  #: patches per side: M̂'s grid
        self.prepare(model)
        return model

    def typical_prompt(self) -> str:
        return build_prompt(["small gray metal cylinder"] * self.options.num_entities, self.options.num_entities)

    def prepare(self, model) -> None:
        o = self.options
        self.attention = pair_forward(model.vision_model, capture=o.fac_weight > 0 or o.attention_every > 0)

    def lora_config(self, model):
        from peft import LoraConfig

        s = self.run
        llm = ["q_proj", "k_proj", "v_proj"]
        vision_qformer = ["qkv", "query", "key", "value"]
        return LoraConfig(r=s.lora_rank, lora_alpha=s.lora_alpha, lora_dropout=s.lora_dropout, bias="none",
                          target_modules=vision_qformer + llm,
                          rank_pattern={m: 2 * s.lora_rank for m in llm},  # r = 8 on the LLM when r = 4 elsewhere
                          alpha_pattern={m: 4 * s.lora_rank for m in llm})

    def sequences(self, prompts: list[str], texts: list[str]) -> list[tuple[list[int], list[int]]]:
        """``(prefix, target)`` per row: image slots + the tokenizer's specials + prompt, then
        the caption cut at ``max_caption_tokens`` and EOS — whatever side the tokenizer pads."""
        tok = self.inputs.processor.tokenizer
        n = self.run.max_caption_tokens
        out = []
        for prompt, text in zip(prompts, texts):
            prefix = [self.image_token] * self.n_query + tok(prompt, add_special_tokens=True)["input_ids"]
            out.append((prefix, tok(text, add_special_tokens=False)["input_ids"][:n] + [tok.eos_token_id]))
        return out

    def text_sequences(self, rows):
        texts = [self.reference(r["captions"], r["__index"], r["__epoch"]) for r in rows]
        return self.sequences(self.inputs.prompts(rows), texts)

    def collate(self, rows):
        import numpy as np
        from PIL import Image

        from ..masks.patch_masks import soft_patch_mask

        prompts = self.inputs.prompts(rows)
        ids, mask, labels = pack(self.text_sequences(rows), pad_id(self.inputs.processor.tokenizer))
        batch = {"pixel_values": self.inputs.pixels(rows), "input_ids": ids, "attention_mask": mask, "labels": labels,
                 **self.inputs.qformer(prompts)}
        side = self.grid * 8  # masks at a common size, then pooled to the patch grid (eq. 6)
        masks = [np.asarray(_mask_image(r["change_mask"]).resize((side, side), Image.NEAREST)) > 127
                 if r.get("change_mask") is not None else np.zeros((side, side), dtype=bool) for r in rows]
        batch["idc_soft_mask"] = soft_patch_mask(np.stack(masks).astype(np.float32), self.grid)
        return batch

    def extra_loss(self, model, batch):
        from .davir_fac import fac_loss

        o = self.options
        if o.fac_weight <= 0:
            return {}
        att = self.attention.last  # (B, 2, N) from the forward that just ran
        g = self.grid
        mask = batch["idc_soft_mask"].to(att.device)
        term = fac_loss(att[:, 0].reshape(-1, g, g), att[:, 1].reshape(-1, g, g), mask, o.fac_reading)
        return {"attention_loss": (o.fac_weight, term)}

    def generate(self, model, rows):
        return self.inputs.decode(model, rows)

    def picture_every(self) -> int:
        return max(0, self.options.attention_every)

    def attention_pictures(self, model, rows) -> list:
        """Fig. 4: the final-layer attention :func:`pair_forward` captures, over both images."""
        import torch

        batch = self.collate(rows)
        batch = {k: v.to(model.device) for k, v in batch.items() if not k.startswith("idc_") and k != "labels"}
        with torch.no_grad():
            model(**batch)
        return captured_pictures(self.attention, rows)


def _mask_image(value):
    """A ``change_mask`` cell as a PIL image, decoded or not (a dict of bytes from a parquet row)."""
    if isinstance(value, dict):
        import io

        from PIL import Image

        return Image.open(io.BytesIO(value["bytes"])).convert("L")
    return value.convert("L")


RUNNER = DavirRunner
RECIPE = DavirRecipe

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
* Decoding: greedy, ``max_new_tokens=77`` (as BLIP2IDC; the paper gives no value).
* ``--save-attention DIR``: final-layer CLS-to-patch attention of the vision encoder (eager
  attention; SDPA returns none), head-averaged, drawn over the before and the after image,
  with the change mask's outline when the dataset has one (:func:`draw_attention`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .adapters import apply_adapter
from .base import Runner, load_pretrained, resolve_dtype

PROMPT = "Describe the difference between the two images."


def build_prompt(entities: list[str], n: int) -> str:
    picked = [e for e in entities[:n] if e]
    return f"{PROMPT} Entity: {', '.join(picked)}." if picked else PROMPT


class PairAttention:
    """What :func:`pair_forward` captured on its last call: ``last`` = (B, 2, patches), the
    final-layer CLS-to-patch attention of the before and the after image, head-averaged."""

    last = None


def pair_forward(vision_model, capture: bool = False) -> PairAttention:
    """Let the shared vision encoder take ``pixel_values`` of shape (B, 6, H, W) — before and
    after on the channel axis — encode each image and concatenate the two token sequences, so
    the Q-Former's queries cross-attend to both images at once. The encoder's ``forward`` is
    replaced on the instance, so parameter names (and LoRA adapter keys) stay those of the
    plain encoder. With ``capture``, attention is computed eagerly (SDPA returns none) and kept
    for the FAC loss and the attention pictures."""
    import torch
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    original = vision_model.forward
    holder = PairAttention()
    if capture:
        vision_model.config._attn_implementation = "eager"

    def forward(pixel_values=None, **kwargs):
        if pixel_values is None or pixel_values.shape[1] != 6:
            return original(pixel_values=pixel_values, **kwargs)
        kwargs.pop("return_dict", None)
        kwargs.pop("output_attentions", None)
        outs = [original(pixel_values=pixel_values[:, k:k + 3], return_dict=True, output_attentions=capture, **kwargs)
                for k in (0, 3)]
        if capture:
            holder.last = torch.stack([o.attentions[-1][:, :, 0, 1:].mean(1) for o in outs], dim=1)
        hidden = torch.cat([o.last_hidden_state for o in outs], dim=1)
        return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=hidden[:, 0])

    vision_model.forward = forward
    return holder


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
            m_img = mask.convert("L").resize(rgb.size, Image.NEAREST)
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


class DavirRunner(Runner):
    name = "davir"
    summary = "DAVIR: InstructBLIP + LoRA prompted with change entities (our reading of the paper)"
    required_columns = ("pair_id", "before", "after", "entities")

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--num-entities", type=int, default=1,
                           help="davir: entities in the prompt (default: %(default)s, the paper's best)")
        group.add_argument("--save-attention", metavar="DIR",
                           help="davir: save final-layer CLS-to-patch attention maps over both images (Fig. 4 style)")
        group.add_argument("--max-new-tokens", type=int, default=77, help="greedy decoding length (default: %(default)s)")

    @classmethod
    def check_dataset(cls, columns, facts, options, where) -> None:
        super().check_dataset(columns, facts, options, where)
        made_by = facts.get("entities_strategy")
        if made_by not in (None, "davir"):
            from ..errors import IDCError

            raise IDCError(f"{where}: its entities were retrieved with the {made_by!r} strategy (its card says so); "
                           "DAVIR's prompt takes DAVIR's entities: run idc-precompute entities --strategy davir")

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: dict[str, Any],
                 revision: Optional[str] = None, max_new_tokens: int = 77, num_entities: int = 1,
                 save_attention: Optional[str] = None, **_: Any):
        from transformers import InstructBlipForConditionalGeneration, InstructBlipProcessor

        self.device, self.dtype = device, resolve_dtype(dtype, device)
        model, self.processor = load_pretrained(InstructBlipForConditionalGeneration, InstructBlipProcessor, base_model,
                                                revision, self.dtype)
        if adapter:
            model = apply_adapter(model, adapter, base_model)  # LoRA names refer to the plain encoder
        self.attention_dir = Path(save_attention) if save_attention else None
        # with --save-attention the one vision pass of generation also yields the maps
        self.attention = pair_forward(model.vision_model, capture=self.attention_dir is not None)
        self.model = model.to(device).eval()
        self.num_entities, self.max_new_tokens = num_entities, max_new_tokens
        if self.attention_dir:
            self.attention_dir.mkdir(parents=True, exist_ok=True)
        self.describe = {"base_model": base_model, "adapter": adapter, "revision": revision, "dtype": str(self.dtype),
                         "prompt": f"{PROMPT} Entity: <top {num_entities} of the entities column>",
                         "pair_input": "before and after encoded separately, tokens concatenated for the Q-Former",
                         "generation": f"greedy, max_new_tokens={max_new_tokens}"}

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        import torch

        prompts = [build_prompt(list(r.get("entities") or []), self.num_entities) for r in rows]
        befores = [r["before"].convert("RGB") for r in rows]
        afters = [r["after"].convert("RGB") for r in rows]
        inputs = self.processor(images=befores, text=prompts, return_tensors="pt", padding=True)
        after_pixels = self.processor.image_processor(afters, return_tensors="pt")["pixel_values"]
        pixel_values = torch.cat([inputs["pixel_values"], after_pixels], dim=1).to(self.device, self.dtype)
        inputs = {k: v.to(self.device) for k, v in inputs.items() if k != "pixel_values"}
        with torch.no_grad():
            out = self.model.generate(pixel_values=pixel_values, **inputs, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, num_beams=1)
        n_prompt = inputs["input_ids"].shape[1]
        texts = self.processor.batch_decode(out[:, n_prompt:] if out.shape[1] > n_prompt else out, skip_special_tokens=True)
        if self.attention_dir:
            self.save_attention(rows)
        return [t.strip() for t in texts]

    def save_attention(self, rows) -> None:
        """Draw the maps :func:`pair_forward` captured during the batch's generation."""
        att = self.attention.last.float().cpu().numpy()  # (B, 2, patches)
        g = int(round(att.shape[-1] ** 0.5))
        for row, pair_maps in zip(rows, att.reshape(len(att), 2, g, g)):
            draw_attention(row["before"], row["after"], pair_maps, row.get("change_mask")).save(
                self.attention_dir / f"{row['pair_id']}.png")

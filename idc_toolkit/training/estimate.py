"""``idc-train --dry-run``: what a run needs, from the base model's configuration alone.

The model is built on PyTorch's ``meta`` device (shapes, no storage) and wrapped with the
recipe's LoRA configuration by ``peft``, so parameter counts — total and trainable, per
module group — are exact, and nothing but ``config.json`` is read (or downloaded).

The memory of one optimizer step is an estimate, written out so it can be checked:

* frozen weights: every base parameter at the dtype the base is loaded in;
* LoRA state: each trainable parameter in float32 with its gradient and AdamW's two moments
  (16 bytes);
* activations per transformer layer, after Korthikanti et al. (2022, "Reducing Activation
  Recomputation in Large Transformer Models", eq. 1): ``s·b·h·(34 + 5·a·s/h)`` bytes at 16-bit
  (twice that in float32), for ``s`` tokens, batch ``b``, width ``h`` and ``a`` heads; with
  gradient checkpointing, ``2·s·b·h`` per layer plus one layer in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GROUPS = ("vision_model", "qformer", "language_model")


@dataclass(frozen=True)
class Estimate:
    parameters: dict[str, int]  #: per module group (``vision_model``, ``qformer``, ``language_model``, ``other``)
    trainable: dict[str, int]
    weight_bytes: int
    lora_state_bytes: int
    activation_bytes: int
    dtype: str

    @property
    def total_bytes(self) -> int:
        return self.weight_bytes + self.lora_state_bytes + self.activation_bytes

    def render(self) -> str:
        gib = 1024 ** 3
        lines = ["| module group | parameters | trainable (LoRA) |", "| --- | ---: | ---: |"]
        for g in self.parameters:
            lines.append(f"| {g} | {self.parameters[g]:,} | {self.trainable.get(g, 0):,} |")
        lines.append(f"| total | {sum(self.parameters.values()):,} | {sum(self.trainable.values()):,} |")
        lines += ["", f"Estimated memory of one optimizer step (base in {self.dtype}):",
                  f"- frozen weights: {self.weight_bytes / gib:.2f} GiB",
                  f"- LoRA weights, gradients, AdamW moments (float32): {self.lora_state_bytes / gib:.3f} GiB",
                  f"- activations (Korthikanti et al. 2022, eq. 1): {self.activation_bytes / gib:.2f} GiB",
                  f"- total: {self.total_bytes / gib:.2f} GiB (an estimate: allocator overhead and the CUDA context, "
                  "~0.5-1 GiB, come on top)"]
        return "\n".join(lines)


def _group(name: str) -> str:
    for g in GROUPS:
        if f"{g}." in name or name.startswith(g):
            return g
    return "other"


def _layer_activations(tokens: int, batch: int, hidden: int, heads: int, layers: int, bytes_per: int,
                       checkpointing: bool) -> int:
    full = tokens * batch * hidden * (34 + 5 * heads * tokens / hidden) * bytes_per / 2
    if checkpointing:
        return int(2 * tokens * batch * hidden * layers * bytes_per / 2 + full)
    return int(full * layers)


def estimate(recipe_cls, settings, facts, device: str) -> Estimate:
    """Parameter counts and the memory estimate of ``settings`` on ``device`` (see module docstring)."""
    import torch
    import transformers
    from peft import get_peft_model
    from transformers import AutoConfig

    from ..models.base import resolve_dtype

    kwargs: dict[str, Any] = {"revision": settings.revision} if settings.revision else {}
    config = AutoConfig.from_pretrained(settings.base_model, **kwargs)
    model_class = getattr(transformers, recipe_cls.model_class)
    with torch.device("meta"):
        model = model_class(config)
    recipe = recipe_cls(settings, facts)
    net = get_peft_model(model, recipe.lora_config(model))
    parameters: dict[str, int] = {g: 0 for g in (*GROUPS, "other")}
    trainable: dict[str, int] = {g: 0 for g in parameters}
    for name, p in net.named_parameters():
        g = _group(name)
        if p.requires_grad:
            trainable[g] += p.numel()
        else:
            parameters[g] += p.numel()
    for g in trainable:
        parameters[g] += trainable[g]
    dtype = resolve_dtype(settings.dtype, device)
    bytes_per = torch.tensor([], dtype=dtype).element_size()
    weight_bytes = sum(parameters.values()) * bytes_per - sum(trainable.values()) * bytes_per
    lora_state = sum(trainable.values()) * 16
    b = settings.batch_size
    v, q, t = config.vision_config, config.qformer_config, config.text_config
    images = recipe_cls.images_per_pair
    patches = (v.image_size // v.patch_size) ** 2 + 1
    text_tokens = config.num_query_tokens + 24 + settings.max_caption_tokens + 1  # image slots, prompt (<= 24), caption, EOS
    act = _layer_activations(patches, b * images, v.hidden_size, v.num_attention_heads, v.num_hidden_layers, bytes_per,
                             settings.gradient_checkpointing)
    act += _layer_activations(config.num_query_tokens, b, q.hidden_size, q.num_attention_heads, q.num_hidden_layers,
                              bytes_per, settings.gradient_checkpointing)
    act += _layer_activations(text_tokens, b, t.hidden_size, t.num_attention_heads, t.num_hidden_layers, bytes_per,
                              settings.gradient_checkpointing)
    act += b * text_tokens * t.vocab_size * 4 * 2  # float32 logits and their gradient
    return Estimate({g: n for g, n in parameters.items() if n}, {g: n for g, n in trainable.items() if n},
                    weight_bytes, lora_state, act, str(dtype).replace("torch.", ""))

"""BLIP2IDC (Evennou et al., WACV 2025): BLIP-2 OPT + LoRA on the stacked pair.

Faithful to the paper's code: one image with the before image on top and the after image
below (:func:`~idc_toolkit.models.pairs.stacked_pair`; resize + blur for edit-style pairs,
as the dataset card's ``pair_style`` says, or ``--pair-style``), the stock BLIP-2 processor, no text prompt, greedy decoding with
``max_new_tokens=77``. The paper's base is ``Salesforce/blip2-opt-2.7b`` at revision
``51572668da0eb669e01a189dc22abe6088589a24``, whose config predates ``image_token_index``:
it is set here (adding ``<image>`` to the tokenizer if needed). BLIP2IDC's evaluation
replaced a no-change prediction by a reference before scoring; this runner scores what the
model wrote.
"""

from __future__ import annotations

from typing import Any, Optional

from ..errors import IDCError
from .adapters import apply_adapter
from .base import Runner, load_pretrained, resolve_dtype
from .pairs import stacked_pair

BASE_MODEL = "Salesforce/blip2-opt-2.7b"
BASE_REVISION = "51572668da0eb669e01a189dc22abe6088589a24"


class Blip2IDCRunner(Runner):
    name = "blip2idc"
    summary = "BLIP2IDC (WACV 2025): BLIP-2 OPT + LoRA on the stacked pair"

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--pair-style", choices=["scene", "edit"],
                           help="blip2idc: override the dataset card's pair style (edit pairs are resized and blurred; "
                                "default: the card's)")
        group.add_argument("--max-new-tokens", type=int, default=77, help="greedy decoding length (default: %(default)s)")

    @classmethod
    def check_dataset(cls, columns, facts, options, where) -> None:
        super().check_dataset(columns, facts, options, where)
        if not options.get("pair_style") and facts.get("pair_style") not in ("scene", "edit"):
            raise IDCError(f"{where}: its card records no pair style (scene or edit), which decides BLIP2IDC's "
                           "resize + blur; pass --pair-style scene|edit")

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: dict[str, Any],
                 revision: Optional[str] = None, max_new_tokens: int = 77, pair_style: Optional[str] = None, **_: Any):
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        self.device = device
        self.dtype = resolve_dtype(dtype, device)
        model, self.processor = load_pretrained(Blip2ForConditionalGeneration, Blip2Processor, base_model, revision, self.dtype)
        if adapter:
            model = apply_adapter(model, adapter, base_model)
        self.model = model.to(device).eval()
        self.resize_blur = (pair_style or facts.get("pair_style")) == "edit"
        self.max_new_tokens = max_new_tokens
        self.describe = {"base_model": base_model, "adapter": adapter, "revision": revision, "dtype": str(self.dtype),
                         "preprocess": "stacked pair" + (" + resize/blur" if self.resize_blur else ""),
                         "generation": f"greedy, max_new_tokens={max_new_tokens}, no prompt"}

    def images(self, rows: list[dict[str, Any]]):
        return [stacked_pair(r["before"], r["after"], self.resize_blur, r["pair_id"]) for r in rows]

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        import torch

        pixel_values = self.processor(images=self.images(rows), return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            out = self.model.generate(pixel_values=pixel_values.to(self.device, self.dtype),
                                      max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        return [t.strip() for t in self.processor.batch_decode(out, skip_special_tokens=True)]

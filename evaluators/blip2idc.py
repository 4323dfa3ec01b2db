"""BLIP2IDC (Evennou et al., WACV 2025): BLIP-2 OPT + LoRA on the stacked pair.

Faithful to the paper's code: one image with the before image on top and the after image
below (:func:`~idc_toolkit.evaluators.pairs.stacked_pair`, resize + blur for IER and Emu
Edit / Syned), the stock BLIP-2 processor, no text prompt, greedy decoding with
``max_new_tokens=77``. The paper's base is ``Salesforce/blip2-opt-2.7b`` at revision
``51572668da0eb669e01a189dc22abe6088589a24``, whose config predates ``image_token_index``:
it is set here (adding ``<image>`` to the tokenizer if needed). BLIP2IDC's evaluation
replaced a no-change prediction by a reference before scoring; this runner scores what the
model wrote.
"""

from __future__ import annotations

from typing import Any, Optional

from .adapters import apply_adapter
from .pairs import RESIZE_BLUR_DATASETS, stacked_pair

BASE_MODEL = "Salesforce/blip2-opt-2.7b"
BASE_REVISION = "51572668da0eb669e01a189dc22abe6088589a24"


def resolve_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def ensure_image_token(model, processor) -> None:
    """transformers 5 builds BLIP-2 generation inputs from ``config.image_token_index``."""
    tok = processor.tokenizer
    if getattr(model.config, "image_token_index", None) is None:
        if "<image>" not in tok.get_vocab():
            tok.add_tokens(["<image>"], special_tokens=True)
            model.resize_token_embeddings(len(tok))
        model.config.image_token_index = tok.convert_tokens_to_ids("<image>")
    if getattr(processor, "num_query_tokens", None) is None:
        processor.num_query_tokens = model.config.num_query_tokens


class Blip2IDCRunner:
    name = "blip2idc"
    required_columns = ("pair_id", "before", "after")

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, dataset_name: Optional[str] = None,
                 max_new_tokens: int = 77, revision: Optional[str] = None, **_: Any):
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        kwargs = {"revision": revision} if revision else {}
        self.device = device
        self.dtype = resolve_dtype(dtype, device)
        self.processor = Blip2Processor.from_pretrained(base_model, **kwargs)
        model = Blip2ForConditionalGeneration.from_pretrained(base_model, dtype=self.dtype, **kwargs)
        ensure_image_token(model, self.processor)
        if adapter:
            model = apply_adapter(model, adapter, base_model)
        self.model = model.to(device).eval()
        self.resize_blur = dataset_name in RESIZE_BLUR_DATASETS
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

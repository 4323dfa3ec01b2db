"""InstructPix2Pix's CLIP directional filter: cos(E(edit) - E(source), E(instruction))."""

from __future__ import annotations

from typing import Optional


class ClipDirectional:
    """Directional similarity of edits to their instruction, with open_clip."""

    def __init__(self, model_name: str, checkpoint: Optional[str], device: str = "cpu", model_config: Optional[str] = None):
        import torch

        from ..openclip import load_open_clip

        self.model, self.preprocess, self.tokenizer = load_open_clip(model_name, checkpoint, device, model_config)
        self.device, self.torch = device, torch
        self.name = model_name + (f" ({checkpoint.rsplit('/', 1)[-1]})" if checkpoint else " (random weights)")

    def directional(self, source, edits: list, instruction: str) -> list[float]:
        torch = self.torch
        with torch.no_grad():
            imgs = torch.stack([self.preprocess(im.convert("RGB")) for im in [source, *edits]]).to(self.device)
            emb = self.model.encode_image(imgs, normalize=True)
            text = self.model.encode_text(self.tokenizer([instruction]).to(self.device), normalize=True)[0]
            delta = emb[1:] - emb[:1]
            sims = torch.nn.functional.cosine_similarity(delta, text[None].expand_as(delta), dim=1)
        return [float(v) for v in sims]

"""Change-entity retrieval: which vocabulary phrases an image pair shows, scored with open_clip.

Retrieval (``--strategy``), with cosine similarities S between an image embedding and the
embeddings of ``"a photo of {phrase}."`` for every vocabulary phrase:

* ``davir`` (eq. 8-9): the before and after images multiplied by the soft change mask (the
  ``change_mask`` column, or a diff mask computed on the fly), S_bef and S_aft; the union of
  both top-k lists ranked by the larger of the two scores, top-k kept;
* ``cheer`` (eq. 1): full images; the phrases with at least one score above that image's
  mean score, ranked by the signed S_bef - S_aft, as the paper writes it (``entity_scores``
  holds it); ``cheer_score="absolute"`` ranks by |S_bef - S_aft| instead (our option: an added
  object raises S_aft, a removed one S_bef).
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import IDCError

RETRIEVAL_STRATEGIES = ("davir", "cheer")
#: CHEER eq. 1 ranks by the signed S_bef - S_aft (the paper); ``absolute`` is our option
CHEER_SCORES = ("signed", "absolute")
PROMPT = "a photo of {}."


class ClipScorer:
    """open_clip image/text similarities against a fixed phrase vocabulary."""

    def __init__(self, model_name: str, checkpoint: Optional[str], phrases: Sequence[str], device: str = "cpu",
                 model_config: Optional[str] = None):
        import torch

        from ..openclip import load_open_clip

        self.model, self.preprocess, tokenizer = load_open_clip(model_name, checkpoint, device, model_config)
        self.random_weights = checkpoint is None
        self.device = device
        with torch.no_grad():
            self.text = self.model.encode_text(tokenizer([PROMPT.format(p) for p in phrases]).to(device), normalize=True)
        self.phrases = list(phrases)

    def similarities(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            batch = torch.stack([self.preprocess(im) for im in images]).to(self.device)
            emb = self.model.encode_image(batch, normalize=True)
            return (emb @ self.text.T).float().cpu().numpy()


def masked(image, mask: Optional[np.ndarray]):
    """``image ⊙ soft mask``: the mask blurred a little so the object's border keeps context."""
    from PIL import Image, ImageFilter

    rgb = image.convert("RGB")
    if mask is None:
        return rgb
    m = Image.fromarray((mask.astype(np.uint8) * 255)).resize(rgb.size, Image.NEAREST)
    soft = np.asarray(m.filter(ImageFilter.GaussianBlur(radius=max(1, rgb.size[0] // 64))), dtype=np.float32) / 255.0
    return Image.fromarray((np.asarray(rgb, dtype=np.float32) * soft[..., None]).astype(np.uint8))


def retrieve(s_before: np.ndarray, s_after: np.ndarray, strategy: str, k: int,
             cheer_score: str = "signed") -> list[tuple[int, float]]:
    """Indices and scores of the top-k phrases of one pair (see module docstring)."""
    if strategy == "davir":
        top_b = np.argsort(-s_before)[:k]
        top_a = np.argsort(-s_after)[:k]
        union = list(dict.fromkeys([*top_a.tolist(), *top_b.tolist()]))
        best = np.maximum(s_before, s_after)
        ranked = sorted(union, key=lambda i: (-best[i], i))[:k]
        return [(i, float(best[i])) for i in ranked]
    if strategy == "cheer":
        if cheer_score not in CHEER_SCORES:
            raise IDCError(f"unknown CHEER score {cheer_score!r}; choose {', '.join(CHEER_SCORES)}")
        eligible = np.nonzero((s_before > s_before.mean()) | (s_after > s_after.mean()))[0]
        diff = s_before - s_after if cheer_score == "signed" else np.abs(s_before - s_after)
        ranked = sorted(eligible.tolist(), key=lambda i: (-diff[i], i))[:k]
        return [(i, float(diff[i])) for i in ranked]
    raise IDCError(f"unknown retrieval strategy {strategy!r}; choose {', '.join(RETRIEVAL_STRATEGIES)}")


def vocabulary_json(vocab: list[tuple[str, int]], meta: dict[str, Any]) -> str:
    """``entities_vocab.json``: how the vocabulary was made, and every phrase with its count."""
    return json.dumps({**meta, "phrases": [{"text": p, "count": n} for p, n in vocab]}, indent=1, ensure_ascii=False) + "\n"

"""Change-entity retrieval: which vocabulary phrases an image pair shows, scored with open_clip.

Retrieval (``--strategy``), with cosine similarities S between an image embedding and the
embeddings of ``"a photo of {phrase}."`` for every vocabulary phrase:

* ``davir`` (eq. 8-9): the before and after images multiplied by eq. 6's soft mask M̂ (the
  ``change_mask`` column, or a diff mask computed on the fly, average-pooled to the CLIP
  encoder's patch grid, Gaussian-blurred, then spread back over the image), S_bef and S_aft;
  the union of both top-k lists ranked by the larger of the two scores, top-k kept. A pair
  whose mask is empty (no change found) is scored on the full images (our choice: the
  paper does not say, and a black image retrieves noise);
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
        grid = getattr(getattr(self.model, "visual", None), "grid_size", None)
        self.grid = int(grid[0]) if isinstance(grid, (tuple, list)) else int(grid or 16)  #: patches per side (M̂'s grid)

    def similarities(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            batch = torch.stack([self.preprocess(im) for im in images]).to(self.device)
            emb = self.model.encode_image(batch, normalize=True)
            return (emb @ self.text.T).float().cpu().numpy()


def soft_masked(image, mask: Optional[np.ndarray], grid: int = 16):
    """``image ⊙ M̂`` (DAVIR eq. 6 and 8): M̂ is the binary change mask average-pooled to the
    vision encoder's ``grid`` x ``grid`` patches and Gaussian-blurred
    (:func:`idc_toolkit.masks.patch_masks.soft_patch_mask`), spread back to the image bilinearly.
    No mask, or an empty one, gives the full image."""
    import torch.nn.functional as F
    from PIL import Image

    from ..masks.patch_masks import soft_patch_mask

    rgb = image.convert("RGB")
    if mask is None or not mask.any():
        return rgb
    soft = soft_patch_mask(mask.astype(np.float32), grid)  # (1, grid, grid)
    w, h = rgb.size
    full = F.interpolate(soft[:, None], size=(h, w), mode="bilinear", align_corners=False)[0, 0].numpy()
    return Image.fromarray((np.asarray(rgb, dtype=np.float32) * full[..., None]).round().astype(np.uint8))


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

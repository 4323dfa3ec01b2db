"""One open_clip loader for every capability that scores images against text (entity
retrieval, the augmentation's CLIP filter), so both build and seed models the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .errors import IDCError


def load_open_clip(model_name: str, checkpoint: Optional[str] = None, device: str = "cpu",
                   model_config: Optional[str] = None) -> tuple[Any, Any, Any]:
    """``(model, preprocess, tokenizer)``; without ``checkpoint`` the weights are random but
    seeded, so runs repeat. ``model_config`` registers a custom architecture JSON first."""
    import open_clip
    import torch

    if model_config:
        open_clip.add_model_config(model_config)
    if checkpoint and not Path(checkpoint).is_file():
        raise IDCError(f"CLIP checkpoint not found: {checkpoint}")
    torch.manual_seed(0)
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=checkpoint or None)
    except RuntimeError as exc:
        raise IDCError(f"cannot build open_clip model {model_name!r}: {exc}") from None
    return model.to(device).eval(), preprocess, open_clip.get_tokenizer(model_name)

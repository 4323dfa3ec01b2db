"""One open_clip loader for every capability that scores images against text (entity
retrieval, the augmentation's CLIP filter), so both build and seed models the same way."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Optional

from .errors import IDCError


def import_without(module: str, hidden: str) -> Any:
    """``import module`` while ``hidden`` cannot be imported (an optional import of it inside
    ``module`` fails as if it were not installed); afterwards ``hidden`` imports as usual.
    Nothing is hidden where ``module`` or ``hidden`` is imported already.

    Why: open_clip imports timm, whose ``timm.utils.summary`` imports wandb when it is
    installed (the ``[lmms]`` extra installs it, through lmms-eval) for a logging helper the
    toolkit never calls. A fresh ``import open_clip`` took 5.8-6.7 s with it and 4.7-5.2 s
    without (three runs each on the 2-core machine)."""
    import importlib
    import sys

    if module in sys.modules or hidden in sys.modules:
        return importlib.import_module(module)
    sys.modules[hidden] = None  # type: ignore[assignment]  # ``import hidden`` raises ImportError
    try:
        return importlib.import_module(module)
    finally:
        if hidden in sys.modules and sys.modules[hidden] is None:
            del sys.modules[hidden]


class _DropRandomWeightsWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No pretrained weights loaded for model")


@contextlib.contextmanager
def _without_random_weights_warning():
    """open_clip warns on the root logger that a model without ``pretrained`` is random; the
    toolkit's callers already say so (the entities pass, the CLIP filter's name), so the
    second line is dropped, and only that one."""
    root = logging.getLogger()  # open_clip calls ``logging.warning``: the root logger's own filters apply
    drop = _DropRandomWeightsWarning()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def load_open_clip(model_name: str, checkpoint: Optional[str] = None, device: str = "cpu",
                   model_config: Optional[str] = None) -> tuple[Any, Any, Any]:
    """``(model, preprocess, tokenizer)``; without ``checkpoint`` the weights are random but
    seeded, so runs repeat. ``model_config`` registers a custom architecture JSON first."""
    import torch

    open_clip = import_without("open_clip", "wandb")

    if model_config:
        open_clip.add_model_config(model_config)
    if checkpoint and not Path(checkpoint).is_file():
        raise IDCError(f"CLIP checkpoint not found: {checkpoint}")
    torch.manual_seed(0)
    try:
        with _without_random_weights_warning():  # the caller has said so in its own words
            model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=checkpoint or None)
    except RuntimeError as exc:
        raise IDCError(f"cannot build open_clip model {model_name!r}: {exc}") from None
    return model.to(device).eval(), preprocess, open_clip.get_tokenizer(model_name)

"""Which device a job runs on, and how quietly its model loads: shared by every capability
that loads a model."""

from __future__ import annotations

from .errors import IDCError


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> CUDA when present, else CPU; asking for CUDA where there is none is an error.
    Any other device is returned as given, without importing torch (1.5 s): a CPU job that
    loads no model starts without it."""
    if device != "auto" and not device.startswith("cuda"):
        return device
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise IDCError(f"--device {device} was asked for, but CUDA is not available on this machine")
    return device


def quiet_model_loading() -> None:
    """transformers 5 draws a "Loading weights" bar for every model it loads; a job run with
    ``--no-progress`` asked for no bars, so this one is turned off too (for this process)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

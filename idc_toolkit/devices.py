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


def quiet_model_loading(*libraries: str) -> None:
    """transformers 5 draws a "Loading weights" bar for every model it loads, diffusers a
    "Loading pipeline components" one; a job run with ``--no-progress`` asked for no bars, so
    these are turned off too (for this process). ``libraries``: default transformers."""
    import importlib

    for library in libraries or ("transformers",):
        importlib.import_module(f"{library}.utils.logging").disable_progress_bar()

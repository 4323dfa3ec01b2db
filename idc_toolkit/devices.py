"""Which device a job runs on, shared by every capability that loads a model."""

from __future__ import annotations

from .errors import IDCError


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> CUDA when present, else CPU; asking for CUDA where there is none is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise IDCError(f"--device {device} was asked for, but CUDA is not available on this machine")
    return device

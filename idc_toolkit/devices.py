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


def resolve_dtype(dtype: str, device: str):
    """``--dtype`` as a torch dtype: ``auto`` is bfloat16 on CUDA (float16 where it has none), float32 on CPU."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def load_weights(model_class, name: str, flag: str = "--base-model", **kwargs):
    """``model_class.from_pretrained``, with a weights file that would run pickled code (refused by
    torch's ``weights_only``: nothing ran) or is corrupt reported in one line naming the model
    (``flag``: the option that named it)."""
    import pickle

    from .stores import first_line

    try:
        return model_class.from_pretrained(name, **kwargs)
    except (pickle.UnpicklingError, EOFError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and "weights_only" not in str(exc) and "pickle" not in str(exc).lower():
            raise
        raise IDCError(f"{flag} {name}: its weights file is not a plain tensor file ({type(exc).__name__}: {first_line(exc)}); "
                       "nothing in it was run") from None

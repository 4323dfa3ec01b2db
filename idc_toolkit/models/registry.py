"""The model registry of ``idc-eval --model`` and ``idc-train``: a name -> the
:class:`~.base.Runner` subclass that loads a checkpoint, preprocesses pairs and generates
captions. A third method is one new module in ``idc_toolkit/models/`` and one line here. Entries are import paths so that nothing heavy (torch,
transformers) is imported until a model is asked for."""

from __future__ import annotations

from importlib import import_module

from ..errors import IDCError

MODELS = {
    "blip2idc": "idc_toolkit.models.blip2idc:Blip2IDCRunner",
    "davir": "idc_toolkit.models.davir:DavirRunner",
}


def get_runner_class(name: str):
    try:
        module, cls = MODELS[name].split(":")
    except KeyError:
        raise IDCError(f"unknown model {name!r}; available: {', '.join(sorted(MODELS))}") from None
    return getattr(import_module(module), cls)

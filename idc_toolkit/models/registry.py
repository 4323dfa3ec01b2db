"""The model registry of ``idc-eval --model`` and ``idc-train``: a name -> the module that holds
the model's :class:`~.base.Runner` (``RUNNER``) and, when it can be trained, its
:class:`~idc_toolkit.models.recipe.Recipe` (``RECIPE``), side by side so they share one
preprocessing and decoding. A new model is one module in ``idc_toolkit/models/`` and one line
here. Entries are import paths, so nothing heavy (torch, transformers) is imported until a
model is asked for."""

from __future__ import annotations

from ..errors import IDCError
from ..registry import Registry

#: model name -> the module holding its RUNNER (and RECIPE)
MODELS = Registry("model", {
    "blip2idc": "idc_toolkit.models.blip2idc",
    "davir": "idc_toolkit.models.davir",
    "vlm": "idc_toolkit.models.vlm",
})


def _module(name: str):
    return MODELS.get(name)


def get_runner_class(name: str):
    return _module(name).RUNNER


def trainable_models() -> list[str]:
    """The models whose module has a training recipe (``RECIPE``): what ``idc-train`` offers.
    Imports each model module (light: heavy libraries load inside their functions)."""
    return [name for name in sorted(MODELS) if getattr(_module(name), "RECIPE", None) is not None]


def get_recipe_class(name: str):
    recipe = getattr(_module(name), "RECIPE", None)
    if recipe is None:
        raise IDCError(f"model {name!r} has no training recipe; idc-train trains {', '.join(trainable_models())}")
    return recipe

"""idc-toolkit: image difference captioning datasets in one schema, scored as the papers do.

The public API mirrors the command-line tools::

    build_dataset        idc-build            (raw release -> Hub-ready folder)
    add_change_masks     idc-precompute masks
    add_change_entities  idc-precompute entities
    augment_dataset      idc-augment
    generate_predictions idc-eval --model ... --predict-only
    caption              idc-caption BEFORE AFTER --model ...   (one pair)
    evaluate_predictions idc-eval --predictions
    compare_systems      idc-eval compare
    train(TrainArgs(...)) idc-train
    view                 idc-view             (a static pair browser of a dataset and its evaluations)
    view_figure          idc-view figure      (a qualitative-examples panel: PDF, PNG, LaTeX)

Importing the package is cheap on purpose: every name is loaded on first use, and heavy
libraries (torch, transformers, diffusers) only inside the functions that need them, so
``idc-eval --predictions`` never imports torch.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_API = {
    "build_dataset": "idc_toolkit.api:build_dataset",
    "add_change_masks": "idc_toolkit.masks.column:add_change_masks",
    "add_change_entities": "idc_toolkit.entities.column:add_change_entities",
    "augment_dataset": "idc_toolkit.augment.pipeline:augment_dataset",
    "generate_predictions": "idc_toolkit.api:generate_predictions",
    "evaluate_predictions": "idc_toolkit.api:evaluate_predictions",
    "compare_systems": "idc_toolkit.api:compare_systems",
    "train": "idc_toolkit.training.train:train",
    "TrainArgs": "idc_toolkit.training.args:TrainArgs",
    "caption": "idc_toolkit.caption:caption",
    "view": "idc_toolkit.viewer.site:write_site",
    "view_figure": "idc_toolkit.viewer.figure:write_figure",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        module, attr = _API[name].split(":")
        return getattr(import_module(module), attr)
    raise AttributeError(f"module 'idc_toolkit' has no attribute {name!r}")

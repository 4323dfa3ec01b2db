"""Training: ``idc-train`` fine-tunes the checkpoints ``idc-eval --model`` runs.

* :mod:`idc_toolkit.models.recipe` — what every recipe shares (its defaults, per-dataset defaults, labels that do
  not depend on the padding side, the caption loss); each model's recipe lives beside its
  runner in ``idc_toolkit/models/<name>.py``;
* :mod:`.args` — :class:`TrainArgs`, the run's arguments, and :class:`TrainRun`, the run resolved (its record);
* :mod:`.train` — the generic run: checks, run folder, ``transformers.Trainer`` + ``peft``, resume;
* :mod:`.callbacks` — per-epoch validation, the step log, attention pictures.
"""

from ..models.recipe import DatasetDefaults, Recipe, RecipeDefaults
from .args import TrainArgs, TrainRun
from .train import TrainResult, resolve_run, resolve_settings, train, train_seeds

__all__ = ["DatasetDefaults", "Recipe", "RecipeDefaults", "TrainArgs", "TrainResult", "TrainRun", "resolve_run",
           "resolve_settings", "train", "train_seeds"]

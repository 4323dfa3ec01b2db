"""Training: ``idc-train`` fine-tunes the checkpoints ``idc-eval --model`` runs.

* :mod:`.recipes` — BLIP2IDC and DAVIR as their papers and code train them (one class each);
* :mod:`.train` — the run: checks, run folder, ``transformers.Trainer`` + ``peft``, resume;
* :mod:`.callbacks` — per-epoch validation with the toolkit's scorer, attention pictures.
"""

from .recipes import RECIPES, Settings, get_recipe
from .train import TrainResult, train

__all__ = ["RECIPES", "Settings", "get_recipe", "TrainResult", "train"]

"""Caption metrics exactly as coco-caption computes them, with per-group breakdowns in one pass.

The functional core is :func:`score_groups` (pure: captions in, numbers out); the stateful
:class:`CaptionScorer` wraps it the way torchmetrics wraps its functional metrics.
Nothing here imports torch.
"""

from .core import GroupScores, ScoreResult, score_groups
from .registry import all_columns
from .scorer import CaptionScorer
from .text import sanitize_caption

#: every score column of the registered metrics, in table order (``METRICS`` is the registry itself)
ALL_COLUMNS = all_columns()

__all__ = ["ALL_COLUMNS", "GroupScores", "ScoreResult", "score_groups", "CaptionScorer", "sanitize_caption"]


def __getattr__(name: str):
    if name == "METRICS":  # the old name of ALL_COLUMNS
        import warnings

        warnings.warn("idc_toolkit.metrics.METRICS is renamed ALL_COLUMNS (METRICS is the registry, "
                      "idc_toolkit.metrics.registry.METRICS)", DeprecationWarning, stacklevel=2)
        return ALL_COLUMNS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

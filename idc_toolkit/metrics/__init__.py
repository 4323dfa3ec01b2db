"""Caption metrics exactly as coco-caption computes them, with per-group breakdowns in one pass.

The functional core is :func:`score_groups` (pure: captions in, numbers out); the stateful
:class:`CaptionScorer` wraps it the way torchmetrics wraps its functional metrics.
Nothing here imports torch. ``ALL_COLUMNS``: every score column of the registered metrics, in
table order (``METRICS`` is the registry itself).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import GroupScores, ScoreResult, score_groups
    from .scorer import CaptionScorer
    from .text import sanitize_caption

__all__ = ["ALL_COLUMNS", "GroupScores", "ScoreResult", "score_groups", "CaptionScorer", "sanitize_caption"]

#: where each public name lives: imported at first use, so a helper process that runs one of this
#: package's modules (METEOR's aligner) does not import the scorer and every metric first
_LAZY = {"GroupScores": ".core", "ScoreResult": ".core", "score_groups": ".core", "CaptionScorer": ".scorer",
         "sanitize_caption": ".text"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name == "ALL_COLUMNS":  # every score column of the registered metrics, in table order
        value = importlib.import_module(".registry", __name__).all_columns()
    elif name == "METRICS":  # the old name of ALL_COLUMNS
        import warnings

        warnings.warn("idc_toolkit.metrics.METRICS is renamed ALL_COLUMNS (METRICS is the registry, "
                      "idc_toolkit.metrics.registry.METRICS)", DeprecationWarning, stacklevel=2)
        return __getattr__("ALL_COLUMNS")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

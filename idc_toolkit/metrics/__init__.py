"""Caption metrics exactly as coco-caption computes them, with per-group breakdowns in one pass.

The functional core is :func:`score_groups` (pure: captions in, numbers out); the stateful
:class:`CaptionScorer` wraps it the way torchmetrics wraps its functional metrics.
Nothing here imports torch.
"""

from .core import METRICS, GroupScores, ScoreResult, score_groups
from .scorer import CaptionScorer
from .text import sanitize_caption

__all__ = ["METRICS", "GroupScores", "ScoreResult", "score_groups", "CaptionScorer", "sanitize_caption"]

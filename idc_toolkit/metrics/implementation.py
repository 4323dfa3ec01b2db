"""Which implementation of coco-caption's Java tools scores: the toolkit's own Python (default:
no JVM starts) or pycocoevalcap's jars (``java``), to see the equality on your own data.

Both give the same tokens, METEOR statistics and scores (``tests/test_ptb_tokenizer.py``,
``tests/test_meteor_python.py`` and the scale check CI runs against the jars). Chosen by the
``scorer`` argument of :func:`~.core.score_groups` / ``idc-eval --scorer``, else by
``IDC_SCORER``; ``metrics.json`` records which one scored. SPICE has no Python implementation.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

from ..errors import EvaluationError

PYTHON, JAVA = "python", "java"
CHOICES = (PYTHON, JAVA)
ENV = "IDC_SCORER"
_chosen: ContextVar[Optional[str]] = ContextVar("idc_scorer", default=None)


def current() -> str:
    """The implementation in force: the innermost :func:`using`, else ``IDC_SCORER``, else Python."""
    name = _chosen.get() or os.environ.get(ENV) or PYTHON
    if name not in CHOICES:
        raise EvaluationError(f"{ENV}={name!r}: choose one of {', '.join(CHOICES)}")
    return name


def resolve(name: Optional[str]) -> str:
    """``name``, or the implementation in force where it is ``None`` (checked)."""
    with using(name) as chosen:
        return chosen


@contextmanager
def using(name: Optional[str]) -> Iterator[str]:
    """Score with ``name`` inside the block (``None``: leave the choice as it is)."""
    if name is not None and name not in CHOICES:
        raise EvaluationError(f"scorer {name!r}: choose one of {', '.join(CHOICES)}")
    token = _chosen.set(name) if name is not None else None
    try:
        yield current()
    finally:
        if token is not None:
            _chosen.reset(token)


def describe(name: str) -> str:
    """How ``metrics.json`` names the implementation that scored (the JVM's version is its own field)."""
    if name == JAVA:
        return "java: pycocoevalcap's jars"
    return "python: idc_toolkit.metrics.ptb and meteor_align (equal to pycocoevalcap's jars)"

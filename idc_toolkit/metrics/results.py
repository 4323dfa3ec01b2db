"""The results of scoring: one group's scores, the per-pair cache every group and resample
shares, and the whole result. Their own module so that the core (which makes them) and the
bootstrap (which resamples them) both import them, not each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .base import Metric


@dataclass
class GroupScores:
    name: str
    n: int
    scores: dict[str, Optional[float]]


@dataclass
class PairCache:
    """The tokenized pairs and every metric's per-pair results, shared by every group (and by
    bootstrap resampling). :meth:`close` releases the metrics' JVMs."""

    ids: list[str]
    hypotheses: list[str]  # tokenized, of the pairs in ``captioned`` (until :meth:`release_tokens`)
    references: Sequence[Sequence[str]]  # tokenized, of the pairs in ``captioned`` (until :meth:`release_tokens`)
    metrics: dict[str, Metric] = field(default_factory=dict)
    #: the positions (in ``ids``) of the pairs that have references, which the caption metrics score
    captioned: Optional[Sequence[int]] = None

    def release_tokens(self) -> None:
        """Drop the tokenized captions once every metric has computed: groups, resamples and
        paired tests read the metrics' own per-pair results, and the tokens are the largest thing kept."""
        self.hypotheses, self.references = [], []

    def close(self) -> None:
        for m in self.metrics.values():
            m.close()


@dataclass
class ScoreResult:
    ids: list[str]
    groups: dict[str, GroupScores]
    per_pair: dict[str, np.ndarray]
    metrics: tuple[str, ...]
    #: each optional metric's status ("ok" or why it gave no score), by family
    statuses: dict[str, str]
    cache: PairCache
    group_indices: dict[str, Sequence[int]]  # each group's positions in ``ids``: a range or an array of ints
    ci: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    scorer: str = "python"  #: which implementation of the jars' tools scored (:mod:`.implementation`)

    @property
    def spice_status(self) -> str:
        """SPICE's status, as ``metrics.json`` records it ("not requested" where it was not)."""
        return self.statuses.get("SPICE", "not requested")

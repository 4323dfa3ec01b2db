"""What a metric is to the scorer: one small class per metric family, in its own module.

The scorer tokenizes once and hands every metric the same tokenized pairs; a metric keeps
whatever per-pair intermediate results it needs (cooked n-grams, METEOR statistics, ...) and
answers three questions from them, for any group of pairs given by index:

* :meth:`Metric.scores` — each group's corpus score, exactly as a separate coco-caption run on
  that group would compute it;
* :meth:`Metric.per_pair` — per-pair scores of the whole set (``per_pair.csv``);
* :meth:`Metric.resample` — the score of every bootstrap resample (rows of pair weights),
  which gives intervals and the paired test.

Adding a metric is one module with one such class and one line in :mod:`.registry`; the
scorer, bootstrap, tables, charts and the CLI's ``--metrics`` derive from the registry.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping, Optional, Sequence

import numpy as np


def once_per_distinct_pair(hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                           compute: Callable[[str, Sequence[str]], Any]) -> list[Any]:
    """``compute(hypothesis, references)`` for every pair, in order, calling it once per distinct
    pair: LEVIR-CC's ~1,000 no-change test pairs share their five references, and a model
    answers most of them alike. For a pure ``compute`` (a pair's score depends on it alone), so
    the results are what calling it for every pair gives; repeated pairs share one result."""
    done: dict[tuple[str, tuple[str, ...]], Any] = {}
    out = []
    for h, r in zip(hypotheses, references):
        key = (h, tuple(r))
        if key not in done:
            done[key] = compute(h, r)
        out.append(done[key])
    return out


def weighted_sums(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each row of ``weights`` (a resample's draw counts, one per pair) times ``values``, summed.
    Summed by numpy's pairwise sum along each row, whose order is fixed: a BLAS product's order
    follows its kernel and thread count, and moved bootstrap bounds by an ulp from one CPU to the next.
    The rows are laid out contiguously first: numpy sums the rows of a column-major array
    element by element instead, and ``weights[:, kept]`` is one. (The bootstrap hands ``weights`` a
    block of 2 MiB at a time: their products are no larger.)"""
    return (np.ascontiguousarray(weights, dtype=float) * np.asarray(values, dtype=float)).sum(axis=1)


class Metric:
    #: the name ``--metrics`` takes (case-insensitive, or one of ``aliases``)
    family: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    #: the score columns it produces, in table order
    columns: ClassVar[tuple[str, ...]]
    #: the column charts show for this family
    chart_column: ClassVar[str]
    #: ``{column: short name}`` of the columns the papers' tables print (``Bleu_4``: ``B4``)
    paper_columns: ClassVar[dict[str, str]] = {}
    #: True: :meth:`compute` may run in a thread beside the other metrics' (a JVM does the work)
    background: ClassVar[bool] = False
    #: True: only computed when asked for (needs something not every machine has)
    optional: ClassVar[bool] = False

    def __init__(self, **options: Any):
        """``options``: the scoring's metric options (``spice_jars``: where a metric finds its
        jars); each metric reads those it knows."""
        self.status = "ok"
        #: what the metrics of one scoring share (BLEU's and CIDEr-D's n-gram layouts), set by the
        #: scorer; ``None``: a metric used alone makes what it needs itself
        self.shared: Optional[dict[str, Any]] = None

    # -- what a metric needs before and around a scoring, asked of every family by generic code --
    @classmethod
    def prewarm(cls, pairs: int = 0) -> None:
        """Start, now, what a scoring of this family will need (a table to read, a process to
        start) while the caller imports and reads its files; ``pairs``: about how many it will
        score (0: not known)."""

    @classmethod
    def unavailable(cls, **options: Any) -> Optional[str]:
        """Why this metric cannot run on this machine with ``options`` (``None``: it can): an
        :attr:`optional` one that cannot is left out of the default metrics."""
        return None

    @classmethod
    def check_inputs(cls, ids: Sequence[str], hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        """Refuse, before any work, pairs this family cannot score, naming the pair."""

    @classmethod
    def notes(cls) -> list[str]:
        """Lines a scoring prints before it starts (a one-time set-up on this machine, say)."""
        return []

    @classmethod
    def session(cls):
        """A block inside which several scorings share what this family starts (``compare``
        scores its systems one after the other)."""
        from contextlib import nullcontext

        return nullcontext()

    def start(self, pairs: int = 0) -> None:
        """Called before tokenization with the number of pairs to score, so slow start-ups (a
        JVM, a helper process for a large scoring) overlap it."""

    def prepare(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        """Called with the tokenized pairs before any metric computes: a background metric
        starts its JVM here, before the others' Python work competes for the interpreter."""

    def compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        """Per-pair intermediate results of the tokenized pairs."""
        raise NotImplementedError

    def assist(self) -> None:
        """Called in the caller's thread, once the other metrics are done, while this background
        metric's :meth:`compute` still runs: work the caller's core can take over."""

    def group(self, idx: list[int]) -> dict[str, Optional[float]]:
        raise NotImplementedError

    def scores(self, groups: Mapping[str, list[int]]) -> dict[str, dict[str, Optional[float]]]:
        """Every group's scores (a metric may batch them, as METEOR does in one JVM call)."""
        return {name: self.group(idx) for name, idx in groups.items()}

    def per_pair(self) -> dict[str, np.ndarray]:
        return {}

    def resample(self, idx: list[int], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Scores of each resample of group ``idx``: ``weights`` is resamples x len(idx), each row
        how often each pair is drawn. A row sums to len(idx) in an ordinary resample, to another
        count where only some of a group's pairs are scored (:class:`OnSubset`): a mean divides
        by the row's sum. A metric defines this or :meth:`resampler`."""
        return self.resampler(idx)(weights)

    def resampler(self, idx: list[int]) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
        """``weights -> resample(idx, weights)`` for blocks of one group's resamples: a metric whose
        resamples of a group share work (the group's per-pair scores, say) does it here, once."""
        if type(self).resample is Metric.resample:
            raise NotImplementedError(f"{type(self).__name__} defines neither resample nor resampler")
        return lambda weights: self.resample(idx, weights)

    def release(self) -> None:
        """Drop the per-pair intermediate results (statistics, n-gram layouts) once every group,
        per-pair and resample question of a scoring is answered: :func:`~.core.score_groups` does,
        as soon as this metric's answers are in, where it draws no resample."""

    def close(self) -> None:
        """Release external resources (a JVM)."""


class Released:
    """What a metric holds in place of its per-pair results once released: any use says why."""

    def __init__(self, family: str):
        self.family = family

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends ask for protocols: plainly absent
            raise AttributeError(name)
        raise RuntimeError(f"{self.family}'s per-pair results were released once score_groups had its answers; "
                           "build_cache keeps them for further groups and resamples")


def nan_mean(values: np.ndarray) -> Optional[float]:
    """The mean of the defined (non-NaN) values; ``None`` where none is."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else None


class PairMeans(Metric):
    """Columns whose per-pair values are known before scoring (a model run: the judge's; the
    raw captions: reversibility's), a group's score their mean over the pairs where a value is
    defined (NaN: undefined, never 0). :meth:`compute` has nothing left to do."""

    def __init__(self, values: Mapping[str, np.ndarray]):
        super().__init__()
        self.values = {c: np.asarray(values[c], dtype=np.float64) for c in type(self).columns if c in values}
        self.columns = tuple(self.values)

    def compute(self, hypotheses, references) -> None:
        pass

    def group(self, idx):
        return {c: nan_mean(v[idx]) for c, v in self.values.items()}

    def per_pair(self):
        return dict(self.values)

    def resample(self, idx, weights):
        """Each resample's weighted mean over the pairs where a column is defined; a column the
        group defines for no pair is left out, a resample that draws none of them is NaN."""
        out = {}
        for c, v in self.values.items():
            sub = v[idx]
            defined = ~np.isnan(sub)
            if not defined.any():
                continue
            w = weights[:, defined]
            total = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[c] = np.where(total > 0, weighted_sums(w, sub[defined]) / np.where(total > 0, total, 1), np.nan)
        return out


class OnSubset(Metric):
    """``metric`` computed on some of the scored pairs only (``keep``: their positions among the
    ``n`` pairs, ascending): the caption metrics on the pairs that have references, where others
    only ask a question. Groups, per-pair values and resamples index all ``n`` pairs; a pair left
    out takes no part in any score (NaN per pair), and a group or resample holding none of the
    kept pairs has no score (``None`` / NaN), never 0."""

    def __init__(self, metric: Metric, keep: Sequence[int], n: int):
        self.inner, self.keep, self.n = metric, list(keep), n
        self.position = {k: j for j, k in enumerate(self.keep)}
        self.family, self.aliases, self.columns = metric.family, metric.aliases, metric.columns
        self.chart_column, self.paper_columns = metric.chart_column, metric.paper_columns
        self.background, self.optional = metric.background, metric.optional

    @property
    def status(self) -> str:  # type: ignore[override]
        return self.inner.status

    def start(self, pairs: int = 0) -> None:
        self.inner.start(pairs)

    def assist(self) -> None:
        self.inner.assist()

    def prepare(self, hypotheses, references) -> None:
        self.inner.prepare(hypotheses, references)

    def compute(self, hypotheses, references) -> None:
        self.inner.compute(hypotheses, references)

    def _inner(self, idx: Sequence[int]) -> list[int]:
        return [self.position[k] for k in idx if k in self.position]

    def group(self, idx):
        return self.scores({"g": idx})["g"]

    def scores(self, groups):
        inner = {g: self._inner(idx) for g, idx in groups.items()}
        got = self.inner.scores({g: idx for g, idx in inner.items() if idx})
        return {g: got.get(g, {c: None for c in self.columns}) for g in groups}

    def per_pair(self):
        out = {}
        for c, values in self.inner.per_pair().items():
            full = np.full(self.n, np.nan)
            full[self.keep] = values
            out[c] = full
        return out

    def resampler(self, idx):
        kept = np.array([k in self.position for k in idx], dtype=bool)
        if not kept.any():
            return lambda weights: {}
        inner = self.inner.resampler(self._inner(idx))

        def resample(weights):
            w = weights[:, kept]
            drawn = w.sum(axis=1) > 0  # a resample that draws none of the kept pairs has no score
            out = {}
            for c, values in inner(w[drawn]).items():
                full = np.full(weights.shape[0], np.nan)
                full[drawn] = values
                out[c] = full
            return out

        return resample

    def release(self) -> None:
        self.inner.release()

    def close(self) -> None:
        self.inner.close()

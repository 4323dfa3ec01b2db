"""Bootstrap confidence intervals and the paired bootstrap test (pairs are resampled).

What one resample recomputes, per metric:

* BLEU-1..4: the corpus score from the resampled pairs' summed n-gram counts and lengths
  (the "closest" reference length of a pair does not depend on the other pairs), so every
  resample is an exact coco-caption BLEU of that multiset of pairs.
* METEOR: METEOR's own corpus score of the resampled pairs' summed statistics (one summed
  statistics row per resample, scored by METEOR's arithmetic, :mod:`.meteor_stats`): an
  exact METEOR of that multiset.
* ROUGE-L, SPICE, the judge's columns: the mean of the resampled per-pair scores (what their
  corpus score is; for a judge column, over the pairs where it is defined).
* CIDEr: the mean of the resampled per-pair CIDEr-D, with the document frequencies of the
  full group held fixed (recomputing IDF on a multiset with duplicated pairs would count a
  duplicated pair's references twice, which no real test set has).

Intervals are the 2.5th and 97.5th percentiles over the resamples. The paired test
resamples the same pairs for both systems and reports the two-sided p-value
``min(1, 2 * min(P(d* <= 0), P(d* >= 0)))`` of the per-resample difference d* (Koehn 2004).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .results import PairCache, ScoreResult


#: draw counts a block holds (2 MiB of float64): a group's resamples are drawn and scored a block
#: at a time, so memory does not grow with pairs x resamples (1,000 resamples of 80,000 pairs: 640 MB);
#: as fast as 8 MiB blocks and 24 MiB lighter (benchmarks/README.md, Scoring)
BLOCK = 1 << 18


def resample_counts(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_resamples x n`` matrix: how often each pair is drawn in each resample. Consecutive calls
    draw what one call for all their rows draws (the generator keeps its place)."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    draws += np.arange(0, n_resamples * n, n)[:, None]  # each row's cells after the rows before it
    return np.bincount(draws.ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


def resamplers(cache: "PairCache", idx: Sequence[int]) -> list[Callable[[np.ndarray], dict[str, np.ndarray]]]:
    """Each metric's resample function of the group ``idx`` (:meth:`~.base.Metric.resampler`)."""
    return [metric.resampler(idx) for metric in cache.metrics.values()]


def samples(functions: Sequence[Callable[[np.ndarray], dict[str, np.ndarray]]], weights: np.ndarray) -> dict[str, np.ndarray]:
    """Every column of the resamples given as rows of ``weights``."""
    return {column: values for resample in functions for column, values in resample(weights).items()}


def resampled(runs: "Sequence[Sequence[Callable]]", n: int, n_resamples: int,
              rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    """Every column of each run (its :func:`resamplers`) over the same ``n_resamples`` resamples of
    its group's ``n`` pairs, drawn and scored a block of resamples at a time."""
    blocks: list[list[dict[str, np.ndarray]]] = [[] for _ in runs]
    rows = max(1, BLOCK // max(1, n))
    for start in range(0, n_resamples, rows):
        weights = resample_counts(n, min(rows, n_resamples - start), rng)
        for parts, functions in zip(blocks, runs):
            parts.append(samples(functions, weights))
    # which columns a metric answers depends on the group alone, never on a block's draws
    return [{column: np.concatenate([part[column] for part in parts]) for column in (parts[0] if parts else ())}
            for parts in blocks]


def bootstrap_intervals(result: "ScoreResult", n_resamples: int, seed: int) -> dict[str, dict[str, tuple[float, float]]]:
    intervals: dict[str, dict[str, tuple[float, float]]] = {}
    for k, (gname, idx) in enumerate(result.group_indices.items()):
        if len(idx) < 2:
            continue
        (drawn,) = resampled([resamplers(result.cache, idx)], len(idx), n_resamples, np.random.default_rng([seed, k]))
        # a resample that draws no pair where a judge column is defined has no value there (NaN)
        intervals[gname] = {
            m: (float(np.nanpercentile(v, 2.5)), float(np.nanpercentile(v, 97.5))) for m, v in drawn.items()
            if not np.isnan(v).all()
        }
    return intervals


def paired_test(cache_a: "PairCache", cache_b: "PairCache", idx: list[int], n_resamples: int,
                seed: int) -> dict[str, dict[str, float]]:
    """Per metric: A's and B's scores on the pairs, their difference A - B, the resampled
    differences' mean (``mean_difference``, which can differ from A - B in sign when the two are
    close) and 95% percentile interval, and the p-value."""
    return paired_group_test([cache_a], [cache_b], idx, n_resamples, seed)[0]


def paired_group_test(runs_a: "list[PairCache]", runs_b: "list[PairCache]", idx: list[int], n_resamples: int,
                      seed: int) -> tuple[dict[str, dict[str, float]], list[dict[str, dict[str, Any]]]]:
    """:func:`paired_test` of two groups of runs (seeds of one system each): a system's score in a
    resample is the mean of its runs' scores on the same resampled pairs, so one run a side is
    exactly :func:`paired_test`. Also returns each run alone (A's runs, then B's): its scores on
    the pairs and its 95% interval from those resamples, ``[{"scores": {metric: v}, "ci":
    {metric: [low, high]}}, ...]``."""
    whole = np.ones((1, len(idx)))  # every pair once: the systems' own scores
    runs = (*runs_a, *runs_b)
    functions = [resamplers(c, idx) for c in runs]  # CIDEr-D's group scores made once: for the resamples and the whole set
    per_run = resampled(functions, len(idx), n_resamples, np.random.default_rng(seed))
    alone = [samples(f, whole) for f in functions]
    reports = [{"scores": {m: float(v[0]) for m, v in own.items()},
                "ci": {m: [float(np.nanpercentile(v, 2.5)), float(np.nanpercentile(v, 97.5))] for m, v in run.items()
                       if not np.isnan(v).all()}} for own, run in zip(alone, per_run)]

    def mean_of(samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {m: np.mean([r[m] for r in samples], axis=0) for m in samples[0] if all(m in r for r in samples)}

    n = len(runs_a)
    sa, sb = mean_of(per_run[:n]), mean_of(per_run[n:])
    full_a, full_b = mean_of(alone[:n]), mean_of(alone[n:])
    out = {}
    for metric in sa:
        if metric not in sb:
            continue
        d = sa[metric] - sb[metric]
        d = d[~np.isnan(d)]  # resamples where a judge column is undefined for either system
        if not d.size:
            continue
        # (k + 1) / (N + 1): the observed split counts as one of the resamples, so p is never 0
        k = min(int(np.sum(d <= 0)), int(np.sum(d >= 0)))
        p = min(1.0, 2 * (k + 1) / (d.size + 1))
        out[metric] = {
            "a": float(full_a[metric][0]),
            "b": float(full_b[metric][0]),
            "difference": float(full_a[metric][0] - full_b[metric][0]),
            "mean_difference": float(np.mean(d)),
            "ci_low": float(np.percentile(d, 2.5)),
            "ci_high": float(np.percentile(d, 97.5)),
            "p_value": p,
        }
    return out, reports

"""METEOR's score arithmetic in numpy equals METEOR's own ``EVAL`` bit for bit."""

import numpy as np
import pytest

from idc_toolkit.metrics import meteor as meteor_mod
from idc_toolkit.metrics.core import build_cache
from idc_toolkit.metrics.meteor_stats import aggregate_statistics, meteor_score, stats_line

from test_metrics_exact import _ddla

pytestmark = pytest.mark.java


def test_segment_group_and_resample_scores_equal_meteors_eval_bit_for_bit(shared, monkeypatch):
    """Real predictions of a published model (DDLA on Spot-the-Diff) against their real
    references, plus the degenerate segments (empty, no match, a perfect match, function words
    only): every segment score, every group's corpus score and every bootstrap resample's."""
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")  # every segment aligned here, by the JVM asked for EVAL below
    hyps, refs = _ddla(shared)
    ids = sorted(hyps)[:600]
    hyps, refs = {i: hyps[i] for i in ids}, {i: refs[i] for i in ids}
    odd = [("", ["a red car moved"]), ("the", ["a car"]), ("the of a", ["a red car moved"]),
           ("a red car moved", ["a red car moved"]), ("zzz qqq", ["a car"]), ("a car", ["the the the"])]
    for k, (h, r) in enumerate(odd):
        hyps[f"odd{k}"], refs[f"odd{k}"] = h, r
    cache = build_cache(hyps, refs, ["METEOR"])  # tokenized and aligned as a scoring does
    try:
        meteor = cache.metrics["METEOR"]
        process, lines, stats = meteor.workers[0], meteor.lines, meteor.stats
        corpus, segments = process.evaluate(lines)
        assert np.array_equal(meteor_score(stats), np.array(segments))
        assert meteor_score(aggregate_statistics(stats))[0] == corpus
        rng = np.random.default_rng(0)
        groups = [rng.choice(len(stats), size=k, replace=False) for k in (1, 2, 7, 50, 300)]
        sums = np.array([aggregate_statistics(stats[g]) for g in groups])
        sums = np.vstack([sums, aggregate_statistics(stats, rng.multinomial(len(stats), np.full(len(stats), 1 / len(stats)), 100))])
        _, theirs = process.evaluate([stats_line(row) for row in sums])
        assert np.array_equal(meteor_score(sums), np.array(theirs))
    finally:
        cache.close()
    assert meteor_score(stats[-6:])[0] == 0.0 and meteor_score(stats[-6:])[3] > 0.99  # the empty and the perfect one


def test_a_scoring_whose_statistics_are_all_cached_asks_the_jvm_nothing(monkeypatch, tmp_path):
    """Group and per-pair scores need no JVM: with every segment's statistics cached, a scoring
    would not wait for a JVM started for it to load its paraphrase table (~6 s)."""
    from idc_toolkit.metrics import score_groups

    monkeypatch.setenv("IDC_METEOR_CACHE", str(tmp_path / "stats.sqlite"))
    hyps = {"1": "a red car moved", "2": "nothing", "3": "the cube is gone"}
    refs = {"1": ["a red car moved away"], "2": ["nothing changed"], "3": ["the blue cube is gone", "a cube left"]}
    first = score_groups(hyps, refs, {"g": ["1", "3"]}, metrics=["METEOR"])

    def no_exchange(*args):
        raise AssertionError("the JVM was asked something")

    monkeypatch.setattr(meteor_mod.MeteorProcess, "_exchange", no_exchange)
    again = score_groups(hyps, refs, {"g": ["1", "3"]}, metrics=["METEOR"])
    assert again.groups == first.groups
    assert np.array_equal(again.per_pair["METEOR"], first.per_pair["METEOR"])

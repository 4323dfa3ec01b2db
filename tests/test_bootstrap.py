"""Bootstrap resamples are exact coco-caption scores of the resampled multiset of pairs."""

import numpy as np
import pytest

from idc_toolkit.demo.captions import synthetic_caption_set
from idc_toolkit.metrics import score_groups
from idc_toolkit.metrics.bleu import bleu_from_totals
from idc_toolkit.metrics.bootstrap import paired_test, resample_counts
from idc_toolkit.metrics.core import build_cache
from idc_toolkit.metrics.meteor import one_jvm_set
from idc_toolkit.metrics.meteor_stats import aggregate_statistics, stats_line

pytestmark = pytest.mark.java


def test_resampled_bleu_and_meteor_equal_scoring_the_expanded_multiset():
    hyps, refs, _ = synthetic_caption_set(60, seed=5)
    cache = build_cache(hyps, refs, ["BLEU", "METEOR"])
    bleu, meteor = cache.metrics["BLEU"], cache.metrics["METEOR"]
    try:
        w = resample_counts(60, 1, np.random.default_rng(1))[0].astype(int)
        expanded = [i for i, k in enumerate(w) for _ in range(k)]
        assert len(set(expanded)) < 60  # duplicates present
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer

        scorer = BleuScorer(n=4)
        for i in expanded:
            scorer += (cache.hypotheses[i], list(cache.references[i]))
        bleu_expanded, _ = scorer.compute_score(option="closest", verbose=0)
        bleu_resampled = bleu_from_totals(w @ bleu.cache.sufficient_statistics())[0]
        assert np.array_equal(bleu_expanded, bleu_resampled)  # the same float operations as BleuScorer
        from idc_toolkit.metrics.meteor import MeteorProcess

        with MeteorProcess() as jvm:  # METEOR's own EVAL of the statistics the scorer made
            m_expanded, _ = jvm.evaluate([stats_line(meteor.stats[i]) for i in expanded])
            _, (m_summed,) = jvm.evaluate([stats_line(aggregate_statistics(meteor.stats, w))])
        assert m_expanded == pytest.approx(m_summed, abs=1e-12)
        # and the metric's own resample() gives the same numbers
        via_metric = {**bleu.resample(list(range(60)), w[None, :].astype(float)),
                      **meteor.resample(list(range(60)), w[None, :].astype(float))}
        assert np.array_equal([via_metric[f"Bleu_{k + 1}"][0] for k in range(4)], bleu_expanded)
        assert via_metric["METEOR"][0] == pytest.approx(m_expanded, abs=1e-12)
    finally:
        cache.close()


def test_intervals_are_seeded_and_bracket_the_estimate():
    hyps, refs, cats = synthetic_caption_set(80, seed=2)
    groups = {"distractor": [p for p, c in cats.items() if c == "distractor"]}
    r1 = score_groups(hyps, refs, groups, metrics=["BLEU", "ROUGE_L", "CIDEr"], bootstrap=200, seed=7)
    r2 = score_groups(hyps, refs, groups, metrics=["BLEU", "ROUGE_L", "CIDEr"], bootstrap=200, seed=7)
    assert r1.ci == r2.ci and set(r1.ci) == {"overall", "distractor"}
    for g in r1.ci:
        for m, (lo, hi) in r1.ci[g].items():
            assert lo <= r1.groups[g].scores[m] <= hi + 1e-12, (g, m)
            assert lo < hi


def test_resamples_drawn_in_blocks_are_the_draws_of_one_matrix():
    """Blocks of resamples, drawn one after the other, hold the counts one matrix of every resample
    holds: each row's draws counted (here by a plain loop), the generator keeping its place."""
    from idc_toolkit.metrics.bootstrap import resample_counts

    for n, total, rows in ((7, 50, 3), (1001, 20, 7), (3, 9, 2)):
        draws = np.random.default_rng([4, n]).integers(0, n, size=(total, n))
        expected = np.zeros((total, n))
        for r, row in enumerate(draws):
            for i in row:
                expected[r, i] += 1
        rng = np.random.default_rng([4, n])
        blocks = np.concatenate([resample_counts(n, min(rows, total - k), rng) for k in range(0, total, rows)])
        assert np.array_equal(blocks, expected) and blocks.dtype == np.float64


def test_intervals_and_paired_tests_do_not_depend_on_the_block_size(monkeypatch):
    """One resample a block, or all of them in one: the same bits, for every metric, a pair with no
    reference (its metrics on the others, :class:`OnSubset`) and a judge's per-pair column."""
    from idc_toolkit.metrics import bootstrap
    from idc_toolkit.metrics.judge_columns import JudgeScores

    hyps, refs, cats = synthetic_caption_set(300, seed=6)
    refs["000004"] = []
    groups = {}
    for pid, cat in cats.items():
        groups.setdefault(cat, []).append(pid)
    judged = np.where(np.arange(300) % 3 == 0, np.nan, np.linspace(0, 1, 300))
    other = {p: "nothing has changed" if k % 2 else h for k, (p, h) in enumerate(hyps.items())}

    def answers():
        extra = [JudgeScores({"Judge_recall": judged})]
        result = score_groups(hyps, refs, groups, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"], bootstrap=101,
                              seed=2, extra=extra)
        with one_jvm_set():
            ca = build_cache(hyps, refs, ["BLEU", "METEOR", "ROUGE_L", "CIDEr"])
            cb = build_cache(other, refs, ["BLEU", "METEOR", "ROUGE_L", "CIDEr"])
            try:
                paired = paired_test(ca, cb, list(range(300)), 97, 1)
            finally:
                ca.close()
                cb.close()
        return result.ci, paired

    whole = answers()
    monkeypatch.setattr(bootstrap, "BLOCK", 1)
    one_at_a_time = answers()
    assert one_at_a_time == whole
    assert "Judge_recall" in whole[0]["overall"] and "METEOR" in whole[1]


def test_paired_test_separates_good_from_bad_and_not_from_itself():
    hyps, refs, _ = synthetic_caption_set(60, seed=4)
    good = {p: r[0] for p, r in refs.items()}
    bad = {p: "purple elephants dance" for p in refs}
    with one_jvm_set():  # as compare does: the two caches are used one at a time
        ca = build_cache(good, refs, ["BLEU", "METEOR", "CIDEr"])
        cb = build_cache(bad, refs, ["BLEU", "METEOR", "CIDEr"])
        try:
            idx = list(range(60))
            out = paired_test(ca, cb, idx, 200, 0)
            assert set(out) == {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "CIDEr"}
            assert all(v["p_value"] < 0.05 and v["mean_difference"] > 0 for v in out.values())
            same = paired_test(ca, ca, idx, 50, 0)
            assert all(v["p_value"] == 1.0 and v["mean_difference"] == 0 for v in same.values())
        finally:
            ca.close()
            cb.close()


def test_a_scoring_without_resamples_lets_go_of_per_pair_data_and_says_so_when_asked():
    """score_groups answers groups, per-pair scores and intervals in one pass: with no resample to
    draw, BLEU's and CIDEr-D's per-pair data go as soon as their answers are in, and asking the
    result's cache for another group says why; with resamples they stay until the intervals are made."""
    hyps, refs, _ = synthetic_caption_set(40, seed=2)
    groups = {"half": list(refs)[:20]}
    bare = score_groups(hyps, refs, groups, ["BLEU", "CIDEr"])
    kept = score_groups(hyps, refs, groups, ["BLEU", "CIDEr"], bootstrap=20)
    assert {g: r.scores for g, r in bare.groups.items()} == {g: r.scores for g, r in kept.groups.items()}
    assert all(np.array_equal(bare.per_pair[c], kept.per_pair[c], equal_nan=True) for c in bare.per_pair)
    for family in ("BLEU", "CIDEr"):
        with pytest.raises(RuntimeError, match=f"{family}'s per-pair results were released"):
            bare.cache.metrics[family].group([0, 1])
        assert kept.cache.metrics[family].group([0, 1])  # kept for the resamples: still answers

"""A metric is one class + one registry line: scoring, per-group breakdown, per-pair output,
bootstrap intervals, the paired test and ``--metrics`` all follow from the registry."""

import numpy as np

from idc_toolkit.metrics import score_groups
from idc_toolkit.metrics.base import Metric
from idc_toolkit.metrics.bootstrap import paired_test
from idc_toolkit.metrics.core import build_cache
from idc_toolkit.metrics.registry import METRICS, resolve_families


class WordCountRatio(Metric):
    """Hypothesis length over the mean reference length, per pair; groups take the mean."""

    family = "LenRatio"
    aliases = ("len",)
    columns = ("LenRatio",)
    chart_column = "LenRatio"

    def compute(self, hypotheses, references):
        self.values = np.array([len(h.split()) / np.mean([len(r.split()) for r in refs])
                                for h, refs in zip(hypotheses, references)])

    def group(self, idx):
        return {"LenRatio": float(self.values[idx].mean())}

    def per_pair(self):
        return {"LenRatio": self.values}

    def resample(self, idx, weights):
        return {"LenRatio": weights @ self.values[idx] / len(idx)}


def test_a_registered_metric_flows_through_scoring_bootstrap_and_comparison():
    with METRICS.added("LenRatio", f"{__name__}:WordCountRatio"):
        _flows_through()


def _flows_through():
    assert resolve_families(["LEN", "bleu"]) == ("LenRatio", "BLEU")
    hyps = {"a": "a red cube", "b": "a small blue sphere moved", "c": "nothing"}
    refs = {"a": ["the red cube", "a red cube"], "b": ["a blue sphere moved left"], "c": ["no change at all"]}
    result = score_groups(hyps, refs, {"two": ["a", "b"]}, metrics=["LenRatio"], bootstrap=20, seed=1)
    expected = {"a": 1.0, "b": 1.0, "c": 0.25}  # token counts after the PTB tokenizer
    assert result.groups["two"].scores["LenRatio"] == 1.0
    assert np.allclose(result.per_pair["LenRatio"], [expected[k] for k in result.ids])
    assert "LenRatio" in result.ci["overall"] and result.metrics == ("LenRatio",)
    a, b = build_cache(hyps, refs, ["LenRatio"]), build_cache({k: v + " and more" for k, v in hyps.items()}, refs, ["LenRatio"])
    assert paired_test(a, b, [0, 1, 2], 30, 0)["LenRatio"]["mean_difference"] < 0

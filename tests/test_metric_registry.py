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


class NeedsWarmUp(WordCountRatio):
    """A plug-in that declares what it needs around a scoring (as METEOR does): generic code asks
    every family, and names none."""

    family = "WarmUp"
    columns = ("WarmUp",)
    chart_column = "WarmUp"
    calls: list = []

    @classmethod
    def prewarm(cls, pairs=0):
        assert isinstance(pairs, int) and pairs >= 0  # about how many pairs the scoring holds (0: unknown)
        cls.calls.append("prewarm")

    @classmethod
    def check_inputs(cls, ids, hypotheses, references):
        cls.calls.append("check")
        from idc_toolkit.errors import EvaluationError

        if any("forbidden" in h for h in hypotheses):
            raise EvaluationError("pair: a forbidden word")

    @classmethod
    def notes(cls):
        return ["WarmUp: set up once"]

    @classmethod
    def session(cls):
        from contextlib import contextmanager

        @contextmanager
        def shared():
            cls.calls.append("open")
            yield
            cls.calls.append("close")

        return shared()

    def compute(self, hypotheses, references):
        super().compute(hypotheses, references)
        self.values = self.values.copy()

    def group(self, idx):
        return {"WarmUp": float(self.values[idx].mean())}

    def per_pair(self):
        return {"WarmUp": self.values}

    def resample(self, idx, weights):
        return {"WarmUp": weights @ self.values[idx] / len(idx)}


def test_a_metric_declares_its_warm_up_checks_notes_and_session_through_the_contract(tmp_path, capsys):
    import json

    import pytest

    from idc_toolkit.cli.eval import main
    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.evaluators.compare import compare_systems
    from idc_toolkit.evaluators.scoring import evaluate_predictions

    refs = {"a": ["the red cube"], "b": ["a blue sphere moved left"]}
    (tmp_path / "refs.json").write_text(json.dumps({"annotations": [{"image_id": k, "caption": c}
                                                                     for k, cs in refs.items() for c in cs]}))
    (tmp_path / "p.json").write_text(json.dumps({"a": "a red cube", "b": "a sphere moved"}))
    with METRICS.added("WarmUp", f"{__name__}:NeedsWarmUp"):
        NeedsWarmUp.calls.clear()
        assert main(["--predictions", str(tmp_path / "p.json"), "--references", str(tmp_path / "refs.json"),
                     "--metrics", "WarmUp", "--out", str(tmp_path / "e")]) == 0
        assert NeedsWarmUp.calls == ["prewarm", "check"] and "WarmUp: set up once" in capsys.readouterr().err
        with pytest.raises(EvaluationError, match="forbidden"):
            evaluate_predictions({"a": "forbidden", "b": "x"}, references=str(tmp_path / "refs.json"), metrics=["WarmUp"])
        NeedsWarmUp.calls.clear()
        compare_systems({"a": "a red cube", "b": "a sphere"}, {"a": "red", "b": "sphere"},
                        references=str(tmp_path / "refs.json"), metrics=["WarmUp"], bootstrap=10)
        assert NeedsWarmUp.calls[0] == "open" and NeedsWarmUp.calls[-1] == "close"  # one session for both systems

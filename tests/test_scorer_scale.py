"""The Python scorer against the jars on every real caption (``pytest -m scale``, which CI runs):
every metric, overall, per group and per segment, equal between ``scorer="python"`` and
``scorer="java"`` (pycocoevalcap's jars)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from idc_toolkit.metrics import score_groups

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import meteor_python as bench  # the real segment sets, shared with the benchmark

pytestmark = [pytest.mark.java, pytest.mark.scale]


def test_every_metric_equal_between_the_python_and_java_scorers_on_every_real_caption(shared, monkeypatch):
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    monkeypatch.setenv("IDC_TOKENIZER_CACHE", "0")
    sets = bench.real_segments(shared, per_source=10 ** 9)  # every segment of every source
    assert {"ddla predictions", "spot-the-diff", "dubai-cc"} <= set(sets)
    counted = 0
    for name, (hyps, refs) in sets.items():
        ids = [f"{k:06d}" for k in range(len(hyps))]
        hypotheses, references = dict(zip(ids, hyps)), dict(zip(ids, refs))
        groups = {f"g{k}": ids[k::7] for k in range(7)}  # seven groups, each its own coco-caption evaluation
        ours = score_groups(hypotheses, references, groups, ["BLEU", "METEOR", "ROUGE_L", "CIDEr"], scorer="python")
        jars = score_groups(hypotheses, references, groups, ["BLEU", "METEOR", "ROUGE_L", "CIDEr"], scorer="java")
        for group in ("overall", *groups):
            assert ours.groups[group].scores == jars.groups[group].scores, (name, group)
        for metric, values in jars.per_pair.items():
            assert np.array_equal(ours.per_pair[metric], values), (name, metric)
        counted += len(hyps)
    assert counted > 30_000

"""``benchmarks/train_speed.py``'s FLOP count of a training step (its MFU column): the count on
slices, extrapolated to the real depth, equals torch's FLOP counter run on the whole model."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import train_speed  # noqa: E402


@pytest.mark.parametrize("name, tiny", [("blip2idc", "blip2"), ("davir", "iblip")])
def test_step_flops_on_slices_equal_the_whole_models_count(name, tiny, tiny_models, tmp_path, monkeypatch):
    from transformers import AutoConfig

    base = tmp_path / "base"
    shutil.copytree(tiny_models(tiny), base)
    config = AutoConfig.from_pretrained(base)
    # deeper than the slices (a Q-Former period is two layers), odd depths: extrapolation, not a copy
    config.vision_config.num_hidden_layers, config.text_config.num_hidden_layers = 7, 5
    config.qformer_config.num_hidden_layers = 10
    config.save_pretrained(base)
    monkeypatch.setattr(train_speed, "mean_caption_tokens", lambda tokenizer, folder: 7)
    counted = train_speed.step_flops(name, str(base), "data", 1)
    whole = train_speed.pair_flops(name, str(base), 7)
    assert counted == whole > 0
    assert train_speed.step_flops(name, str(base), "data", 3) == 3 * whole

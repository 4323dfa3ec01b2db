"""The FLOPs of a training step (``idc_toolkit.training.flops``: ``--dry-run``'s compute line and
the benchmarks' MFU): the count on slices, extrapolated to the real depth, equals torch's FLOP
counter run on the whole model; ``--dry-run`` prints it."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("torch")


@pytest.mark.parametrize("name, tiny", [("blip2idc", "blip2"), ("davir", "iblip")])
def test_flops_on_slices_equal_the_whole_models_count(name, tiny, tiny_models, tmp_path):
    import torch
    from transformers import AutoConfig

    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run
    from idc_toolkit.training.flops import pair_flops, step_pair_flops

    base = tmp_path / "base"
    shutil.copytree(tiny_models(tiny), base)
    config = AutoConfig.from_pretrained(base)
    # deeper than the slices (a Q-Former period is two layers), odd depths: extrapolation, not a copy
    config.vision_config.num_hidden_layers, config.text_config.num_hidden_layers = 7, 5
    config.qformer_config.num_hidden_layers = 10
    config.save_pretrained(base)
    cls, facts = get_recipe_class(name), DatasetFacts(builder="clevr_change", pair_style="scene")
    settings = resolve_run(cls, facts, TrainArgs(name, dataset="data", out="run", base_model=str(base), batch_size=1,
                                                 dtype="bfloat16", val_split=None)).replace(max_caption_tokens=7)
    whole = pair_flops(cls, settings, facts)
    assert step_pair_flops(cls, settings, facts) == whole > 0
    assert pair_flops(cls, settings, facts, dtype=torch.bfloat16) == whole  # counted at float32: no dtype changes it
    longer = settings.replace(max_caption_tokens=20)
    assert pair_flops(cls, longer, facts) > whole  # the captions' tokens are in the count


def test_dry_run_prints_the_compute_of_a_step(tiny_models, demo_dataset, tmp_path, capsys):
    from idc_toolkit.cli.train import main

    assert main(["--model", "blip2idc", "--dataset", str(demo_dataset), "--out", str(tmp_path / "never"),
                 "--base-model", str(tiny_models("blip2")), "--batch-size", "4", "--grad-accum", "2", "--dry-run",
                 "--device", "cpu"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("- compute:"))
    scale = {"PFLOP": 1e15, "TFLOP": 1e12, "GFLOP": 1e9, "MFLOP": 1e6, "FLOP": 1}
    words = line.replace(",", "").split()
    per_pair, per_step = (float(w) * scale[words[k + 1]] for k, w in enumerate(words) if w.replace(".", "").isdigit())
    assert per_pair > 0 and per_step == pytest.approx(8 * per_pair, rel=0.01)  # batch 4 x 2 accumulated
    assert not (tmp_path / "never").exists()

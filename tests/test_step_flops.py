"""``benchmarks/train_speed.py``'s FLOP count of a training step (its MFU column): the count on
slices, extrapolated to the real depth, equals torch's FLOP counter run on the whole model."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import train_speed  # noqa: E402


def whole_model_flops(name: str, base: Path) -> int:
    """The reference: forward, caption loss and backward of one pair through the whole model."""
    import transformers
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig

    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.adapters import wrap_lora
    from idc_toolkit.models.recipe import caption_loss_sum
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run
    from idc_toolkit.training.estimate import probe_batch, prompt_tokens

    cls = get_recipe_class(name)
    facts = DatasetFacts(builder="clevr_change", pair_style="scene")
    settings = resolve_run(cls, facts, TrainArgs(name, dataset="data", out="run", base_model=str(base), batch_size=1,
                                                 dtype="bfloat16", val_split=None)).replace(max_caption_tokens=7)
    config = AutoConfig.from_pretrained(base)
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = getattr(transformers, cls.model_class)(config)
    finally:
        torch.set_default_dtype(torch.float32)
    recipe = cls(settings, facts)
    recipe.prepare(model)
    net = wrap_lora(model, recipe.lora_config(model))
    net.train()
    inputs = probe_batch(cls, settings, config, torch.bfloat16, prompt_tokens(recipe, settings))
    labels = inputs.pop("labels")
    with FlopCounterMode(display=False) as counter:
        caption_loss_sum(net(**inputs).logits, labels)[0].backward()
    return counter.get_total_flops()


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
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(train_speed, "mean_caption_tokens", lambda tokenizer, folder: 7)
    counted = train_speed.step_flops(name, str(base), str(data), 1)
    assert counted == whole_model_flops(name, base)
    assert train_speed.step_flops(name, str(base), str(data), 3) == 3 * counted

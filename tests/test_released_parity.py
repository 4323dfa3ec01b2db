"""``idc-train --variant released`` against BLIP2IDC's released ``train_BLIP2IDC.py``.

Measured once, here, and written in (the released code cannot run in this environment):
the released ``train()`` function, unmodified (taken from gautierevn/BLIP2IDC @ aa490f9,
``code_release/train_BLIP2IDC.py``), ran under the library versions it pins (transformers 4.35.0,
peft 0.5.0, installed with ``pip install --target`` and ``PYTHONPATH``; torch of this
environment, ``.cuda()`` as a no-op on CPU) on the fixture ``tests/data/tiny_blip2_opt_v435``, with
``peft.get_peft_model`` and the ``LoraConfig`` its ``initialize_model_with_lora`` builds (r 8,
alpha 16, dropout 0.05, its target modules), ``tokenizer.pad_token = tokenizer.eos_token``, one
batch of the two captions below (``args.dataset = "clevr"``: ``random.choice`` of a single
reference) and pixel values ``torch.manual_seed(0); torch.randn(2, 3, 32, 32)``. Its first step
computed loss 5.546403884887695 on the input ids written below (``tokenizer.encode(...,
max_length=30, padding="max_length", truncation=True)``).
"""

import pytest

torch = pytest.importorskip("torch")

from pathlib import Path  # noqa: E402

from idc_toolkit.facts import DatasetFacts  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "tiny_blip2_opt_v435"
CAPTIONS = ["the red cube has moved", "the small gray metal cylinder that was behind the big yellow rubber sphere has been "
            "moved to the left of the cyan cube"]
RELEASED_LOSS = 5.546403884887695
RELEASED_IDS = [
    [2, 16, 181, 245, 37, 138, 245, 10, 37, 229, 108, 146, 245, 37, 181, 72, 104, 37, 23, 76, 178, 245, 10, 2, 2, 2, 2, 2, 2, 2],
    [2, 16, 181, 245, 37, 104, 23, 72, 196, 196, 37, 208, 138, 72, 118, 37, 23, 245, 16, 72, 196, 37, 229, 118, 196, 56, 12, 10,
     245, 138],
]


def _first_loss(variant: str):
    from PIL import Image
    from peft import get_peft_model

    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run
    from idc_toolkit.models.recipe import caption_loss_sum

    cls = get_recipe_class("blip2idc")
    facts = DatasetFacts(builder="clevr_change", pair_style="scene")
    s = resolve_run(cls, facts, TrainArgs("blip2idc", dataset="data", out="run", variant=variant, base_model=str(FIXTURE),
                                               batch_size=2, lora_rank=8, dtype="float32", val_split=None))
    recipe = cls(s, facts)
    model = recipe.load(torch.float32)
    net = get_peft_model(model, recipe.lora_config(model)).train()
    img = Image.new("RGB", (16, 16))
    batch = recipe.collate([{"pair_id": str(i), "before": img, "after": img, "captions": [c], "__index": i, "__epoch": 0}
                            for i, c in enumerate(CAPTIONS)])
    torch.manual_seed(0)
    batch["pixel_values"] = torch.randn(2, 3, 32, 32)
    labels = batch.pop("labels")
    total, count = caption_loss_sum(net(**batch).logits, labels)
    return float(total.detach()) / count, batch["input_ids"], recipe.n_query


def test_first_step_loss_equals_the_released_scripts():
    loss, ids, n_query = _first_loss("released")
    assert ids[:, n_query:].tolist() == RELEASED_IDS  # the same tokens, padding with EOS, truncated without EOS
    assert loss == pytest.approx(RELEASED_LOSS, abs=2e-6)  # measured: |difference| 7.2e-7 (float32 op order)


def test_our_variant_trains_on_other_targets():
    """The default variant masks the padding and ends every caption with EOS: another loss."""
    loss, ids, n_query = _first_loss("ours")
    assert abs(loss - RELEASED_LOSS) > 1e-2

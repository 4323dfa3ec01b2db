"""``idc-caption BEFORE AFTER``: one pair captioned by the runner idc-eval --model uses, so the
caption equals the one idc-eval writes for that pair (a demo test pair, its images written out as
PNG files: lossless), for a VLM and for BLIP2IDC with an adapter; ``--mask`` writes the toolkit's
change mask; DAVIR with the pair's entities given, and refused in one line without them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.cli.caption import main as caption_main
from idc_toolkit.cli.eval import main as eval_main


@pytest.fixture(scope="module")
def pair(demo_dataset, tmp_path_factory):
    from datasets import load_dataset

    row = load_dataset(str(demo_dataset), split="test")[0]
    folder = tmp_path_factory.mktemp("pair")
    row["before"].save(folder / "before.png")
    row["after"].save(folder / "after.png")
    return row["pair_id"], folder / "before.png", folder / "after.png"


def _from_idc_eval(demo_dataset, out, argv):
    assert eval_main(["--dataset", str(demo_dataset), "--out", str(out), "--predict-only", "--no-progress",
                      "--limit", "1", *argv]) == 0
    return json.loads((out / "predictions.jsonl").read_text().splitlines()[0])


@pytest.mark.parametrize("model", ["vlm", "blip2idc"])
def test_one_pair_is_captioned_as_idc_eval_captions_it(model, pair, demo_dataset, tiny_models, tmp_path, capsys):
    pid, before, after = pair
    if model == "vlm":
        argv = ["--model", "vlm", "--base-model", str(tiny_models("qwen2_vl")), "--device", "cpu", "--max-new-tokens", "6"]
    else:
        from idc_toolkit.demo.tiny import blip2idc_targets, save_lora_adapter
        from transformers import Blip2ForConditionalGeneration

        base = tiny_models("blip2")
        model_ = Blip2ForConditionalGeneration.from_pretrained(base)
        save_lora_adapter(model_, tmp_path / "adapter", blip2idc_targets(model_.config.qformer_config.num_hidden_layers),
                          base_name=str(base))
        argv = ["--model", "blip2idc", "--base-model", str(base), "--adapter", str(tmp_path / "adapter"), "--device", "cpu"]
    expected = _from_idc_eval(demo_dataset, tmp_path / "eval", argv)
    assert expected["pair_id"] == pid
    capsys.readouterr()
    assert caption_main([str(before), str(after), *argv, "--mask", str(tmp_path / "mask.png")]) == 0
    assert capsys.readouterr().out == expected["caption"] + "\n"
    from idc_toolkit.masks.diff import compute_change_mask

    written = np.asarray(Image.open(tmp_path / "mask.png")) > 127
    assert (written == compute_change_mask(Image.open(before).convert("RGB"), Image.open(after).convert("RGB")).mask).all()


def test_davir_with_the_entities_idc_eval_read_for_the_pair(pair, davir_dataset, tiny_models, tmp_path, capsys):
    """DAVIR's prompt names the pair's entities: given as the dataset holds them, the caption is idc-eval's."""
    from datasets import load_dataset

    pid, before, after = pair
    row = load_dataset(str(davir_dataset), split="test")[0]
    assert row["pair_id"] == pid and row["entities"]
    argv = ["--model", "davir", "--base-model", str(tiny_models("iblip")), "--device", "cpu", "--num-entities", "2"]
    expected = _from_idc_eval(davir_dataset, tmp_path / "eval", argv)
    capsys.readouterr()
    assert caption_main([str(before), str(after), *argv, "--entities", ", ".join(row["entities"])]) == 0
    assert capsys.readouterr().out == expected["caption"] + "\n"


def test_davir_without_entities_and_a_missing_image_are_refused_in_one_line(pair, tmp_path, capsys):
    _, before, after = pair
    assert caption_main([str(before), str(after), "--model", "davir", "--base-model", "x"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("idc-caption: error: --model davir prompts with the pair's change entities: pass --entities") \
        and "\n" not in err
    assert caption_main([str(before), str(tmp_path / "nope.png"), "--model", "vlm", "--base-model", "x"]) == 1
    assert capsys.readouterr().err.strip() == f"idc-caption: error: {tmp_path / 'nope.png'}: no such image file"

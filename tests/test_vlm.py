"""``idc-eval --model vlm``: tiny random Qwen2-VL, LLaVA-OneVision and Idefics3 checkpoints, each
with a byte-level tokenizer carrying a chat template in its real model's style."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.errors import IDCError
from idc_toolkit.facts import DatasetFacts

ARCHITECTURES = ("qwen2_vl", "llava_onevision", "idefics3")


@pytest.fixture(scope="module")
def vlms(tiny_models):
    return {arch: tiny_models(arch) for arch in ARCHITECTURES}


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))


def _rows(sizes) -> list[dict]:
    return [{"pair_id": f"p{k}", "before": _image(2 * k, size), "after": _image(2 * k + 1, size)} for k, size in enumerate(sizes)]


def test_clean_answer_keeps_one_sentence():
    from idc_toolkit.models.vlm import clean_answer

    assert clean_answer("\n  Assistant: The red cube has moved to the left. It was small.\nMore") == "The red cube has moved to the left."
    assert clean_answer('- "A man was added."') == "A man was added."
    assert clean_answer("1. the dog is gone") == "the dog is gone"
    assert clean_answer("Nothing changed at 3.5 m. Really") == "Nothing changed at 3.5 m."
    assert clean_answer("   \n\n") == ""


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_prompt_holds_two_images_before_then_after(vlms, arch):
    """On the processor's output: two image placeholders, both before the instruction, and the
    before image's pixels first."""
    from transformers import AutoProcessor

    from idc_toolkit.models.vlm import PROMPTS, VlmInputs

    processor = AutoProcessor.from_pretrained(vlms[arch])
    inputs = VlmInputs(processor, PROMPTS["scene"], single_image=False)
    text = inputs.text()
    placeholder = {"qwen2_vl": "<|image_pad|>", "llava_onevision": "<image>", "idefics3": "<image>"}[arch]
    assert text.count(placeholder) == 2 and text.rindex(placeholder) < text.index(PROMPTS["scene"])
    black, white = Image.new("RGB", (40, 40), (0, 0, 0)), Image.new("RGB", (40, 40), (255, 255, 255))
    batch = inputs.build([{"pair_id": "p", "before": black, "after": white}])
    rendered = processor.tokenizer.decode(batch["input_ids"][0])
    assert rendered.index(PROMPTS["scene"][:30]) > rendered.rindex(placeholder)
    # every layout (Qwen2-VL's patch rows, LLaVA-OneVision's images, Idefics3's per-sample images) keeps
    # the images in prompt order: the first half of the pixels is the before image (black), the second the after
    pixels = batch["pixel_values"].flatten()
    half = pixels.numel() // 2
    assert pixels[:half].max() < pixels[half:].min()
    one = VlmInputs(processor, "x", single_image=True)
    assert one.text().count(placeholder) == 1  # --single-image: one image (the stacked pair) per pair
    stacked = one.build([{"pair_id": "p", "before": black, "after": white}])
    if "image_grid_thw" in batch:  # Qwen2-VL: one image's patch grid, not two (its token count follows the pixels)
        assert stacked["image_grid_thw"].shape[0] == 1 and batch["image_grid_thw"].shape[0] == 2
    else:
        assert stacked["input_ids"].shape[1] < batch["input_ids"].shape[1]  # one image's tokens, not two


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_a_batch_answers_what_one_pair_at_a_time_answers(vlms, arch):
    from idc_toolkit.models.vlm import VlmRunner

    runner = VlmRunner(str(vlms[arch]), None, "cpu", "float32", DatasetFacts(pair_style="scene"), max_new_tokens=6)
    rows = _rows([(40, 30), (56, 56), (28, 50)])  # sizes that tokenise to different lengths (Qwen2-VL): left padding
    batch = runner.inputs.build(rows)
    if arch == "qwen2_vl":
        assert (batch["attention_mask"] == 0).any()  # the batch really is padded
    together = runner.inputs.answers(runner.model, rows)
    assert together == [runner.inputs.answers(runner.model, [r])[0] for r in rows]
    assert all(isinstance(a, str) and a for a in together)
    if arch == "llava_onevision":  # a tokenizer shipped without a pad token (Llama-family chat models) pads with EOS
        from transformers import AutoProcessor

        from idc_toolkit.models.vlm import PROMPTS, VlmInputs

        processor = AutoProcessor.from_pretrained(vlms[arch])
        processor.tokenizer.pad_token = None
        inputs = VlmInputs(processor, PROMPTS["scene"], single_image=False)
        assert processor.tokenizer.pad_token == processor.tokenizer.eos_token and inputs.build(rows)["input_ids"].shape[0] == 3


def test_prompt_presets_follow_the_card_and_unknown_styles_are_refused(tmp_path):
    from idc_toolkit.models.vlm import PROMPTS, STACKED_PROMPTS, VlmRunner, read_prompt_file

    resolve = VlmRunner.resolve_prompt
    levir = DatasetFacts(builder="levir_cc", pair_style="scene", prompt_preset="remote_sensing")
    assert resolve(levir, None, None, False, "d") == PROMPTS["remote_sensing"]
    # a LEVIR-CC card written before the fact existed means the same; the facts a build writes say it
    old_card = DatasetFacts.from_card({"builder": "levir_cc", "pair_style": "scene"})
    assert resolve(old_card, None, None, False, "d") == PROMPTS["remote_sensing"]
    from idc_toolkit.builders import make_builder

    assert make_builder("levir_cc", tmp_path).facts().prompt_preset == "remote_sensing"
    assert make_builder("ier", tmp_path).facts().train_reference == "shortest"
    assert resolve(DatasetFacts(builder="emu_edit", pair_style="edit"), None, None, True, "d") == STACKED_PROMPTS["edit"]
    assert resolve(DatasetFacts(), "Say what changed.", None, False, "d") == "Say what changed."
    with pytest.raises(IDCError, match="records no pair style.*--prompt-preset"):
        resolve(DatasetFacts(), None, None, False, "d")
    (tmp_path / "p.txt").write_text("  Describe the change.\n")
    assert read_prompt_file(str(tmp_path / "p.txt")) == "Describe the change."
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(IDCError, match="empty"):
        read_prompt_file(str(tmp_path / "empty.txt"))


#: idc-eval with each batch held 0.3 s longer: the tiny model writes its five parts faster than
#: the parent's poll can kill it after the second (a kill that lands after the last part proves nothing)
CHILD = """
import sys, time
from idc_toolkit.models.vlm import VlmRunner
generate = VlmRunner.generate
def slow(self, rows):
    out = generate(self, rows)
    time.sleep(0.3)
    return out
VlmRunner.generate = slow
from idc_toolkit.cli.eval import main
sys.exit(main(sys.argv[1:]))
"""


def test_shards_and_a_kill_9_give_the_uninterrupted_file(vlms, demo_dataset, tmp_path):
    from idc_toolkit.models.args import GenerateArgs
    from idc_toolkit.models.generation import generate_predictions
    from idc_toolkit.models.vlm import ANSWER_RULE, PROMPTS, VlmRunner

    def args(out):
        return ["--model", "vlm", "--base-model", str(vlms["qwen2_vl"]), "--dataset", str(demo_dataset), "--split", "test",
                "--out", str(out), "--device", "cpu", "--batch-size", "2", "--max-new-tokens", "6", "--predict-only", "--no-progress"]

    options = {"prompt": None, "prompt_preset": None, "single_image": False, "max_new_tokens": 6}
    run = GenerateArgs(base_model=str(vlms["qwen2_vl"]), device="cpu", batch_size=2)
    whole = generate_predictions(VlmRunner, run, dataset=str(demo_dataset), split="test", out_dir=tmp_path / "whole",
                                 options=options, progress=False)
    # --shard jobs of one folder: the first leaves no predictions, the one that completes the set writes them
    from idc_toolkit.cli.eval import main

    sharded = tmp_path / "sharded"
    assert main([*args(sharded), "--shard", "1/2"]) == 0 and not (sharded / "predictions.jsonl").exists()
    assert main([*args(sharded), "--shard", "0/2"]) == 0
    assert (sharded / "predictions.jsonl").read_bytes() == whole.read_bytes()
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *args(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts = killed / ".idc_run" / "parts" / "test"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and len(list(parts.glob("*.json"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "predictions.jsonl").exists() and 2 <= len(list(parts.glob("*.json"))) < 5  # killed mid-way
    assert main(args(killed)) == 0
    assert (killed / "predictions.jsonl").read_bytes() == whole.read_bytes()
    model = json.loads((killed / "model.json").read_text())
    assert model["prompt"] == PROMPTS["scene"] and model["answer_cleaning"] == ANSWER_RULE
    assert model["preprocess"] == "two images in one user turn: before, then after"


def test_tiny_byte_level_tokenizers_are_the_same_in_every_process():
    """The byte symbols' ids do not follow the process's string hashing: a tiny model decoded
    other text in another test session (one run's Qwen2-VL answered an empty string)."""
    import os
    import subprocess
    import sys

    code = ("import json; from idc_toolkit.demo.tiny import tiny_tokenizer; "
            "print(json.dumps(tiny_tokenizer().get_vocab(), sort_keys=True))")
    vocabs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(vocabs) == 1

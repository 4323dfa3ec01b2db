"""Checkpoint evaluators end to end with tiny random BLIP-2 / InstructBLIP models and LoRA
adapters saved to temp dirs (safetensors, and the old adapter_model.bin format)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.cli.eval import main as eval_main
from idc_toolkit.errors import IDCError

from conftest import image_size, ranks_stderr

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_models):
    import os

    from transformers import Blip2ForConditionalGeneration, InstructBlipForConditionalGeneration

    from idc_toolkit.demo.tiny import blip2idc_targets, davir_targets, save_lora_adapter

    root = tmp_path_factory.mktemp("models")
    for name in ("blip2", "iblip"):  # the session's shared bases, linked (this module only reads them)
        os.symlink(tiny_models(name), root / name)
    blip2, iblip = root / "blip2", root / "iblip"
    # each adapter names the base it was made from, as a trained one does (no base-name warning)
    save_lora_adapter(Blip2ForConditionalGeneration.from_pretrained(blip2), root / "lora_new", blip2idc_targets(12),
                      base_name=str(blip2))
    save_lora_adapter(Blip2ForConditionalGeneration.from_pretrained(blip2), root / "lora_old", blip2idc_targets(12), old_format=True,
                      base_name=str(blip2))
    save_lora_adapter(InstructBlipForConditionalGeneration.from_pretrained(iblip), root / "lora_davir", davir_targets(),
                      base_name=str(iblip))
    return root


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_stacked_pair_matches_a_hand_built_image():
    from idc_toolkit.models.pairs import stacked_pair

    before = Image.new("RGB", (4, 3), (255, 0, 0))
    after = Image.new("RGB", (4, 2), (0, 0, 255))
    expected = np.zeros((5, 4, 3), dtype=np.uint8)
    expected[:3] = (255, 0, 0)
    expected[3:] = (0, 0, 255)
    assert np.array_equal(np.asarray(stacked_pair(before, after)), expected)


def test_resize_and_blur_for_editing_datasets_is_reproducible():
    import random

    import torchvision.transforms.functional as TF

    from idc_toolkit.models.pairs import pair_seed, stacked_pair

    rng = np.random.default_rng(0)
    before = Image.fromarray(rng.integers(0, 255, (10, 7, 3), dtype=np.uint8))
    after = Image.fromarray(rng.integers(0, 255, (6, 8, 3), dtype=np.uint8))
    out = stacked_pair(before, after, resize_blur=True, pair_id="Reddit_1")
    assert out.size == (8, 12) and np.array_equal(np.asarray(out), np.asarray(stacked_pair(before, after, True, "Reddit_1")))
    sigma = random.Random(pair_seed("Reddit_1")).uniform(0.1, 0.5)
    assert 0.1 <= sigma <= 0.5
    plain = stacked_pair(before.resize(after.size, Image.BICUBIC), after)
    assert np.array_equal(np.asarray(out), np.asarray(TF.gaussian_blur(plain, [3, 3], [sigma, sigma])))


@pytest.mark.parametrize("adapter", ["lora_new", "lora_old"])
def test_blip2idc_end_to_end(models, demo_dataset, tmp_path, adapter):
    out = tmp_path / "eval"
    assert eval_main(["--model", "blip2idc", "--base-model", str(models / "blip2"), "--adapter", str(models / adapter),
                      "--dataset", str(demo_dataset), "--out", str(out), "--device", "cpu", "--batch-size", "4",
                      "--metrics", "BLEU", "CIDEr"]) == 0
    preds = _lines(out / "predictions.jsonl")
    assert len(preds) == 10 and len({p["pair_id"] for p in preds}) == 10
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 10 and "distractor" in metrics["by_category"] and "change_only" in metrics
    assert json.loads((out / "model.json").read_text())["adapter"].endswith(adapter)


def test_adapter_changes_the_model(models):
    import torch
    from transformers import Blip2ForConditionalGeneration

    from idc_toolkit.models.adapters import apply_adapter

    base = Blip2ForConditionalGeneration.from_pretrained(models / "blip2")
    name = "language_model.model.decoder.layers.0.self_attn.q_proj.weight"
    before = dict(base.named_parameters())[name].detach().clone()
    merged_new = apply_adapter(base, models / "lora_new", str(models / "blip2"))
    merged_old = apply_adapter(Blip2ForConditionalGeneration.from_pretrained(models / "blip2"), models / "lora_old", str(models / "blip2"))
    w_new, w_old = dict(merged_new.named_parameters())[name], dict(merged_old.named_parameters())[name]
    assert not torch.equal(before, w_new) and not torch.equal(before, w_old)
    # the merge is W + (alpha / r) B A, computed here by hand from the adapter's own tensors
    from idc_toolkit.models.adapters import read_adapter

    for adapter, merged in (("lora_new", w_new), ("lora_old", w_old)):
        config, state = read_adapter(models / adapter)
        module = name[: -len(".weight")]
        a = next(v for k, v in state.items() if module in k and "lora_A" in k)
        b = next(v for k, v in state.items() if module in k and "lora_B" in k)
        expected = before + (b @ a) * (config["lora_alpha"] / config["r"])
        assert torch.allclose(merged, expected, atol=1e-6), adapter


def test_generation_resumes_without_regenerating(models, demo_dataset, tmp_path, monkeypatch):
    from idc_toolkit.models.blip2idc import Blip2IDCRunner

    out = tmp_path / "eval"
    calls = []
    original = Blip2IDCRunner.generate

    class Interrupted(Exception):
        pass

    def flaky(self, rows):
        calls.append([r["pair_id"] for r in rows])
        if len(calls) == 2:
            raise Interrupted
        return original(self, rows)

    monkeypatch.setattr(Blip2IDCRunner, "generate", flaky)
    args = ["--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--out", str(out),
            "--device", "cpu", "--batch-size", "3", "--predict-only", "--no-progress"]
    with pytest.raises(Interrupted):
        eval_main(args)
    assert not (out / "predictions.jsonl").exists()  # written whole, in dataset order, once every part is there
    first = calls[0]
    calls.clear()
    monkeypatch.setattr(Blip2IDCRunner, "generate", lambda self, rows: calls.append([r["pair_id"] for r in rows]) or original(self, rows))
    assert eval_main(args) == 0
    regenerated = [pid for batch in calls for pid in batch]
    assert not set(regenerated) & set(first) and len(regenerated) == 10 - len(first)
    assert [p["pair_id"] for p in _lines(out / "predictions.jsonl")][:3] == first


def test_reverse_captions_the_swapped_pairs_and_scores_reversibility(models, demo_dataset, tmp_path, monkeypatch):
    """``--reverse``: every pair is captioned a second time with before and after exchanged (into
    OUT/reversed/), and Reverse_ROUGE_L is the inverted-caption overlap of the two files."""
    import numpy as np

    from idc_toolkit.metrics.reverse import reverse_overlap
    from idc_toolkit.models.blip2idc import Blip2IDCRunner

    seen: dict[str, list] = {}
    original = Blip2IDCRunner.generate

    def spy(self, rows):
        for r in rows:
            seen.setdefault(r["pair_id"], []).append((r["before"].tobytes(), r["after"].tobytes()))
        return original(self, rows)

    monkeypatch.setattr(Blip2IDCRunner, "generate", spy)
    out = tmp_path / "eval"
    assert eval_main(["--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset),
                      "--out", str(out), "--device", "cpu", "--batch-size", "5", "--metrics", "BLEU", "--reverse",
                      "--no-progress"]) == 0
    assert len(seen) == 10 and all(back == (fwd[1], fwd[0]) and fwd[0] != fwd[1] for fwd, back in seen.values())
    forward = {p["pair_id"]: p["caption"] for p in _lines(out / "predictions.jsonl")}
    backward = {p["pair_id"]: p["caption"] for p in _lines(out / "reversed" / "predictions.jsonl")}
    assert json.loads((out / "reversed" / "model.json").read_text())["swapped"] is True
    ids = list(forward)
    values = reverse_overlap([forward[i] for i in ids], [backward[i] for i in ids])
    defined = values[~np.isnan(values)]  # pairs whose A -> B caption names a direction
    expected = float(defined.mean()) if defined.size else None
    assert json.loads((out / "metrics.json").read_text())["overall"]["Reverse_ROUGE_L"] == pytest.approx(expected)


def test_another_model_into_the_same_out_is_refused_naming_the_difference(models, demo_dataset, tmp_path, capsys):
    base = ["--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--device", "cpu",
            "--batch-size", "5", "--predict-only", "--no-progress", "--out", str(tmp_path / "eval")]
    assert eval_main([*base, "--adapter", str(models / "lora_new")]) == 0
    first = (tmp_path / "eval" / "predictions.jsonl").read_text()
    assert eval_main(base) == 1  # the same base without the adapter
    err = capsys.readouterr().err
    assert "holds a blip2idc generation run with other settings" in err and "adapter:" in err and "--overwrite" in err
    assert (tmp_path / "eval" / "predictions.jsonl").read_text() == first
    assert json.loads((tmp_path / "eval" / "model.json").read_text())["adapter"].endswith("lora_new")
    assert eval_main([*base, "--adapter", str(models / "lora_new")]) == 0  # same settings: nothing to do


#: imported by every rank of the command below (sitecustomize): rank 1 reads the finished parts
#: late, as a loaded machine makes it, after rank 0 could have finalised (moved) them
SLOW_RANK = """
import os, time
if os.environ.get("RANK") == "1":
    import idc_toolkit.runs.engine as engine
    calls, missing = [], engine._missing
    def late(folder, parts):
        calls.append(1)
        if len(calls) == 2:  # the second look: whether the run is complete
            time.sleep(3)
        return missing(folder, parts)
    engine._missing = late
"""


def test_a_rank_slow_to_check_the_parts_still_finds_them(models, demo_dataset, tmp_path):
    """Every rank reads the parts before rank 0 finalises them: a slow rank 1 no longer finds the
    parts gone and refuses "part(s) missing" (the README's torchrun command on a loaded machine)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_RANK)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "idc_toolkit.cli.eval",
           "--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--device", "cpu",
           "--batch-size", "2", "--predict-only", "--no-progress", "--out", str(tmp_path / "multi")]
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, ranks_stderr(proc.stderr)
    assert len((tmp_path / "multi" / "predictions.jsonl").read_text().splitlines()) == 10


def test_torchrun_ranks_write_and_score_what_one_process_does(models, tiny_models, demo_dataset, tmp_path):
    """The README's ``torchrun ... idc-eval --model`` with scoring: rank 0 scores alone after every
    rank generated (its evaluation folder takes no barrier the other ranks would have to meet);
    with ``--judge``, every rank judges its block of the pairs first."""
    base = ["--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--device", "cpu",
            "--batch-size", "2", "--metrics", "BLEU", "CIDEr", "--no-progress", "--judge", str(tiny_models("chat")),
            "--judge-device", "cpu"]
    assert eval_main([*base, "--out", str(tmp_path / "single")]) == 0
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "idc_toolkit.cli.eval",
           *base, "--out", str(tmp_path / "multi")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, ranks_stderr(proc.stderr)
    assert (tmp_path / "multi" / "predictions.jsonl").read_text() == (tmp_path / "single" / "predictions.jsonl").read_text()
    single, multi = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("single", "multi"))
    assert multi["overall"] == single["overall"] and "CIDEr" in json.dumps(multi["overall"])
    assert "Judge_hallucination" in multi["overall"]
    judged = [(tmp_path / d / "judge" / "judgements.jsonl").read_text() for d in ("single", "multi")]
    assert judged[0] == judged[1] and judged[0].count("\n") == len(_lines(tmp_path / "single" / "predictions.jsonl"))


def test_davir_with_entities_and_attention_maps(models, demo_dataset, tmp_path):
    from idc_toolkit.entities.column import add_change_entities
    from idc_toolkit.models.davir import build_prompt

    assert build_prompt(["red cube", "sphere"], 1) == "Describe the difference between the two images. Entity: red cube."
    config = tmp_path / "tiny-clip-davir.json"
    config.write_text(json.dumps({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8, "head_width": 16},
                                  "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}))
    ents = add_change_entities(demo_dataset, tmp_path / "ents", clip_model="tiny-clip-davir", clip_config=str(config),
                               device="cpu", progress=False, random_weights=True)
    out = tmp_path / "eval"
    assert eval_main(["--model", "davir", "--base-model", str(models / "iblip"), "--adapter", str(models / "lora_davir"),
                      "--dataset", str(ents.out_dir), "--out", str(out), "--device", "cpu", "--batch-size", "4",
                      "--save-attention", str(tmp_path / "att"), "--metrics", "BLEU"]) == 0
    assert len(_lines(out / "predictions.jsonl")) == 10
    maps = sorted((tmp_path / "att").iterdir())
    assert len(maps) == 10 and image_size(maps[0])[0] == 2 * image_size(maps[0])[1] * 4 // 3


def test_bad_inputs_fail_before_any_work(models, demo_dataset, tmp_path, capsys):
    from transformers import Blip2ForConditionalGeneration

    from idc_toolkit.models.adapters import check_adapter, read_adapter

    base = ["--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--device", "cpu"]
    assert eval_main(["--model", "blip2idc", *base, "--adapter", str(tmp_path / "nope"), "--out", str(tmp_path / "a")]) == 1
    assert "adapter folder not found" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert eval_main(["--model", "davir", "--base-model", str(models / "iblip"), "--dataset", str(demo_dataset), "--device", "cpu",
                      "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "no entities column" in err and "run idc-precompute entities first" in err and not (tmp_path / "b").exists()
    import torch

    if not torch.cuda.is_available():
        assert eval_main(["--model", "blip2idc", *base[:-1], "cuda", "--out", str(tmp_path / "c")]) == 1
        assert "CUDA is not available" in capsys.readouterr().err
    model = Blip2ForConditionalGeneration.from_pretrained(models / "blip2")
    config, state = read_adapter(models / "lora_new")
    with pytest.raises(IDCError, match=r"none of its target modules \['nonexistent_proj'\] exists"):
        check_adapter(model, {**config, "target_modules": ["nonexistent_proj"]}, state, "base", "adapter")
    key = next(k for k in state if "lora_A" in k and "q_proj" in k)
    bad = {**state, key: torch.zeros(state[key].shape[0], 7)}
    with pytest.raises(IDCError, match="does not fit input size"):
        check_adapter(model, config, bad, "base", "adapter")
    with pytest.warns(UserWarning, match="was trained on 'Salesforce/blip2-opt-2.7b'"):
        check_adapter(model, {**config, "base_model_name_or_path": "Salesforce/blip2-opt-2.7b"}, state, str(models / "blip2"),
                      "adapter")


def test_model_json_is_complete_after_a_kill_before_finalisation(models, demo_dataset, tmp_path, monkeypatch):
    """Every part written, then killed before finalising: the rerun loads no model and still
    records the runner's preprocessing and decoding in model.json."""
    from idc_toolkit.runs.folder import RunFolder

    original = RunFolder.finalise

    class Killed(Exception):
        pass

    def killed(self, *a, **k):
        raise Killed

    out = tmp_path / "eval"
    args = ["--model", "blip2idc", "--base-model", str(models / "blip2"), "--dataset", str(demo_dataset), "--out", str(out),
            "--device", "cpu", "--batch-size", "5", "--predict-only", "--no-progress"]
    monkeypatch.setattr(RunFolder, "finalise", killed)
    with pytest.raises(Killed):
        eval_main(args)
    monkeypatch.setattr(RunFolder, "finalise", original)
    from idc_toolkit.models.blip2idc import Blip2IDCRunner

    monkeypatch.setattr(Blip2IDCRunner, "__init__", lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded")))
    assert eval_main(args) == 0
    meta = json.loads((out / "model.json").read_text())
    assert meta["preprocess"] == "stacked pair" and meta["generation"].startswith("greedy, max_new_tokens=77")
    assert meta["dtype"] == "torch.float32"


def test_davir_save_attention_on_a_dataset_with_change_masks(models, davir_dataset, tmp_path):
    """The README's example: --save-attention on a dataset that has a change_mask column."""
    assert eval_main(["--model", "davir", "--base-model", str(models / "iblip"), "--dataset", str(davir_dataset),
                      "--out", str(tmp_path / "eval"), "--device", "cpu", "--batch-size", "4", "--limit", "4",
                      "--save-attention", str(tmp_path / "att"), "--metrics", "BLEU"]) == 0
    maps = sorted((tmp_path / "att").iterdir())
    assert len(maps) == 4 and (np.asarray(Image.open(maps[0]))[..., 1] == 255).any()  # the mask outline in green



def test_a_hub_adapter_is_downloaded_at_its_revision_and_fingerprinted_by_content(models, demo_dataset, tmp_path,
                                                                                  monkeypatch):
    """No network here: the Hub's answer is a local copy of the adapter; what is checked is that
    the revision is passed on and that the run records the Hub id and the content hash."""
    import huggingface_hub

    from idc_toolkit.runs import rows

    asked = {}

    def snapshot(repo_id, revision=None, allow_patterns=None, **_):
        asked.update(repo_id=repo_id, revision=revision, patterns=allow_patterns)
        return str(models / "lora_new")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    monkeypatch.setattr(rows, "check_hub_repo", lambda *a, **k: None)
    out = tmp_path / "eval"
    assert eval_main(["--model", "blip2idc", "--base-model", str(models / "blip2"), "--adapter", "someone/blip2idc-lora",
                      "--adapter-revision", "abc123", "--dataset", str(demo_dataset), "--out", str(out), "--device", "cpu",
                      "--batch-size", "5", "--predict-only", "--no-progress"]) == 0
    assert asked == {"repo_id": "someone/blip2idc-lora", "revision": "abc123",
                     "patterns": ["adapter_config.json", "adapter_model.*"]}
    meta = json.loads((out / "model.json").read_text())
    assert meta["adapter"] == "someone/blip2idc-lora" and meta["adapter_revision"] == "abc123"
    from idc_toolkit.runs.fingerprint import path_content

    assert meta["adapter_sha256"] == path_content(models / "lora_new")


def test_a_pickled_base_or_adapter_is_refused_in_one_line(models, demo_dataset, tmp_path, capsys):
    """A base model whose weights are a pickle that would run code, and such an adapter: torch's
    weights_only refuses them (nothing runs), and the toolkit says so in one line."""
    import pickle
    import shutil

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    base = tmp_path / "base"
    shutil.copytree(models / "blip2", base, symlinks=False)
    (base / "model.safetensors").unlink()
    with open(base / "pytorch_model.bin", "wb") as fh:
        pickle.dump(Payload(), fh)
    args = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--device", "cpu", "--limit", "2", "--no-progress"]
    assert eval_main([*args, "--base-model", str(base), "--out", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a plain tensor file" in err and "nothing in it was run" in err, err
    adapter = tmp_path / "adapter"
    shutil.copytree(models / "lora_old", adapter)
    with open(adapter / "adapter_model.bin", "wb") as fh:
        pickle.dump(Payload(), fh)
    assert eval_main([*args, "--base-model", str(models / "blip2"), "--adapter", str(adapter), "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a plain tensor file" in err, err
    assert not marker.exists()


def test_a_processor_of_another_image_size_is_refused(models, demo_dataset, tmp_path, capsys):
    """A processor that makes 224 px images for a vision model built for 56 px (or the reverse)
    is refused before any weight loads: BLIP-2 would otherwise read a grid its position
    embeddings do not describe, silently."""
    import shutil

    from transformers import AutoProcessor

    base = tmp_path / "blip2_224"
    shutil.copytree(models / "blip2", base)
    processor = AutoProcessor.from_pretrained(base)
    processor.image_processor.size = {"height": 224, "width": 224}
    processor.save_pretrained(base)
    assert eval_main(["--model", "blip2idc", "--base-model", str(base), "--dataset", str(demo_dataset), "--device", "cpu",
                      "--out", str(tmp_path / "eval"), "--predict-only", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "its processor makes 224x224 images, its vision model takes 56x56" in err and err.count("\n") == 1

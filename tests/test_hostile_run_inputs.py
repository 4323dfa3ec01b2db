"""Issue #49's run-side hostile inputs (points 3 and 4) and #50's repeated predictions: a secret
setting is never written; every other case ends in one line naming the option and the cause (exit
1, or argparse's 2), with nothing written that claims success, or is handled right."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from idc_toolkit.cli.caption import main as caption_main
from idc_toolkit.cli.eval import main as eval_main
from idc_toolkit.cli.precompute import main as precompute_main
from idc_toolkit.cli.train import main as train_main
from idc_toolkit.cli.view import main as view_main
from idc_toolkit.errors import IDCError

from conftest import csv_rows

SECRET = "SECRETVALUE123"


def _error_line(err: str) -> str:
    """The one error line (argparse's usage lines before it aside); never a traceback."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    return lines[0]


def _refused(main, argv, capsys) -> str:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own error for a value out of range
        code = exc.code
    assert code in (1, 2)
    return _error_line(capsys.readouterr().err)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """A folder dataset of three pairs with change masks: ids ``x y`` and ``x_y-887fcea6`` (which
    cleaned to one file name) and ``one``, a 1x1 pair."""
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.masks.column import add_change_masks

    root = tmp_path_factory.mktemp("pairs")
    raw = root / "raw"
    for side, colour in (("before", (20, 20, 20)), ("after", (20, 20, 20))):
        (raw / side).mkdir(parents=True)
        for name, size in (("x y", (16, 12)), ("x_y-887fcea6", (16, 12)), ("one", (1, 1))):
            image = Image.new("RGB", size, colour)
            if side == "after" and size != (1, 1):
                image.paste((220, 30, 30), (4, 4, 9, 9))
            image.save(raw / side / f"{name}.png")
    built = build_dataset(make_builder("folder", raw), root / "data", progress=False).out_dir
    return {"raw": raw, "data": built, "masks": add_change_masks(built, root / "masks", device="cpu", progress=False).out_dir}


# -- A. secrets -------------------------------------------------------------------------------------------------------

@pytest.mark.java
def test_a_secret_trainer_arg_reaches_the_trainer_and_no_file_or_log(tiny_models, demo_dataset, tmp_path, capfd, monkeypatch):
    """--trainer-arg hub_token=...: the Trainer gets the value; no file of the finished run folder
    (records, card, checkpoints' pickled arguments, the hidden run state), no uploaded file and no
    printed line holds it. A key of a dict-valued setting is masked too."""
    import importlib

    import huggingface_hub

    train_module = importlib.import_module("idc_toolkit.training.train")  # the package's train() hides the module

    seen, uploaded = [], {}
    original = train_module._trainer_class

    def spying():
        cls = original()

        class Spy(cls):
            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                seen.append(self.args.hub_token)

        return Spy

    class FakeApi:
        def create_repo(self, repo, **k):
            pass

        def upload_folder(self, folder_path, repo_id, **k):
            uploaded.update({p.name: p.read_bytes() for p in Path(folder_path).rglob("*") if p.is_file()})

    monkeypatch.setattr(train_module, "_trainer_class", spying)
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    out = tmp_path / "run"
    args = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--base-model", str(tiny_models("blip2")), "--out", str(out),
            "--max-steps", "2", "--save-steps", "1", "--batch-size", "4", "--val-split", "", "--device", "cpu",
            "--report-to", "none", "--no-progress", "--push-to-hub", "me/secret-test", "--trainer-arg", f"hub_token={SECRET}"]
    assert train_main(args) == 0
    assert seen == [SECRET]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "training_args.bin" for p in written) and any(p.name == "README.md" for p in written)
    assert [p for p in written if SECRET.encode() in p.read_bytes()] == []
    assert uploaded and not [n for n, data in uploaded.items() if SECRET.encode() in data]
    assert '"hub_token": "***"' in (out / "train_config.json").read_text()
    captured = capfd.readouterr()
    assert SECRET not in captured.out + captured.err

    from idc_toolkit.runs import RunFolder

    folder = RunFolder(tmp_path / "toy", "toy", {"options": {"nested": [{"api_key": SECRET}], "max_new_tokens": 3}},
                       card_record=False).open()
    assert SECRET not in (folder.state_dir / "run.json").read_text() and folder.fields["options"]["max_new_tokens"] == 3


# -- B. one line each, before any work --------------------------------------------------------------------------------

TRAIN_REFUSED = [
    (["--trainer-arg", "push_to_hub=true"], "--trainer-arg push_to_hub: set by idc-train itself; use --push-to-hub"),
    (["--trainer-arg", "eval_strategy=steps"], "--trainer-arg eval_strategy: set by idc-train itself; use --val-split"),
    (["--trainer-arg", "torch_compile=maybe"], "torch_compile 'maybe': TrainingArguments.torch_compile takes true or false"),
    (["--seeds", "99999999999999999999"], "--seeds: must be at most 4294967295"),
    (["--seed", "4294967296"], "--seed: must be at most 4294967295"),
    (["--base-model", "/etc"], "/etc is a folder without config.json, not a model"),
]


@pytest.mark.parametrize("extra,message", TRAIN_REFUSED, ids=[c[0][1] for c in TRAIN_REFUSED])
def test_idc_train_refuses_in_one_line_before_any_folder(extra, message, tiny_models, demo_dataset, tmp_path, capsys):
    base = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--base-model", str(tiny_models("blip2")),
            "--out", str(tmp_path / "run"), "--max-steps", "1", "--device", "cpu", "--no-progress", "--report-to", "none"]
    assert message in _refused(train_main, [*base, *extra], capsys)
    assert not (tmp_path / "run").exists()


def test_a_vlm_prompt_and_decoding_length_are_checked_before_the_model(tiny_models, demo_raw, tmp_path, capsys, monkeypatch):
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models import vlm

    qwen = tiny_models("qwen2_vl")
    images = sorted((demo_raw / "images").glob("*.png"))[:2]
    base = [str(images[0]), str(images[1]), "--model", "vlm", "--base-model", str(qwen), "--device", "cpu"]
    monkeypatch.setattr(vlm, "load_weights", lambda *a, **k: pytest.fail("the model was loaded"))
    for extra, message in ((["--max-new-tokens", "0"], "--max-new-tokens: must be at least 1"),
                           (["--prompt", ""], "--prompt: the prompt is empty"),
                           (["--prompt", "<image> what changed?"], "holds '<image>', a vision or special token"),
                           (["--prompt", "<|vision_start|>what changed?"], "holds '<|vision_start|>'"),
                           (["--prompt", "what <|image_pad|> changed?"], "holds '<|image_pad|>'"),
                           (["--base-model", "/etc"], "/etc is a folder without config.json")):
        assert message in _refused(caption_main, [*base, *extra], capsys)
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("describe <image>")
    assert "holds '<image>'" in _refused(caption_main, [*base, "--prompt-file", str(prompt_file)], capsys)
    facts = DatasetFacts(pair_style="scene")
    for options, message in (({"prompt": ""}, "the prompt is empty"), ({"max_new_tokens": 0}, "must be at least 1"),
                             ({"prompt": "<image>"}, "vision or special token")):  # the Python API, as idc-eval --model
        with pytest.raises(IDCError, match=message):
            vlm.VlmRunner.check_dataset(facts, ["pair_id", "before", "after"], options, "data [test]")
    special = vlm.special_tokens(__import__("transformers").AutoProcessor.from_pretrained(str(qwen)))
    assert "<|image_pad|>" in special and "<|im_end|>" in special  # what the runner refuses once it has the processor


def test_idc_caption_checks_mask_before_the_caption_and_notes_an_empty_caption(tiny_models, demo_raw, tmp_path, capsys,
                                                                                monkeypatch):
    import idc_toolkit.caption as caption_module
    from idc_toolkit.models import generation

    images = sorted((demo_raw / "images").glob("*.png"))[:2]
    base = [str(images[0]), str(images[1]), "--model", "blip2idc", "--base-model", str(tiny_models("blip2")), "--device", "cpu"]
    monkeypatch.setattr(generation, "generate_predictions", lambda *a, **k: pytest.fail("the caption was computed"))
    (tmp_path / "folder").mkdir()
    for mask, message in ((tmp_path / "folder", "a folder; name the PNG file"), (tmp_path / "m.jpg", "written as PNG"),
                          (tmp_path / "nope" / "m.png", "does not exist")):
        assert message in _refused(caption_main, [*base, "--mask", str(mask)], capsys)
    monkeypatch.setattr(caption_module, "caption", lambda *a, **k: "")
    capsys.readouterr()
    assert caption_main(base) == 0
    out, err = capsys.readouterr()
    assert out == "\n" and _error_line(err) == "idc-caption: note: blip2idc wrote an empty caption for this pair"


def test_a_card_with_a_yaml_tag_and_a_huge_dpi_are_one_line(demo_dataset, tmp_path, capsys):
    from idc_toolkit.viewer.figure import write_figure

    tagged = tmp_path / "tagged"
    shutil.copytree(demo_dataset, tagged)
    card = (tagged / "README.md").read_text()
    (tagged / "README.md").write_text(card.replace("---\n", "---\nevil: !!python/object/apply:os.system ['echo PWNED']\n", 1))
    for argv in (["--dataset", str(tagged), "--out", str(tmp_path / "site"), "--no-progress"],
                 ["figure", "--dataset", str(tagged), "--out", str(tmp_path / "fig")]):
        line = _refused(view_main, argv, capsys)
        assert "README.md, line 2: the card's YAML cannot be read" in line and "python/object" in line
    assert not (tmp_path / "site").exists() and not (tmp_path / "fig").exists()
    assert "--dpi: must be at most 1200" in _refused(view_main, ["figure", "--dataset", str(demo_dataset), "--out",
                                                                str(tmp_path / "fig"), "--dpi", "100000"], capsys)
    with pytest.raises(IDCError, match="must be at most 1200"):
        write_figure(tmp_path / "fig", dataset=str(demo_dataset), dpi=100000)
    with pytest.raises(IDCError, match="figure.png would be 120000 x"):
        write_figure(tmp_path / "fig", dataset=str(demo_dataset), dpi=1200, width=100)
    assert not (tmp_path / "fig").exists()


def test_a_raw_release_as_dataset_says_to_run_idc_build(demo_raw, tiny_models, tmp_path, capsys):
    raw = str(demo_raw)
    for main, argv in ((precompute_main, ["masks", "--dataset", raw, "--out", str(tmp_path / "m")]),
                       (train_main, ["--model", "blip2idc", "--dataset", raw, "--base-model", str(tiny_models("blip2")),
                                     "--out", str(tmp_path / "t"), "--device", "cpu"]),
                       (eval_main, ["masks", "--dataset", raw, "--reference", "change_mask"]),
                       (view_main, ["--dataset", raw, "--out", str(tmp_path / "v")])):
        line = _refused(main, argv, capsys)
        assert "a raw release or another folder, not a dataset idc-build wrote" in line and "run idc-build" in line
    assert not any((tmp_path / n).exists() for n in "mtv")


# -- B. handled right -------------------------------------------------------------------------------------------------

def test_a_1x1_pair_gets_its_mask_and_ids_never_share_a_picture(pairs, tmp_path):
    from datasets import load_dataset

    from idc_toolkit.files import file_name_for
    from idc_toolkit.viewer.site import write_site

    rows = {r["pair_id"]: r for r in load_dataset(str(pairs["masks"]), split="test")}
    assert rows["one"]["change_mask"].size == (1, 1) and rows["x y"]["change_mask"].size == (16, 12)
    assert file_name_for("x y", ".png") != file_name_for("x_y-887fcea6", ".png")
    assert file_name_for("x y").startswith("x_y-") and file_name_for("plain").startswith("plain-")
    site = write_site(tmp_path / "site", dataset=str(pairs["masks"]), progress=False)
    pictures = [p.name for p in (site.out_dir / "img" / file_name_for("test")).iterdir()]
    before = [n for n in pictures if n.startswith("x_y") and n.endswith("_b.jpg")]  # each id its own before picture
    assert len(before) == 2, pictures


def test_idc_eval_masks_keeps_a_users_files_and_reads_only_label_maps(pairs, tmp_path, capsys):
    data = str(pairs["masks"])
    own = tmp_path / "own"
    own.mkdir()
    (own / "masks.json").write_text('{"mine": true}')
    assert "holds masks.json without the record of an idc-toolkit run" in _refused(
        eval_main, ["masks", "--dataset", data, "--reference", "change_mask", "--out", str(own)], capsys)
    assert (own / "masks.json").read_text() == '{"mine": true}' and not (own / "masks.md").exists()
    (tmp_path / "afile").write_text("x")
    jpeg = tmp_path / "jpeg"
    jpeg.mkdir()
    for pid in ("x y", "x_y-887fcea6", "one"):
        Image.new("L", (16, 12)).save(jpeg / f"{pid}.png", "JPEG")
    for extra, message in ((["--reference", "before"], "--reference before: the pair's before photograph, not a label map"),
                           (["--reference", "captions"], "--reference captions: "),
                           (["--reference", "change_mask", "--predicted", str(jpeg)], "is not a PNG file"),
                           (["--reference", "change_mask", "--out", str(tmp_path / "afile")], "is a file, not a folder")):
        assert message in _refused(eval_main, ["masks", "--dataset", data, *extra], capsys)
    photos = tmp_path / "photos"
    photos.mkdir()
    for pid in ("x y", "x_y-887fcea6", "one"):
        Image.effect_noise((16, 12), 80).convert("RGB").save(photos / f"{pid}.png")
    assert "values up to" in _refused(eval_main, ["masks", "--dataset", data, "--reference", str(photos),
                                                  "--predicted", str(photos)], capsys)
    out = tmp_path / "ok"
    assert eval_main(["masks", "--dataset", data, "--reference", "change_mask", "--out", str(out)]) == 0
    assert json.loads((out / "masks.json").read_text())["meta"]["pairs"] == 3
    assert "other settings (seed: 0 -> 1)" in _refused(
        eval_main, ["masks", "--dataset", data, "--reference", "change_mask", "--out", str(out), "--seed", "1"], capsys)


def test_train_loss_is_the_whole_runs_after_a_resume(tiny_models, demo_dataset, tmp_path):
    """A run stopped after step 3 (its checkpoint: step 2) and run again records the loss of all
    its steps, as the run that was never stopped does, not only that of the steps after the resume."""
    from transformers import TrainerCallback

    from idc_toolkit.training import TrainArgs, train

    class Stop(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise KeyboardInterrupt

    def run(out, callbacks=()):
        return train(TrainArgs("blip2idc", str(demo_dataset), out, base_model=str(tiny_models("blip2")), max_steps=4,
                               save_steps=2, batch_size=4, lr=1e-2, val_split=None, device="cpu", progress=False,
                               report_to="none", seed=3), callbacks)

    whole = run(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", [Stop()])
    resumed = run(tmp_path / "cut")
    losses = [json.loads(line)["loss"] for line in (tmp_path / "cut" / "steps.jsonl").read_text().splitlines()]
    recorded = [json.loads((tmp_path / n / "train_config.json").read_text())["trainer_metrics"]["train_loss"]
                for n in ("whole", "cut")]
    assert len(losses) == 4 and resumed.losses == losses
    assert recorded[1] == pytest.approx(sum(losses) / 4, rel=1e-6) and recorded[1] == pytest.approx(recorded[0], rel=1e-6)
    assert sum(whole.losses) / 4 == pytest.approx(recorded[0], rel=1e-6)


@pytest.mark.java
def test_csv_text_cells_are_never_formulas_and_scores_stay_numbers(demo_dataset, tmp_path):
    from idc_toolkit.api import evaluate_predictions
    from idc_toolkit.evaluators.leaderboard import to_csv
    from idc_toolkit.viewer.sources import read_evaluation

    from idc_toolkit.evaluators.predictions import load_references_dataset

    ids = list(load_references_dataset(str(demo_dataset), "test").captions)
    hostile = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-0.5 cm moved", "@SUM(A1)", "\tthe cube", "'quoted", "\rcr"]
    preds = {pid: hostile[k % len(hostile)] if k < len(hostile) else "the cube moved" for k, pid in enumerate(ids)}
    evaluate_predictions(preds, dataset=str(demo_dataset), split="test", out=str(tmp_path / "e"), metrics=["BLEU", "ROUGE_L"])
    rows = csv_rows(tmp_path / "e" / "per_pair.csv")
    for row in rows:
        assert not row["prediction"].startswith(("=", "+", "-", "@", "\t", "\r")), row
        for metric in ("Bleu_1", "ROUGE_L"):
            float(row[metric])  # a number, never a quoted text
    by_id = {r["pair_id"]: r for r in rows}
    assert by_id[ids[0]]["prediction"] == "'" + hostile[0] and by_id[ids[2]]["prediction"] == "'-0.5 cm moved"
    shown = read_evaluation(tmp_path / "e").pairs  # the viewer reads back what was captioned
    assert [shown[pid].caption for pid in ids[:len(hostile)]] == hostile
    text = to_csv({"columns": ["CIDEr"], "rows": [{"name": "=cmd|' /C calc'!A0", "runs": 1, "n": 3, "mean": {"CIDEr": -0.5},
                                                    "sd": {"CIDEr": None}, "protocol": "rcc", "sources": [], "caveats": []}]})
    assert "\n'=cmd|" in text and ",-50.0000," in text


# -- #50: the same predictions twice; folders of one name ------------------------------------------------------------

@pytest.mark.java
def test_leaderboard_and_compare_refuse_repeated_predictions_and_keep_folders_apart(demo_dataset, tmp_path, capsys):
    from idc_toolkit.evaluators.predictions import load_references_dataset

    ids = list(load_references_dataset(str(demo_dataset), "test").captions)
    files = {}
    for name, caption in (("a", "the cube moved"), ("b", "nothing changed")):
        path = tmp_path / "eval" / name / "run" / "predictions.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({"pair_id": pid, "caption": caption}) + "\n" for pid in ids))
        files[name] = str(path)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(files["a"], copy)
    data = ["--dataset", str(demo_dataset)]
    for argv, message in ((["leaderboard", files["a"], files["a"], *data], "is given twice"),
                          (["leaderboard", files["a"], str(copy), *data], f"holds what {files['a']} holds"),
                          (["compare", files["a"], str(copy), *data], "give each predictions file once"),
                          (["leaderboard", "--names", "A", "B", files["a"], files["b"], *data],
                           f"--names took {files['a']}, {files['b']} as labels; put the files first")):
        assert message in _refused(eval_main, argv, capsys)
    capsys.readouterr()
    assert eval_main(["leaderboard", files["a"], files["b"], *data, "--metrics", "BLEU"]) == 0
    table = capsys.readouterr().out
    assert "| a/run | 1 |" in table and "| b/run | 1 |" in table and "| 2 |" not in table


@pytest.mark.java
def test_compare_prints_no_negative_zero(demo_dataset, tmp_path, capsys):
    """Two systems a few 1e-6 apart (BLEU-2 of 'the' against 'the the'): the difference rounds to
    0.00, never -0.00."""
    from idc_toolkit.evaluators.predictions import load_references_dataset

    ids = list(load_references_dataset(str(demo_dataset), "test").captions)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({pid: "the the" for pid in ids}))
    b.write_text(json.dumps({pid: "the" for pid in ids}))
    capsys.readouterr()
    assert eval_main(["compare", str(b), str(a), "--dataset", str(demo_dataset), "--bootstrap", "50", "--metrics", "BLEU"]) == 0
    out = capsys.readouterr().out
    assert "-0.00" not in out and "| 0.00 |" in out


@pytest.mark.java
def test_compare_p_value_is_never_zero(demo_dataset, tmp_path):
    from idc_toolkit.evaluators.compare import compare_systems
    from idc_toolkit.evaluators.predictions import load_references_dataset

    ids = list(load_references_dataset(str(demo_dataset), "test").captions)
    report = compare_systems({pid: "the cube moved" for pid in ids}, {pid: "nothing" for pid in ids},
                             dataset=str(demo_dataset), bootstrap=50, metrics=["BLEU"])
    assert all(v["p_value"] >= 1 / 51 for v in report["metrics"].values())
    same = compare_systems({pid: "the cube" for pid in ids}, {pid: "the cube" for pid in ids}, dataset=str(demo_dataset),
                           bootstrap=50, metrics=["BLEU"])
    assert all(v["p_value"] == 1.0 and v["difference"] == 0.0 for v in same["metrics"].values())


# -- Ray ----------------------------------------------------------------------------------------------------------------

def test_a_successful_ray_run_prints_no_error_line(pairs, tmp_path):
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_BACKEND_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-m", "idc_toolkit.cli.precompute", "masks", "--dataset", str(pairs["data"]),
                           "--out", str(tmp_path / "m"), "--engine", "ray", "--ray-actors", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if " E " in ln[:40] or "core_worker" in ln]
    assert errors == [], errors

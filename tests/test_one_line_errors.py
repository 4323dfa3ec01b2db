"""Every bad input of issue #9's list ends in one line naming the file, the record and the
cause (exit 1, no traceback), or is done right; nothing in a release is ignored silently."""

import json
import subprocess
import sys
import time

import pytest

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.cli.build import main as build_main
from idc_toolkit.cli.eval import main as eval_main
from idc_toolkit.cli.precompute import main as precompute_main

from conftest import REPO, image_bytes, make_emu_edit, make_spot_the_diff

ANN = {"train": [{"img_id": "1", "sentences": ["a car left"]}], "val": [{"img_id": "4", "sentences": ["x"]}],
       "test": [{"img_id": "5", "sentences": ["a truck arrived"]}]}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_non_utf8_annotation_file(tmp_path, capsys):
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    (raw / "data/annotations/train.json").write_bytes(b'[{"img_id": "1", "sentences": ["caf\xe9"]}]')
    assert build_main(["spot_the_diff", "--raw", str(raw), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "annotations/train.json" in line and "not UTF-8 text (byte 0xe9 at offset 35, line 1)" in line


def test_non_utf8_predictions_and_missing_categories_file(tmp_path, capsys):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"annotations": [{"image_id": "1", "caption": "a b"}]}))
    preds = tmp_path / "preds.json"
    preds.write_bytes(b'{"1": "caf\xe9"}')
    assert eval_main(["--predictions", str(preds), "--references", str(refs), "--out", str(tmp_path / "e")]) == 1
    assert "preds.json: not UTF-8 text" in _one_line(capsys.readouterr().err)
    preds.write_text('{"1": "a b"}')
    assert eval_main(["--predictions", str(preds), "--references", str(refs), "--categories", str(tmp_path / "nope.json"),
                      "--out", str(tmp_path / "e")]) == 1
    assert "nope.json: category map not found" in _one_line(capsys.readouterr().err)


def test_missing_dataset_folder_fails_in_seconds_in_one_line(tmp_path, capsys):
    start = time.time()
    for argv in (["masks", "--dataset", str(tmp_path / "missing"), "--out", str(tmp_path / "o")],
                 ["masks", "--dataset", "someorg/not-a-dataset", "--out", str(tmp_path / "o")]):
        assert precompute_main(argv) == 1
        line = _one_line(capsys.readouterr().err)
        assert "no such local folder" in line or "no local folder someorg/not-a-dataset" in line
    assert time.time() - start < 10
    assert eval_main(["--predictions", str(tmp_path / "p.json"), "--dataset", "someorg/nothing", "--out", str(tmp_path / "e")]) == 1
    assert "no local folder someorg/nothing" in _one_line(capsys.readouterr().err)


def test_corrupt_parquet_in_a_local_hub_copy(tmp_path, capsys):
    raw = make_emu_edit(tmp_path / "emu", {"test": [{"instruction": "add a hat", "task": "add", "idx": 0}]})
    shard = next((raw / "data").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:200])  # a download cut short
    capsys.readouterr()
    assert build_main(["emu_edit", "--raw", str(raw), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert shard.name in line and "not a readable parquet file" in line


def test_unknown_split_files_are_noted_not_ignored(tmp_path):
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    (raw / "data/annotations/extra.json").write_text("[]")
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "o", progress=False)
    assert any(p.action == "note" and p.file.endswith("extra.json") for p in result.report.problems)
    emu = make_emu_edit(tmp_path / "emu", {"test": [{"instruction": "add a hat", "task": "add", "idx": 0}]})
    (emu / "data" / "extra-00000-of-00001.parquet").write_bytes(next((emu / "data").glob("test-*")).read_bytes())
    result = build_dataset(make_builder("emu_edit", emu), tmp_path / "o2", progress=False)
    assert any(p.action == "note" and "extra-00000" in p.file for p in result.report.problems)


def test_malformed_adapter_config_and_corrupt_safetensors(tmp_path):
    from idc_toolkit.errors import IDCError
    from idc_toolkit.models.adapters import read_adapter

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "adapter_config.json").write_text("{not json")
    with pytest.raises(IDCError, match="adapter_config.json is not valid JSON"):
        read_adapter(tmp_path / "a")
    (tmp_path / "a" / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2}))
    (tmp_path / "a" / "adapter_model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{broken")
    with pytest.raises(IDCError, match="adapter_model.safetensors is corrupt"):
        read_adapter(tmp_path / "a")


def test_corrupt_magicbrush_edit_mask_is_skipped_at_build_time(tmp_path):
    from datasets import Dataset, Features, Image, Value

    features = Features({"img_id": Value("string"), "turn_index": Value("int32"), "source_img": Image(),
                         "mask_img": Image(), "instruction": Value("string"), "target_img": Image()})
    png = image_bytes()
    rows = [{"img_id": str(i), "turn_index": 1, "source_img": {"bytes": png, "path": None},
             "mask_img": {"bytes": png if i else png[:40], "path": None}, "instruction": "add a hat",
             "target_img": {"bytes": png, "path": None}} for i in range(2)]
    (tmp_path / "mb" / "data").mkdir(parents=True)
    Dataset.from_list(rows, features=features).to_parquet(str(tmp_path / "mb" / "data" / "dev-00000-of-00001.parquet"))
    result = build_dataset(make_builder("magicbrush", tmp_path / "mb"), tmp_path / "o", progress=False)
    skipped = [p for p in result.report.problems if p.action == "skipped"]
    assert [p.record for p in skipped] == ["row 0 (img_id 0, turn 1)"] and "edit mask" in skipped[0].reason
    assert result.report.rows["validation"] == 1


def test_ctrl_c_says_how_to_resume(tmp_path):
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    code = ("import sys; import idc_toolkit.building.pipeline as m\n"
            "def boom(*a, **k): raise KeyboardInterrupt\n"
            "m.read_image_bytes = boom\n"
            "from idc_toolkit.cli.build import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "spot_the_diff", "--raw", str(raw), "--out", str(tmp_path / "o"),
                           "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130
    assert _one_line(proc.stderr) == "idc-build: interrupted; rerun the same command to resume"


def test_version_and_runner_specific_help(capsys):
    for main in (build_main, eval_main, precompute_main):
        with pytest.raises(SystemExit):
            main(["--version"])
        assert "(idc-toolkit) 0.1.0" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        eval_main(["--model", "davir", "--help"])
    davir = capsys.readouterr().out
    with pytest.raises(SystemExit):
        eval_main(["--help"])
    generic = capsys.readouterr().out
    assert "--num-entities" in davir and "--num-entities" not in generic and "compare" in generic
    assert "(default: 8)" in generic  # defaults are shown


def test_a_missing_extra_names_the_extra_to_install(monkeypatch, capsys):
    from idc_toolkit.cli import common

    def needs_spacy():
        raise ModuleNotFoundError("No module named 'spacy'", name="spacy")

    assert common.run("idc-demo", needs_spacy) == 1
    assert _one_line(capsys.readouterr().err) == (
        "idc-demo: error: spacy is not installed; install the extra: pip install 'idc-toolkit[models]'")


def test_git_hash_comes_from_the_installed_distribution_not_the_working_directory(tmp_path, monkeypatch):
    """PEP 610's record decides: ``pip install git+...`` writes the commit, an install from a folder
    writes none; the current directory's repository (the user's own) is never asked."""
    from importlib import metadata

    from idc_toolkit.evaluators import outputs

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # a user's own repository, with a commit
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q",
                    "--allow-empty", "-m", "mine"], check=True)
    monkeypatch.chdir(tmp_path)
    records = {"vcs": json.dumps({"url": "https://example.org/idc-toolkit.git",
                                  "vcs_info": {"vcs": "git", "commit_id": "0123456789abcdef0123456789abcdef01234567"}}),
               "folder": json.dumps({"url": "file:///src/idc-toolkit", "dir_info": {"editable": True}}), "none": None}

    class Dist:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            return self.text if name == "direct_url.json" else None

    for kind, expected in (("vcs", "0123456789abcdef0123456789abcdef01234567"), ("folder", None), ("none", None)):
        monkeypatch.setattr(metadata, "distribution", lambda name, text=records[kind]: Dist(text))
        assert outputs._git_hash() == expected, kind


def test_dataset_progress_bars_are_library_chatter_shown_with_v(monkeypatch):
    """Quiet by default: ``datasets``' "Generating train split" bars are off unless ``-v``."""
    import argparse

    import datasets

    from idc_toolkit.cli.common import setup_logging

    datasets.enable_progress_bars()
    try:
        setup_logging(argparse.Namespace(verbose=1, quiet=False))
        assert datasets.is_progress_bar_enabled()
        setup_logging(argparse.Namespace(verbose=0, quiet=False))
        assert not datasets.is_progress_bar_enabled()
    finally:
        datasets.enable_progress_bars()


def test_libraries_deprecation_notices_are_shown_only_with_v():
    import argparse
    import warnings

    from idc_toolkit.cli.common import setup_logging

    for verbose, expected in ((0, ["ours"]), (1, ["theirs", "ours"])):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            setup_logging(argparse.Namespace(verbose=verbose, quiet=False))
            warnings.warn_explicit("theirs", FutureWarning, "modeling_utils.py", 1, module="transformers.modeling_utils")
            warnings.warn_explicit("ours", FutureWarning, "x.py", 1, module="idc_toolkit.x")
        assert [str(w.message) for w in seen] == expected

"""idc-augment with a tiny random InstructPix2Pix pipeline and a tiny random chat LM."""

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasets import load_dataset
from PIL import Image

from idc_toolkit.cli.augment import main as augment_main
from idc_toolkit.augment.paraphrase import Paraphraser, clean_candidates


def test_cleaning_rules_on_adversarial_llm_output():
    raw = [
        'Sure! Here is a variation of the instruction:\n1. "Place a curious goat near the fence"\n2) Put a goat by the fence',
        '"Add a goat peeking over the fence"',  # a copy of the source, quoted
        "",
        "Variation: place a curious goat near the fence.",  # duplicate up to case/punctuation
        "goat",  # too short
        "Add " + "very " * 40 + "big goat",  # too long
        "- Insert a goat looking over the fence</s>",
    ]
    out = clean_candidates(raw, "Add a goat peeking over the fence")
    assert out.kept == ["Place a curious goat near the fence", "Put a goat by the fence", "Insert a goat looking over the fence"]
    assert out.rejected == {"preamble": 1, "copy of the source": 1, "empty": 1, "duplicate": 1, "length out of range": 2}


def test_paraphraser_retries_and_reports_shortfall():
    answers = iter([["same as source", "a first variant here"], ["a first variant here"], ["another good variant"]])
    p = Paraphraser("stub", generate=lambda instruction, n, seed: next(answers))
    kept, rejected = p.paraphrase("same as source", 3, seed=0, tries=3)
    assert kept == ["a first variant here", "another good variant"] and rejected == {"copy of the source": 1, "duplicate": 1}


@pytest.fixture(scope="module")
def setup(demo_dataset, tiny_models):
    return {"ds": demo_dataset, "editor": tiny_models("ip2p"), "lm": tiny_models("chat")}


@pytest.fixture(scope="module")
def full(setup, tmp_path_factory):
    """One complete augmentation, shared by the tests that compare against it (it is the
    slowest step of this module)."""
    out = tmp_path_factory.mktemp("aug_full") / "full"
    assert augment_main(_args(setup, out)) == 0
    return out


def _args(setup, out, *extra):
    return ["--dataset", str(setup["ds"]), "--split", "test", "--editor", str(setup["editor"]), "--paraphraser", str(setup["lm"]),
            "--edits-per-image", "2", "--paraphrases", "2", "--steps", "2", "--resolution", "32", "--rows-per-shard", "3",
            "--device", "cpu", "--no-progress", "--out", str(out), *extra]


def _rows(out):
    return [r for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_augment_end_to_end_and_seeds_reproduce(setup, full):
    from idc_toolkit.augment import AugmentConfig, Editor, reproduce_edits

    out = full
    ds = load_dataset(str(out), split="train")
    assert len(ds) == 10 * 2 and ds.features["category"].names[-1] == "distractor"
    row = ds[0]
    src = load_dataset(str(setup["ds"]), split="test")[0]
    assert row["source_pair_id"] == src["pair_id"] and row["captions"][0] == src["captions"][0]
    assert row["category"] == src["category"] and row["editor"] == str(setup["editor"])
    report = json.loads((out / "augment_report.json").read_text())
    assert report["edits"] == 20 and report["rows"] == 10
    assert "Syned recipe" in (out / "README.md").read_text()
    rows = [r for r in _rows(out) if r["source_pair_id"] == row["source_pair_id"]]
    editor = Editor(str(setup["editor"]), "cpu")
    before = Image.open(io.BytesIO(rows[0]["before"]["bytes"]))
    again = reproduce_edits(editor, before, rows[0]["captions"][0], [r["seed"] for r in rows],
                            AugmentConfig(steps=2, resolution=32))
    for r, img in zip(rows, again):
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(r["after"]["bytes"]))), np.asarray(img))


def test_interrupted_augmentation_resumes(setup, full, tmp_path, monkeypatch):
    import idc_toolkit.augment as aug

    original = aug.Editor.edit
    calls = {"n": 0}

    class Interrupted(Exception):
        pass

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise Interrupted
        return original(self, *a, **k)

    monkeypatch.setattr(aug.Editor, "edit", flaky)
    with pytest.raises(Interrupted):
        augment_main(_args(setup, tmp_path / "resumed"))
    parts = tmp_path / "resumed" / ".idc_run" / "parts" / "train"
    assert len(list(parts.glob("*.json"))) == 1 and not (tmp_path / "resumed" / "README.md").exists()
    monkeypatch.setattr(aug.Editor, "edit", original)
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    for library in (diffusers_logging, transformers_logging):
        library.enable_progress_bar()
    assert augment_main(_args(setup, tmp_path / "resumed")) == 0
    # --no-progress: not even the libraries' "Loading ..." bars
    assert not diffusers_logging.is_progress_bar_enabled() and not transformers_logging.is_progress_bar_enabled()
    key = lambda r: (r["pair_id"], r["after"]["bytes"], tuple(r["captions"]))  # noqa: E731
    assert [key(r) for r in _rows(tmp_path / "resumed")] == [key(r) for r in _rows(full)]


def test_clip_filter_rejections_are_counted(setup, tmp_path, capsys):
    config = tmp_path / "tiny-clip-aug.json"
    config.write_text(json.dumps({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8, "head_width": 16},
                                  "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}))
    out = tmp_path / "aug"
    one = ("--edits-per-image", "1", "--paraphrases", "0")  # one edit per pair and no LLM call keep this test short
    assert augment_main(_args(setup, out, *one, "--clip-filter", "1.01", "--clip-model", "tiny-clip-aug",
                              "--clip-config", str(config))) == 1
    assert "no edited pair was kept (CLIP filter rejections: 10)" in capsys.readouterr().err
    report = json.loads((out / "augment_report.json").read_text())
    assert report["rejected_by_clip"] == 10 and report["edits"] == 0
    assert "threshold 1.01" in (out / "README.md").read_text()
    assert augment_main(_args(setup, tmp_path / "kept", *one, "--clip-filter", "-1.01", "--clip-model", "tiny-clip-aug",
                              "--clip-config", str(config))) == 0
    assert json.loads((tmp_path / "kept" / "augment_report.json").read_text())["edits"] == 10


def test_rerun_with_other_settings_is_refused_and_shards_complete_the_same_folder(setup, full, tmp_path, capsys):
    assert augment_main(_args(setup, full)) == 0  # complete: nothing to do
    assert augment_main(_args(setup, full, "--steps", "3")) == 1
    err = capsys.readouterr().err
    assert "holds an augment run with other settings (steps: 2 -> 3)" in err and "--overwrite" in err
    assert augment_main(_args(setup, tmp_path / "sharded", "--shard", "0/2")) == 0
    assert not (tmp_path / "sharded" / "README.md").exists()
    assert augment_main(_args(setup, tmp_path / "sharded", "--shard", "1/2")) == 0
    key = lambda r: (r["pair_id"], r["after"]["bytes"], tuple(r["captions"]))  # noqa: E731
    assert [key(r) for r in _rows(tmp_path / "sharded")] == [key(r) for r in _rows(full)]


def test_paraphrase_only_keeps_the_pairs_and_writes_paraphrased_references(setup, tmp_path):
    out = tmp_path / "refs"
    args = ["--dataset", str(setup["ds"]), "--split", "test", "--paraphraser", str(setup["lm"]), "--paraphrases", "2",
            "--paraphrase-only", "--device", "cpu", "--no-progress", "--out", str(out)]
    assert augment_main(args) == 0
    ds, src = load_dataset(str(out), split="test"), load_dataset(str(setup["ds"]), split="test")
    assert ds["pair_id"] == src["pair_id"] and ds.features == src.features
    for new, old in zip(_rows(out), [r for f in sorted((setup["ds"] / "data").glob("test-*.parquet"))
                                     for r in pq.read_table(f).to_pylist()]):
        assert new["before"] == old["before"] and new["after"] == old["after"]  # the pairs as they were
        assert new["captions"][0] == old["captions"][0].strip() and 1 <= len(new["captions"]) <= 3
    assert "Paraphrased references" in (out / "README.md").read_text()

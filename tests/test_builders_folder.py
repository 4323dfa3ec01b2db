"""``idc-build folder``: any folder of pairs (before/ + after/ or A/ + B/), with captions in a CSV,
JSON Lines or a Karpathy JSON, or none (a dataset to caption). Fixtures built from the layout the
builder documents; the Karpathy file is shaped as LEVIR-CC's (real records of it in shared)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from idc_toolkit.builders import make_builder
from idc_toolkit.building import build_dataset
from idc_toolkit.errors import IDCError


def _pairs(root, names, before="before", after="after"):
    for k, name in enumerate(names):
        for folder, shade in ((before, 40), (after, 200)):
            (root / folder).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (24, 16), (shade, 10 * k, 0)).save(root / folder / name)


def _load(out, split):
    from datasets import load_dataset

    return load_dataset(str(out), split=split)


def test_csv_captions_categories_and_splits(tmp_path):
    raw = tmp_path / "mine"
    _pairs(raw, ["a.png", "b.png", "c.png"])
    (raw / "captions.csv").write_text("image,caption,category,split\n"
                                      "a.png,the car is gone,drop,train\n"
                                      "a.png,a car left,drop,train\n"
                                      "b.png,a bike appeared,add,test\n"
                                      "c.png,nothing changed,no_change,test\n")
    result = build_dataset(make_builder("folder", raw), tmp_path / "out", progress=False)
    train, test = _load(result.out_dir, "train"), _load(result.out_dir, "test")
    assert train["pair_id"] == ["a"] and train["captions"] == [["the car is gone", "a car left"]]
    assert test["pair_id"] == ["b", "c"]
    names = test.features["category"].names
    assert names == ["drop", "add", "no_change"] and [names[c] for c in test["category"]] == ["add", "no_change"]
    assert test[0]["before"].size == (24, 16) and test[0]["before"].getpixel((0, 0))[0] == 40
    from idc_toolkit.card_data import dataset_facts

    facts = dataset_facts(result.out_dir)
    assert facts.builder == "folder" and facts.splits == ("train", "test") and facts.no_change_categories == ("no_change",)


def test_a_b_layout_with_json_lines_and_no_split_is_one_test_split(tmp_path):
    raw = tmp_path / "mine"
    _pairs(raw, ["x.jpg", "y.jpg"], "A", "B")
    (raw / "captions.jsonl").write_text(json.dumps({"image": "x.jpg", "captions": ["one", "two"]}) + "\n"
                                        + json.dumps({"image": "y.jpg", "caption": "three"}) + "\n")
    result = build_dataset(make_builder("folder", raw, {"pair_style": "edit"}), tmp_path / "out", progress=False)
    test = _load(result.out_dir, "test")
    assert test["pair_id"] == ["x", "y"] and test["captions"] == [["one", "two"], ["three"]]
    from idc_toolkit.card_data import dataset_facts

    assert dataset_facts(result.out_dir).pair_style == "edit"


def test_a_folder_without_captions_is_a_dataset_to_caption(tmp_path):
    raw = tmp_path / "mine"
    _pairs(raw, ["p1.png", "p2.png"])
    result = build_dataset(make_builder("folder", raw), tmp_path / "out", progress=False)
    test = _load(result.out_dir, "test")
    assert test["pair_id"] == ["p1", "p2"] and test["captions"] == [[], []]


def test_label_masks_become_the_mask_columns_precompute_writes(tmp_path):
    """label/ beside A/ + B/ (a JPEG pair's label is the PNG of the same stem); a pair without a
    label keeps empty mask columns and is named in the report."""
    import numpy as np

    raw = tmp_path / "mine"
    _pairs(raw, ["x.jpg", "y.jpg"], "A", "B")
    (raw / "label").mkdir()
    label = np.zeros((16, 24, 3), dtype=np.uint8)
    label[2:6, 3:9, 0] = 255
    Image.fromarray(label).save(raw / "label" / "x.png")
    result = build_dataset(make_builder("folder", raw), tmp_path / "out", progress=False)
    test = _load(result.out_dir, "test")
    assert (np.asarray(test[0]["change_mask"]) > 0).sum() == 24 and test[0]["change_boxes"] == [[3.0, 2.0, 8.0, 5.0]]
    assert test[0]["mask_source"] == "annotation" and test[1]["change_mask"] is None
    assert any(p.record == "y.jpg" and "no label" in p.reason for p in result.report.problems)
    from idc_toolkit.schema import MASK_FEATURES

    assert all(test.features[k] == v for k, v in MASK_FEATURES.items())


def test_karpathy_json_as_levir_cc_writes_it(tmp_path):
    raw = tmp_path / "mine"
    _pairs(raw, ["t_1.png", "v_1.png"], "A", "B")
    (raw / "captions.json").write_text(json.dumps({"images": [
        {"filename": "t_1.png", "split": "train", "sentences": [{"raw": " a road was built ."}]},
        {"filename": "v_1.png", "split": "val", "sentences": [{"raw": "no change"}, {"raw": "the same"}]}]}))
    result = build_dataset(make_builder("folder", raw), tmp_path / "out", progress=False)
    assert _load(result.out_dir, "train")["captions"] == [[" a road was built ."]]
    assert _load(result.out_dir, "validation")["captions"] == [["no change", "the same"]]


def test_bad_input_is_one_line_naming_the_file_and_record(tmp_path):
    raw = tmp_path / "mine"
    _pairs(raw, ["a.png", "b.png"])
    (raw / "captions.csv").write_text("image,text\na.png,x\n")
    with pytest.raises(IDCError, match=r"captions.csv: the header lacks caption"):
        build_dataset(make_builder("folder", raw), tmp_path / "o1", progress=False)
    (raw / "captions.csv").write_text("image,caption,split\na.png,x,dev\n")
    with pytest.raises(IDCError, match=r"captions.csv, record line 2: unknown split 'dev'"):
        build_dataset(make_builder("folder", raw), tmp_path / "o2", progress=False)
    (raw / "captions.csv").write_text("image,caption\na.png,x\nmissing.png,y\n")
    result = build_dataset(make_builder("folder", raw), tmp_path / "o3", progress=False)  # a pair without its after image
    assert _load(result.out_dir, "test")["pair_id"] == ["a"]
    assert any(p.action == "skipped" and "missing.png" in p.reason for p in result.report.problems), result.report.summary()
    (tmp_path / "no_pairs").mkdir()
    with pytest.raises(IDCError, match="no_pairs: no before/ \\+ after/ \\(or A/ \\+ B/\\) folders"):
        build_dataset(make_builder("folder", tmp_path / "no_pairs"), tmp_path / "o4", progress=False)
    with pytest.raises(IDCError, match="nowhere: folder not found"):
        build_dataset(make_builder("folder", tmp_path / "nowhere"), tmp_path / "o5", progress=False)


def test_idc_build_folder_from_the_command_line(tmp_path, capsys):
    from idc_toolkit.cli.build import main

    raw = tmp_path / "mine"
    _pairs(raw, ["a.png"])
    assert main(["folder", "--raw", str(raw), "--out", str(tmp_path / "out")]) == 0
    assert _load(tmp_path / "out", "test")["pair_id"] == ["a"]

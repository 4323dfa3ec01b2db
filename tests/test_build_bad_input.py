"""Bad input: every problem is skipped-and-reported, or (strict) fails naming it."""

import json

import pytest
from datasets import load_dataset

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.cli.build import main as build_main
from idc_toolkit.errors import BuildError, RawFormatError, RunError

from conftest import image_bytes, make_spot_the_diff, write_json

ANN = {
    "train": [
        {"img_id": "1", "sentences": ["a car left", ""]},
        {"img_id": "2", "sentences": ["a person appeared"]},
        {"img_id": "1", "sentences": ["the car is gone"]},
        {"img_id": "3", "sentences": ["the bike moved"]},
    ],
    "val": [{"img_id": "4", "sentences": ["nothing changed"]}],
    "test": [{"img_id": "5", "sentences": ["a truck arrived"]}],
}


@pytest.fixture
def raw(tmp_path):
    return make_spot_the_diff(tmp_path / "raw", ANN)


def test_clean_fixture_builds_and_merges(raw, tmp_path):
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    assert result.report.problems == []
    ds = load_dataset(str(tmp_path / "out"), split="train")
    assert ds["pair_id"] == ["1", "2", "3"]
    assert ds[0]["captions"] == ["a car left", "", "the car is gone"]
    assert result.report.empty_captions["train"] == 1
    assert "| train | 3 | 1 |" in (tmp_path / "out" / "README.md").read_text()


def test_missing_before_and_after_images_are_skipped_and_reported(raw, tmp_path):
    (raw / "data/resized_images/2.png").unlink()
    (raw / "data/resized_images/3_2.png").unlink()
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    skipped = {p.record: p for p in result.report.problems if p.action == "skipped"}
    assert set(skipped) == {"2", "3"}
    assert skipped["2"].file.endswith("2.png") and "before image" in skipped["2"].reason and "not found" in skipped["2"].reason
    assert skipped["3"].file.endswith("3_2.png") and "after image" in skipped["3"].reason
    assert result.report.rows["train"] == 1
    saved = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert saved["counts"]["skipped"] == 2 and {p["record"] for p in saved["problems"]} == {"2", "3"}


def test_strict_mode_fails_naming_the_first_problem(raw, tmp_path, capsys):
    (raw / "data/resized_images/2.png").unlink()
    with pytest.raises(BuildError, match=r"strict mode: skipped \[train\]: .*2\.png, record 2: before image"):
        build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", strict=True, progress=False)
    code = build_main(["spot_the_diff", "--raw", str(raw), "--out", str(tmp_path / "out2"), "--strict", "--no-progress"])
    assert code == 1 and "2.png" in capsys.readouterr().err


def test_truncated_and_unreadable_images(raw, tmp_path):
    png = image_bytes(size=(40, 30))
    (raw / "data/resized_images/1_2.png").write_bytes(png[: len(png) // 2])
    (raw / "data/resized_images/3.png").write_bytes(b"this is not an image")
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    reasons = {p.record: p.reason for p in result.report.problems}
    assert "after image" in reasons["1"] and "PNG" in reasons["1"]
    assert "not a recognised image" in reasons["3"]


def test_malformed_json_error_names_file_and_position(raw, tmp_path, capsys):
    (raw / "data/annotations/val.json").write_text('[{"img_id": "4", "sentences": ["x"]')
    with pytest.raises(RawFormatError, match=r"val\.json: malformed JSON at line 1, column \d+"):
        build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    assert build_main(["spot_the_diff", "--raw", str(raw), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    assert "val.json" in capsys.readouterr().err


def test_bad_records_and_unannotated_images_are_counted(raw, tmp_path):
    ann = json.loads((raw / "data/annotations/test.json").read_text())
    ann += [{"sentences": ["no id"]}, {"img_id": "9", "sentences": "not a list"}]
    write_json(raw / "data/annotations/test.json", ann)
    (raw / "data/resized_images/77.png").write_bytes(image_bytes())
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    reasons = [p.reason for p in result.report.problems if p.split == "test"]
    assert any("no img_id" in r for r in reasons) and any("list of strings" in r for r in reasons)
    assert result.report.counters["images_without_annotation"] == 1


def test_unknown_split_value(demo_raw, tmp_path):
    import shutil

    raw = tmp_path / "raw"
    shutil.copytree(demo_raw, raw)
    splits = json.loads((raw / "splits.json").read_text())
    splits["dev"] = splits.pop("val")
    write_json(raw / "splits.json", splits)
    with pytest.raises(RawFormatError, match=r"splits\.json: unknown split value\(s\) \['dev'\]"):
        build_dataset(make_builder("clevr_change", raw), tmp_path / "out", progress=False)


def test_output_folder_with_another_dataset_is_refused(raw, demo_raw, tmp_path, capsys):
    out = tmp_path / "out"
    build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
    again = build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
    assert again.already_built
    with pytest.raises(RunError, match='holds a build run with other settings \\(builder: "spot_the_diff" -> "clevr_change"'):
        build_dataset(make_builder("clevr_change", demo_raw), out, progress=False)
    assert build_main(["clevr_change", "--raw", str(demo_raw), "--out", str(out), "--no-progress"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    other = tmp_path / "foreign"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="already holds files that are not an idc-toolkit run \\(notes.txt\\)"):
        build_dataset(make_builder("spot_the_diff", raw), other, progress=False)
    result = build_dataset(make_builder("clevr_change", demo_raw), out, overwrite=True, progress=False)
    assert not result.already_built
    assert "category" in load_dataset(str(out), split="test").features


def test_missing_required_file_lists_layout(tmp_path):
    (tmp_path / "raw").mkdir()
    with pytest.raises(RawFormatError, match="missing train.json, valid.json, test.json, images"):
        build_dataset(make_builder("ier", tmp_path / "raw"), tmp_path / "out", progress=False)

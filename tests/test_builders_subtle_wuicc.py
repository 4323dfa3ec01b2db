"""VLM-SubtleBench and WUICC built from fixtures in their releases' formats, written here: no record of
either release is in ../shared. VLM-SubtleBench's items follow the Hub card's dataset_info and the
example item of krafton-ai/VLM-SubtleBench's UnifiedAdapter (image paths as Hub URLs, as the JSONL
now holds them, and as paths); WUICC's flat split folders follow its Hub data card."""

import json
from pathlib import Path

import pytest
from datasets import load_dataset
from PIL import Image

from idc_toolkit.builders import BUILDERS, make_builder
from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.errors import RawFormatError

HUB = "https://huggingface.co/datasets/KRAFTON/VLM-SubtleBench/resolve/main/"


def _image(path: Path, colour=(60, 90, 120), size=(24, 16)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)


def _item(image_1, image_2, category, source, source_id, *, caption=None, domain="natural", **more):
    item = {"image_1": image_1, "image_2": image_2, "question": f"Which image shows more {category} change?",
            "answer": "second image", "distractors": ["first image"], "has_caption": caption is not None,
            "caption": caption, "category": category, "domain": domain, "source": source, "source_id": source_id,
            "raw_folder": f"{source}_{category}_pairs", "generation_info": None}
    item.update(more)
    return item


def _subtle_raw(root: Path, extra_test_lines: tuple[str, ...] = ()) -> Path:
    test = [
        # the adapter's docstring item, its image paths as the Hub JSONL writes them
        _item(HUB + "images/changeit/0.png", HUB + "images/changeit/0_2.png", "state", "changeit", "0",
              question="In which image is the apple peeled more?"),
        _item(HUB + "images/coco/train2017/000000000030.jpg",
              HUB + "images/coco/train2017_attribute_edit/000000000030_edited_resized.jpg", "attribute", "coco", "30",
              caption="The vase is blue in the second image instead of white.", answer="blue",
              distractors=["white", "red", "green"]),
        _item(HUB + "images/mvtec/screw%20set/001.png", HUB + "images/mvtec/screw%20set/001_2.png", "quantity",
              "mvtec", 1, domain="industrial", caption="One screw is missing in the second image."),
        _item(HUB + "images/changeit/7.png", HUB + "images/changeit/7_2.png", "state", "changeit", "7",
              caption="a caption the release did not mark as one", has_caption=False),
    ]
    val = [_item("images/aerial/12_a.png", "images/aerial/12_b.png", "existence", "levir", "12", domain="aerial")]
    (root / "data").mkdir(parents=True)
    lines = [json.dumps(i) for i in test]
    lines.insert(2, "")  # a blank line, skipped as the authors' loader skips it
    (root / "data" / "test.jsonl").write_text("\n".join([*lines, *extra_test_lines]) + "\n")
    (root / "data" / "val.jsonl").write_text("".join(json.dumps(i) + "\n" for i in val))
    for path in ("changeit/0.png", "changeit/0_2.png", "coco/train2017/000000000030.jpg",
                 "coco/train2017_attribute_edit/000000000030_edited_resized.jpg", "mvtec/screw set/001.png",
                 "mvtec/screw set/001_2.png", "changeit/7.png", "changeit/7_2.png", "aerial/12_a.png", "aerial/12_b.png"):
        _image(root / "images" / path)
    return root


def test_vlm_subtlebench_both_task_forms_in_one_row_each(tmp_path):
    from idc_toolkit.builders.vlm_subtlebench import DIFFERENCE_TYPES

    result = build_dataset(make_builder("vlm_subtlebench", _subtle_raw(tmp_path / "raw")), tmp_path / "out",
                           progress=False)
    assert dict(result.report.rows) == {"validation": 1, "test": 4}
    assert any("has_caption' is false" in p.reason and "line 5" in p.record for p in result.report.problems)
    ds = load_dataset(str(tmp_path / "out"))
    test = ds["test"]
    assert test.features["category"].names == list(DIFFERENCE_TYPES)
    rows = {r["pair_id"]: r for r in test}
    assert list(rows) == ["state_changeit_0", "attribute_coco_30", "quantity_mvtec_1", "state_changeit_7"]
    mc = rows["state_changeit_0"]
    assert mc["captions"] == [] and mc["question"] == "In which image is the apple peeled more?"
    assert (mc["answer"], mc["distractors"]) == ("second image", ["first image"])
    free = rows["attribute_coco_30"]
    assert free["captions"] == ["The vase is blue in the second image instead of white."]
    assert (free["answer"], free["distractors"]) == ("blue", ["white", "red", "green"])
    assert test.features["category"].int2str(free["category"]) == "attribute"
    assert (rows["quantity_mvtec_1"]["domain"], rows["quantity_mvtec_1"]["source_id"]) == ("industrial", "1")
    assert rows["quantity_mvtec_1"]["before"].size == (24, 16)  # a %20 in the URL is the folder's space
    assert rows["state_changeit_7"]["captions"] == []  # has_caption false: not a reference
    val = ds["validation"][0]
    assert (val["pair_id"], val["domain"], val["source"]) == ("existence_levir_12", "aerial", "levir")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Kim, Minkyu" in card and "cc-by-nc-4.0" in card and "| attribute |" in card


@pytest.mark.parametrize("line, why", [
    ('{"image_1": "a.png", "image_2": "b.png", "question": "q", ', r"not JSON"),
    (json.dumps(_item("images/a.png", "images/b.png", "colour", "x", "1")), r"category 'colour' is not one of"),
    (json.dumps({"image_1": "images/a.png", "image_2": "images/b.png", "question": "q", "answer": "a"}),
     r"missing field\(s\) \['distractors'\]"),
    (json.dumps(_item("https://example.org/a.png", "images/b.png", "state", "x", "1")), r"has no '/resolve/main/'"),
], ids=["json", "category", "field", "url"])
def test_vlm_subtlebench_a_malformed_item_stops_the_build_naming_file_and_line(tmp_path, line, why):
    raw = _subtle_raw(tmp_path / "raw", extra_test_lines=(line,))
    with pytest.raises(RawFormatError, match=rf"test\.jsonl, record line 6: .*{why}"):
        build_dataset(make_builder("vlm_subtlebench", raw), tmp_path / "out", progress=False)


WUICC_SAMPLES = {
    # split folder -> name -> caption file text (None: no caption file)
    "train": {"001": "The navigation bar now has a fourth link labelled \"Blog\".\n", "002": "There is no difference.\n",
              "003": "No change to mention.", "004": "Nothing has changed.\n", "005": "Nothing has changed.\n"},
    "val": {"101": "The footer text is now centred.\r\n"},
    "test": {"201": "The sign-up button is larger.\n", "202": None},
}


def _wuicc_raw(root: Path, samples=WUICC_SAMPLES, missing_html=("test/201_1.html",)) -> Path:
    for split, names in samples.items():
        folder = root / split
        for k, (name, text) in enumerate(names.items()):
            _image(folder / f"{name}.png", (200, 200, 200), (32, 48))
            _image(folder / f"{name}_1.png", (200, 200, 10 * k), (32, 52))
            if text is None:
                continue
            (folder / f"{name}.txt").write_text(text, newline="")
            for stem, body in ((name, "<html><body><nav>a</nav></body></html>\n"),
                               (f"{name}_1", f"<html>\n<body><nav>a b</nav><!-- {name} --></body></html>\n")):
                if f"{split}/{stem}.html" not in missing_html:
                    (folder / f"{stem}.html").write_text(body)
    return root


def test_wuicc_flat_folders_no_change_phrases_and_html(tmp_path):
    raw = _wuicc_raw(tmp_path / "raw")
    result = build_dataset(make_builder("wuicc", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 5, "validation": 1, "test": 1}
    assert result.report.counters["images_without_annotation"] == 2  # test/202.png and its _1.png
    notes = [p for p in result.report.problems if p.action == "note"]
    assert any("'Nothing has changed.' is shared by 2 pairs" in p.reason for p in notes)
    assert any(p.file.endswith("201_1.html") and "HTML file not found" in p.reason for p in notes)
    ds = load_dataset(str(tmp_path / "out"))
    cat = ds["train"].features["category"]
    assert cat.names == ["change", "no_change"]
    train = {r["pair_id"]: r for r in ds["train"]}
    assert {i: cat.int2str(r["category"]) for i, r in train.items()} == {
        "train/001": "change", "train/002": "no_change", "train/003": "no_change", "train/004": "change",
        "train/005": "change"}
    first = train["train/001"]
    assert first["captions"] == ["The navigation bar now has a fourth link labelled \"Blog\"."]
    assert first["before_html"] == "<html><body><nav>a</nav></body></html>\n"
    assert first["after_html"] == "<html>\n<body><nav>a b</nav><!-- 001 --></body></html>\n"
    assert (first["before"].size, first["after"].size) == ((32, 48), (32, 52))
    assert ds["validation"][0]["captions"] == ["The footer text is now centred."]
    test = ds["test"][0]
    assert test["pair_id"] == "test/201" and test["before_html"] and test["after_html"] is None
    card = (tmp_path / "out" / "README.md").read_text()
    assert "cc-by-4.0" in card and "2607.01728" in card and "| no_change |" in card
    assert BUILDERS["wuicc"](".").facts().no_change_categories == ("no_change",)


def test_wuicc_no_change_phrases_option_marks_the_phrases_it_names(tmp_path):
    raw = _wuicc_raw(tmp_path / "raw")
    phrases = "There is no difference.|No change to mention.|Nothing has changed."
    result = build_dataset(make_builder("wuicc", raw, {"no_change_phrases": phrases}), tmp_path / "out", progress=False)
    assert result.report.category_counts["train"] == {"change": 1, "no_change": 4}
    assert not any("is shared by" in p.reason for p in result.report.problems)


def test_wuicc_a_caption_file_of_two_lines_stops_the_build_naming_file_and_line(tmp_path):
    samples = {**WUICC_SAMPLES, "val": {"101": "The footer text is now centred.\nThe logo moved left.\n"}}
    raw = _wuicc_raw(tmp_path / "raw", samples)
    with pytest.raises(RawFormatError, match=r"val/101\.txt, record line 2: a second line \('The logo moved left\.'\)"):
        build_dataset(make_builder("wuicc", raw), tmp_path / "out", progress=False)

"""The newer releases' builders (#38) on their REAL annotation files where shared has them
(placeholder images), on fixtures written from ../shared/notes/datasets.md otherwise (each test says which)."""

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from datasets import load_dataset
from PIL import Image

from idc_toolkit.builders import make_builder
from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.errors import RawFormatError


def _tiff() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (50, 50), (90, 120, 60)).save(buf, "TIFF")
    return buf.getvalue()


def _dubai_raw(shared, root: Path) -> Path:
    """The real caption files under the release's own folder names; one TIFF hard-linked per tile."""
    ann = root / "datasetDubaiCCPublic" / "description_jsontr_te_val"
    ann.mkdir(parents=True)
    names = set()
    for f in ("Train", "Validation", "Test"):
        shutil.copy(shared / "real_annotations/dubai_cc" / f"{f}_Dubai_CC.json", ann)
        names |= {i["filename"] for i in json.loads((ann / f"{f}_Dubai_CC.json").read_text())["images"]}
    placeholder = root / "tile.tif"
    placeholder.write_bytes(_tiff())
    for year in ("500_2000", "500_2010"):
        folder = root / "datasetDubaiCCPublic" / "RGB" / year
        folder.mkdir(parents=True)
        for n in sorted(names):
            os.link(placeholder, folder / n)
    os.link(placeholder, root / "datasetDubaiCCPublic" / "RGB" / "500_2000" / "99x99.tif")  # no caption
    return root


def test_dubai_cc_real_files_key_by_filename(shared, tmp_path):
    """Real files: image_id restarts at 0 in each file, so 500 distinct pairs need the filename key."""
    raw = _dubai_raw(shared, tmp_path / "raw")
    result = build_dataset(make_builder("dubai_cc", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 300, "validation": 50, "test": 150}
    assert result.report.counters["images_without_annotation"] == 1
    ds = load_dataset(str(tmp_path / "out"))
    ids = [i for s in ds.values() for i in s["pair_id"]]
    assert len(ids) == len(set(ids)) == 500 and "6x26" in ds["train"]["pair_id"]
    assert all(len(c) == 5 for s in ds.values() for c in s["captions"])
    first = ds["test"][0]
    assert first["pair_id"] == "0x0" and first["captions"][0] == "Nothing has changed."
    assert first["before"].size == (50, 50)
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Hoxha" in card and "prompt_preset: remote_sensing" in card


def test_dubai_cc_a_record_in_the_wrong_file_is_refused_in_one_line(shared, tmp_path):
    raw = _dubai_raw(shared, tmp_path / "raw")
    path = raw / "datasetDubaiCCPublic/description_jsontr_te_val/Validation_Dubai_CC.json"
    data = json.loads(path.read_text())
    data["images"][3]["split"] = "test"
    path.write_text(json.dumps(data))
    with pytest.raises(RawFormatError, match=r"Validation_Dubai_CC.json.*images\[3\].*split 'test'"):
        build_dataset(make_builder("dubai_cc", raw), tmp_path / "out", progress=False)


def test_spot_the_diff_card_multi_change_real_files(shared, tmp_path):
    """CARD's real files: the release's 8566 / 1493 / 1270 pairs, one joined reference each, keyed by
    the release's img_id (so a pair is the same row in both configs); CARD's images/ + sc_images/."""
    raw = tmp_path / "raw"
    (raw / "spot-the-diff").mkdir(parents=True)
    for f in ("change_multi_captions.json", "splits.json"):
        shutil.copy(shared / "real_annotations/spot_the_diff/card_multi_change" / f, raw / "spot-the-diff")
    png = tmp_path / "p.png"
    Image.new("RGB", (8, 6), (1, 2, 3)).save(png)
    for folder in ("images", "sc_images"):
        (raw / folder).mkdir()
        for key in json.loads((raw / "spot-the-diff/change_multi_captions.json").read_text()):
            os.link(png, raw / folder / key)
    result = build_dataset(make_builder("spot_the_diff", raw, {"captions": "card_multi_change"}), tmp_path / "out",
                           progress=False)
    assert dict(result.report.rows) == {"train": 8566, "validation": 1493, "test": 1270}
    test = load_dataset(str(tmp_path / "out"), split="test")
    row = dict(zip(test["pair_id"], test["captions"]))["256"]
    # the release's three sentences of img_id 256, joined by CARD
    assert row == ["person with umbrella is gone. person with red coat is moved. car up at top to left is now missing"]
    original = {str(i["img_id"]) for i in json.loads((shared / "real_annotations/spot_the_diff/test.json").read_text())}
    assert set(test["pair_id"]) == original
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Tu, Yunbin" in card and "Jhamtani" in card and "CARD multi-change" in card
    with pytest.raises(RawFormatError, match="captions='multi': choose original or card_multi_change"):
        make_builder("spot_the_diff", raw, {"captions": "multi"})


def _levir_mci_raw(shared, root: Path, labels: dict) -> Path:
    """Fixture from the notes (LevirCCcaptions.json is not in shared): the captions are the real
    token files of Change-Agent's LEVIR_MCI sample, written back as LEVIR-CC's Karpathy records;
    labels are constructed 3-channel PNGs (channel 0 read, as Change-Agent's loader reads it)."""
    tokens = shared / "real_annotations/levir_cc/LEVIR_MCI/tokens"
    images = []
    for path in sorted(tokens.glob("*.txt")):
        name, split = path.stem + ".png", path.stem.split("_")[0]
        sents = [" " + " ".join(t[1:-1]) + " ." for t in json.loads(path.read_text())]
        flag = int(not any("no difference" in s or "identical" in s for s in sents))
        images.append({"filepath": split, "filename": name, "split": split, "changeflag": flag,
                       "sentences": [{"raw": s} for s in sents]})
        for side in ("A", "B"):
            (root / "images" / split / side).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (16, 16), (40, 60, 80)).save(root / "images" / split / side / name)
        if name in labels:
            (root / "images" / split / "label").mkdir(parents=True, exist_ok=True)
            Image.fromarray(labels[name]).save(root / "images" / split / "label" / name)
    (root / "LevirCCcaptions.json").write_text(json.dumps({"images": images}))
    return root


def _label(values):
    """A 16x16 RGB label: a 4x4 road block (128) at the top left, a 3x5 building block (255) below
    right; channels 1 and 2 hold other numbers, which must be ignored."""
    import numpy as np

    arr = np.zeros((16, 16, 3), dtype=np.uint8)
    arr[..., 1] = 7
    arr[1:5, 2:6, 0] = values[0]
    arr[9:12, 8:13, 0] = values[1]
    return arr


def test_levir_mci_labels_become_mask_boxes_and_class_map(shared, tmp_path):
    import numpy as np

    names = [p.stem + ".png" for p in sorted((shared / "real_annotations/levir_cc/LEVIR_MCI/tokens").glob("*.txt"))]
    labels = {n: _label((128, 255)) for n in names if n != "val_000002.png"}  # one pair without its label
    raw = _levir_mci_raw(shared, tmp_path / "raw", labels)
    result = build_dataset(make_builder("levir_mci", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 5, "validation": 2, "test": 4}
    assert any("val_000002" in p.record and "no change-detection label" in p.reason for p in result.report.problems)
    row = load_dataset(str(tmp_path / "out"), split="test")[1]
    assert row["pair_id"] == "test_000004" and row["captions"][0].startswith(" the vegetation has been replaced")
    classes = np.asarray(row["change_classes"])
    expected = np.zeros((16, 16), dtype=np.uint8)
    expected[1:5, 2:6], expected[9:12, 8:13] = 1, 2
    assert (classes == expected).all()
    assert (np.asarray(row["change_mask"]) == (expected > 0) * 255).all()
    assert row["change_boxes"] == [[2.0, 1.0, 5.0, 4.0], [8.0, 9.0, 12.0, 11.0]] and row["mask_source"] == "annotation"
    from idc_toolkit.schema import MASK_FEATURES

    features = load_dataset(str(tmp_path / "out"), split="test").features
    assert all(features[k] == v for k, v in MASK_FEATURES.items())  # what idc-precompute masks writes, so DAVIR reads it
    assert "2 building" in (tmp_path / "out" / "README.md").read_text()


def test_levir_mci_a_label_value_outside_the_format_is_refused(shared, tmp_path):
    names = [p.stem + ".png" for p in sorted((shared / "real_annotations/levir_cc/LEVIR_MCI/tokens").glob("*.txt"))]
    labels = {n: _label((128, 64 if n == "train_000003.png" else 255)) for n in names}
    raw = _levir_mci_raw(shared, tmp_path / "raw", labels)
    with pytest.raises(RawFormatError, match=r"train_000003.png.*label values \[64\].*only 0, 128 and 255"):
        build_dataset(make_builder("levir_mci", raw), tmp_path / "out", progress=False)


def _img_diff_raw(root: Path, removal_first: dict | None = None) -> Path:
    """Fixture written from the notes (S4.6: no real record could be read): LLaVA-style records,
    ``bbox`` a string holding a Python literal, images ``{path}_0.jpg`` / ``{path}_1.jpg``."""
    def rec(path, caption, bbox):
        return {"conversations": [{"from": "human", "value": "<image>\n<image>\nWhat differs?"},
                                  {"from": "gpt", "value": caption}], "path": path, "bbox": bbox}

    data = {"img_diff_object_replacement.json": [rec("edit/0001", "The cat was replaced by a dog.", "[10, 12, 40, 44]"),
                                                 rec("edit/0002", "A red car became a bus.", "[[1, 2, 3, 4], [5, 6, 7, 8]]")],
            "img_diff_object_removal.json": [removal_first or rec("edit/0001", "The lamp is gone.", "(3, 4, 30, 40)"),
                                             rec("edit/0003", "No bbox here.", "not a literal")]}
    for name, records in data.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(records))
        folder = root / ("object_replacement" if "replacement" in name else "object_removal")
        for r in records:
            for k in (0, 1):
                (folder / f"{r['path']}_{k}.jpg").parent.mkdir(parents=True, exist_ok=True)
                # 48 x 48: every box lies inside (the build checks them against the before image)
                Image.new("RGB", (48, 48), (k * 100, 50, 50)).save(folder / f"{r['path']}_{k}.jpg")
    return root


def test_img_diff_llava_records_boxes_and_categories(tmp_path):
    raw = _img_diff_raw(tmp_path / "raw")
    result = build_dataset(make_builder("img_diff", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 3}
    assert any("bbox 'not a literal'" in p.reason for p in result.report.problems)
    ds = load_dataset(str(tmp_path / "out"), split="train")
    rows = {r["pair_id"]: r for r in ds}
    # the same path in both files stays two pairs
    assert set(rows) == {"replacement/edit/0001", "replacement/edit/0002", "removal/edit/0001"}
    assert rows["replacement/edit/0002"]["change_boxes"] == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert rows["removal/edit/0001"]["change_boxes"] == [[3, 4, 30, 40]]
    assert ds.features["category"].int2str(rows["removal/edit/0001"]["category"]) == "removal"
    assert rows["replacement/edit/0001"]["captions"] == ["The cat was replaced by a dog."]
    assert rows["removal/edit/0001"]["after"].getpixel((0, 0))[0] == 100


def test_img_diff_a_first_record_of_another_shape_stops_the_build(tmp_path):
    raw = _img_diff_raw(tmp_path / "raw", removal_first={"path": "x", "caption": "shareGPT-less"})
    with pytest.raises(RawFormatError, match=r"img_diff_object_removal.json.*\[0\].*conversations\[1\]"):
        build_dataset(make_builder("img_diff", raw), tmp_path / "out", progress=False)


def _diffspot_raw(root: Path, rows: list[dict], shards: int = 2) -> Path:
    """Fixture written from DiffSpot's data card (S4.7: no row could be read): its columns as
    parquet shards the way huggingface_hub downloads a dataset; no ``id`` column ([I] in the notes)."""
    from datasets import Dataset, Features, Image as ImageFeature, Value

    def png(c):
        buf = io.BytesIO()
        Image.new("RGB", (20, 12), c).save(buf, "PNG")
        return {"bytes": buf.getvalue(), "path": None}

    features = Features({"image_before": ImageFeature(), "image_after": ImageFeature(), "task_type": Value("string"),
                         "difficulty": Value("string"), "ground_truth_diff": Value("string"),
                         "mutation_dicts_json": Value("string"), "domain": Value("string"),
                         **{f"target_bbox_{k}": Value("int32") for k in "xywh"}})
    table = {k: [r.get(k) for r in rows] for k in features}
    table["image_before"] = [png((200, 200, 200))] * len(rows)
    table["image_after"] = [png((200, 200, 200 - 40 * i)) for i in range(len(rows))]
    ds = Dataset.from_dict(table, features=features)
    (root / "data").mkdir(parents=True)
    for k in range(shards):
        ds.shard(shards, k, contiguous=True).to_parquet(str(root / "data" / f"test-0000{k}-of-0000{shards}.parquet"))
    return root


DIFFSPOT_ROWS = [
    {"task_type": "visual_diff", "difficulty": "easy", "ground_truth_diff": "The button text turned red.",
     "mutation_dicts_json": json.dumps([{"type": "color", "selector": "#buy", "before": "#000", "after": "#f00"}]),
     "domain": "shop", "target_bbox_x": 10, "target_bbox_y": 4, "target_bbox_w": 5, "target_bbox_h": 3},
    {"task_type": "no_diff", "difficulty": "no_diff", "ground_truth_diff": "", "mutation_dicts_json": "[]",
     "domain": "news"},
    {"task_type": "visual_diff", "difficulty": "hard", "ground_truth_diff": "The heading is larger.",
     "mutation_dicts_json": json.dumps([{"type": "font_size"}, {"type": "color"}]), "domain": "blog",
     "target_bbox_x": 0, "target_bbox_y": 0, "target_bbox_w": 20, "target_bbox_h": 2},
]


def test_diffspot_operators_no_diff_and_structured_references(tmp_path):
    raw = _diffspot_raw(tmp_path / "raw", DIFFSPOT_ROWS)
    result = build_dataset(make_builder("diffspot", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"test": 3}
    ds = load_dataset(str(tmp_path / "out"), split="test")
    assert ds["pair_id"] == ["test_0", "test_1", "test_2"]  # numbered across both shards
    names = [ds.features["category"].int2str(c) for c in ds["category"]]
    assert names == ["color", "no_change", "font_size"]
    assert json.loads(ds[2]["mutations"]) == [{"type": "font_size"}, {"type": "color"}]
    assert ds[0]["change_boxes"] == [[10, 4, 14, 6]] and ds[1]["change_boxes"] == []
    assert ds[1]["difficulty"] == "no_diff" and ds[0]["captions"] == ["The button text turned red."]
    from idc_toolkit.card_data import dataset_facts

    assert dataset_facts(tmp_path / "out").no_change_categories == ("no_change",)


def test_diffspot_an_operator_outside_the_data_card_stops_the_build(tmp_path):
    rows = [*DIFFSPOT_ROWS, {**DIFFSPOT_ROWS[0], "mutation_dicts_json": json.dumps([{"type": "blur"}])}]
    raw = _diffspot_raw(tmp_path / "raw", rows, shards=1)
    with pytest.raises(RawFormatError, match=r"test-00000-of-00001.parquet.*row 3.*operator 'blur' is not one of"):
        build_dataset(make_builder("diffspot", raw), tmp_path / "out", progress=False)


def _second_raw(root: Path, odd_colour=None) -> Path:
    """Fixture written from the notes (S4.4: SecondCC's repository holds no data): Karpathy JSON with
    a restval record and a tokens-only sentence; colour semantic maps in SECOND's palette."""
    import numpy as np

    records = [("00001.png", "train", {"raw": "a building appears near the water ."}),
               ("00002.png", "restval", {"tokens": ["nothing", "has", "changed"]}),
               ("00003.png", "test", {"raw": "trees were cut ."})]
    for name, split, sentence in records:
        folder = root / ("train" if split == "restval" else split)
        for sub in ("rgb/A", "rgb/B", "sem/A", "sem/B"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (12, 12), (30, 90, 30)).save(folder / "rgb/A" / name)
        Image.new("RGB", (12, 12), (90, 90, 30)).save(folder / "rgb/B" / name)
        a = np.full((12, 12, 3), 255, dtype=np.uint8)
        b = a.copy()
        if split != "restval":
            a[2:5, 3:7] = (0, 0, 255)      # water before ...
            b[2:5, 3:7] = (128, 0, 0)      # ... building after
            b[8:10, 8:10] = odd_colour or (0, 255, 0)  # a tree appears
        Image.fromarray(a).save(folder / "sem/A" / name)
        Image.fromarray(b).save(folder / "sem/B" / name)
    images = [{"filename": n, "split": s, "sentences": [sent]} for n, s, sent in records]
    (root / "SECOND-CC-AUG.json").write_text(json.dumps({"images": images}))
    return root


def test_second_cc_class_maps_per_phase_and_change_mask(tmp_path):
    import numpy as np

    raw = _second_raw(tmp_path / "raw")
    result = build_dataset(make_builder("second_cc", raw), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 2, "test": 1}
    train = load_dataset(str(tmp_path / "out"), split="train")
    first, restval = train[0], train[1]
    before, after = np.asarray(first["classes_before"]), np.asarray(first["classes_after"])
    assert before[3, 4] == 1 and after[3, 4] == 5 and after[9, 9] == 4 and before[0, 0] == after[0, 0] == 0
    assert first["change_boxes"] == [[3.0, 2.0, 6.0, 4.0], [8.0, 8.0, 9.0, 9.0]]
    assert (np.asarray(first["change_mask"]) > 0).sum() == 12 + 4
    names = train.features["category"].names
    assert names[first["category"]] == "change" and names[restval["category"]] == "no_change"
    assert restval["captions"] == ["nothing has changed"] and restval["change_boxes"] == []


def test_second_cc_a_colour_outside_the_palette_stops_the_build(tmp_path):
    raw = _second_raw(tmp_path / "raw", odd_colour=(10, 20, 30))
    with pytest.raises(RawFormatError, match=r"sem/B/00001.png.*\(10, 20, 30\) are not in SECOND's palette"):
        build_dataset(make_builder("second_cc", raw), tmp_path / "out", progress=False)

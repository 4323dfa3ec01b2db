"""Every builder on tiny fixtures in the exact raw formats; outputs load offline."""

import json
from pathlib import Path

from datasets import load_dataset

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.builders import BUILDERS

from test_dataset_facts import assert_training_defaults
from conftest import image_bytes, make_emu_edit, write_json


def _load(out: Path):
    return load_dataset(str(out))


def test_registry_lists_every_release():
    assert set(BUILDERS) >= {"spot_the_diff", "clevr_change", "clevr_dc", "ier", "levir_cc", "emu_edit", "syned", "magicbrush"}


def test_clevr_change_from_demo_release(demo_raw, tmp_path):
    result = build_dataset(make_builder("clevr_change", demo_raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "clevr_change")
    # 5 types x 5 ids, 3/1/1 per type, two pairs per id
    assert dict(result.report.rows) == {"train": 30, "validation": 10, "test": 10}
    ds = _load(tmp_path / "out")
    cat = ds["test"].features["category"]
    assert cat.names == ["color", "material", "add", "drop", "move", "distractor"]
    ids = ds["test"]["pair_id"]
    assert all((i + "_n") in ids for i in ids if not i.endswith("_n"))
    by_id = dict(zip(ids, ds["test"]["category"]))
    assert all(cat.int2str(by_id[i]) == "distractor" for i in ids if i.endswith("_n"))
    card = (tmp_path / "out" / "README.md").read_text()
    assert "config_name: default" in card and "dataset_info" in card and "| distractor |" in card


def test_clevr_change_real_split_and_type_files_parse(shared, tmp_path):
    """The real splits.json / type_mapping.json drive ids and categories (images for a few ids)."""
    import shutil

    raw = tmp_path / "raw"
    for sub in ("images", "sc_images", "nsc_images"):
        (raw / sub).mkdir(parents=True)
    shutil.copy(shared / "real_annotations/clevr_change/type_mapping.json", raw / "type_mapping.json")
    splits = json.loads((shared / "real_annotations/clevr_change/splits.json").read_text())
    keep = {"train": splits["train"][:3], "val": splits["val"][:2], "test": [i for i in splits["test"] if i in (7200, 16001, 39999)] or splits["test"][:3]}
    write_json(raw / "splits.json", keep)
    png = image_bytes()
    caps, nc = {}, {}
    for ids in keep.values():
        for i in ids:
            n = f"{i:06d}"
            for sub, stem in (("images", "default"), ("sc_images", "semantic"), ("nsc_images", "nonsemantic")):
                (raw / sub / f"CLEVR_{stem}_{n}.png").write_bytes(png)
            caps[f"CLEVR_default_{n}.png"] = ["the tiny gray object has been newly placed"]
            nc[f"CLEVR_default_{n}.png"] = ["there is no change", "nothing has changed"]
    write_json(raw / "change_captions.json", caps)
    write_json(raw / "no_change_captions.json", nc)
    build_dataset(make_builder("clevr_change", raw), tmp_path / "out", progress=False)
    ds = _load(tmp_path / "out")
    types = json.loads((raw / "type_mapping.json").read_text())
    type_of = {name.split(".")[0]: t for t, names in types.items() for name in names}
    names = ds["train"].features["category"].names
    for row in ds["train"].select_columns(["pair_id", "category"]):
        pid = row["pair_id"]
        expected = "distractor" if pid.endswith("_n") else type_of[pid]
        assert names[row["category"]] == expected


def _clevr_dc_raw(root: Path) -> Path:
    ids = {"train": [0, 8001, 40005], "val": [6800, 46800], "test": [7200, 47999]}
    write_json(root / "split.json", ids)
    png = image_bytes()
    caps = {}
    for split_ids in ids.values():
        for i in split_ids:
            for sub in ("bef", "aft"):
                (root / sub).mkdir(parents=True, exist_ok=True)
                (root / sub / f"{i}.png").write_bytes(png)
            caps[str(i)] = ["the large cube changed its color", "a cube became red"]
    write_json(root / "captions.json", caps)
    return root


def test_clevr_dc_categories_from_blocks(tmp_path):
    raw = _clevr_dc_raw(tmp_path / "raw")
    build_dataset(make_builder("clevr_dc", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "clevr_dc")
    ds = _load(tmp_path / "out")
    names = ds["train"].features["category"].names
    got = {r["pair_id"]: names[r["category"]] for r in ds["train"].select_columns(["pair_id", "category"])}
    assert got == {"0": "color", "8001": "material", "40005": "distractor"}
    assert "inferred" in (tmp_path / "out" / "README.md").read_text()
    build_dataset(make_builder("clevr_dc", raw, {"categories": "false"}), tmp_path / "out2", progress=False)
    assert "category" not in _load(tmp_path / "out2")["test"].features


def test_levir_cc_karpathy_json(tmp_path):
    raw = tmp_path / "raw"
    images = []
    png = image_bytes()
    for split, n in (("train", 3), ("val", 1), ("test", 2)):
        for k in range(1, n + 1):
            name = f"{split}_{k:06d}.png"
            for side in ("A", "B"):
                (raw / "images" / split / side).mkdir(parents=True, exist_ok=True)
                (raw / "images" / split / side / name).write_bytes(png)
            flag = k % 2
            raws = [" many buildings are built .", " a road appears ."] if flag else [" there is no difference .", " the two scenes seem identical ."]
            images.append({"filepath": split, "filename": name, "imgid": len(images), "changeflag": flag, "split": split,
                           "sentences": [{"raw": r, "tokens": r.split()[:-1], "imgid": 0, "sentid": j} for j, r in enumerate(raws)],
                           "sentids": [0, 1]})
    (raw / "images" / "train" / "A" / "train_000099.png").write_bytes(png)  # unannotated extra pair
    write_json(raw / "LevirCCcaptions.json", {"images": images})
    result = build_dataset(make_builder("levir_cc", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "levir_cc")
    assert result.report.counters["images_without_annotation"] == 1
    ds = _load(tmp_path / "out")
    row = ds["train"][0]
    assert row["pair_id"] == "train_000001" and row["captions"][0] == " many buildings are built ."
    assert ds["train"].features["category"].int2str(row["category"]) == "change" and row["changeflag"] == 1
    assert len(ds["validation"]) == 1 and len(ds["test"]) == 2


def test_emu_edit_parquet_copy(tmp_path):
    rows = {"validation": [{"idx": i, "instruction": f"add a hat {i}", "task": "add"} for i in range(3)],
            "test": [{"idx": i, "instruction": "make it snow", "task": t} for i, t in enumerate(["global", "text"])]}
    raw = make_emu_edit(tmp_path / "emu", rows)
    build_dataset(make_builder("emu_edit", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "emu_edit")
    from idc_toolkit.card_data import read_card_data

    # built from a copy of a Hub dataset: the card names it (not "original")
    assert read_card_data(tmp_path / "out")["source_datasets"] == ["extended|facebook/emu_edit_test_set_generations"]
    ds = _load(tmp_path / "out")
    assert set(ds) == {"validation", "test"}
    row = ds["test"][1]
    assert row["pair_id"] == "test_1" and row["idx"] == 1 and row["captions"] == ["make it snow"]
    assert ds["test"].features["category"].int2str(row["category"]) == "text"
    assert row["after"].getpixel((0, 0)) == (9, 9, 9)


def test_magicbrush_parquet_copy(tmp_path):
    from datasets import Dataset, Features, Image as HFImage, Value

    features = Features({"img_id": Value("string"), "turn_index": Value("int32"), "source_img": HFImage(),
                         "mask_img": HFImage(), "instruction": Value("string"), "target_img": HFImage()})
    (tmp_path / "mb" / "data").mkdir(parents=True)
    png, dark = image_bytes(), image_bytes(color=(9, 9, 9))
    for split, rows in (("train", [("242679", 1), ("242679", 2)]), ("dev", [("1000", 1)])):
        Dataset.from_list([{"img_id": i, "turn_index": t, "source_img": {"bytes": png, "path": None},
                            "mask_img": {"bytes": png, "path": None}, "instruction": f"turn {t}: add a hat",
                            "target_img": {"bytes": dark, "path": None}} for i, t in rows],
                          features=features).to_parquet(str(tmp_path / "mb" / "data" / f"{split}-00000-of-00001.parquet"))
    build_dataset(make_builder("magicbrush", tmp_path / "mb"), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "magicbrush")
    ds = _load(tmp_path / "out")
    assert set(ds) == {"train", "validation"}
    assert ds["train"]["pair_id"] == ["242679_1", "242679_2"]
    row = ds["train"][1]
    assert row["captions"] == ["turn 2: add a hat"] and row["turn_index"] == 2 and row["edit_mask"].size == (8, 6)
    assert "category" not in ds["train"].features

"""Builders on the REAL annotation files of the raw releases (placeholder images)."""

import json
import shutil
from pathlib import Path

from datasets import Image, List, Value, load_dataset

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.builders.syned import clean_paraphrase

from test_dataset_facts import assert_training_defaults
from conftest import image_bytes, make_emu_edit, make_spot_the_diff


def test_spot_the_diff_real_annotations(shared, tmp_path):
    ann = {s: json.loads((shared / "real_annotations/spot_the_diff" / f"{s}.json").read_text()) for s in ("train", "val", "test")}
    raw = make_spot_the_diff(tmp_path / "raw", ann, linked=True)
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "spot_the_diff")
    assert dict(result.report.rows) == {"train": 8566, "validation": 1493, "test": 1270}
    assert dict(result.report.empty_captions) == {"train": 53, "validation": 6, "test": 7}
    ds = load_dataset(str(tmp_path / "out"))
    assert {k: len(v) for k, v in ds.items()} == {"train": 8566, "validation": 1493, "test": 1270}
    assert ds["test"].features["before"] == Image() and ds["test"].features["captions"] == List(Value("string"))
    from idc_toolkit.card_data import read_card_data

    for split in read_card_data(tmp_path / "out")["dataset_info"]["splits"]:  # over 1,000 rows: the estimate scales
        assert split["num_bytes"] == ds[split["name"]]._estimate_nbytes(), split
    # merged per img_id in file order: the authors' own reference file has the same sentences per id
    gt = json.loads((shared / "real_annotations/spot_the_diff/ddla_rerun_gtfile.json").read_text())
    refs: dict[str, list[str]] = {}
    for a in gt["annotations"]:
        refs.setdefault(str(a["image_id"]), []).append(a["caption"])
    built = dict(zip(ds["test"]["pair_id"], ds["test"]["captions"]))
    assert built == refs


def _ier_raw(shared, root: Path) -> Path:
    root.mkdir()
    names = set()
    for s in ("train", "valid", "test"):
        shutil.copy(shared / "real_annotations/ier" / f"{s}.json", root / f"{s}.json")
        for it in json.loads((root / f"{s}.json").read_text()):
            names.update((it["img0"], it["img1"]))
    (root / "images").mkdir()
    formats = ["PNG", "JPEG", "GIF"]
    for k, name in enumerate(sorted(names)):
        # the content decides the format, whatever the suffix says
        (root / "images" / name).write_bytes(image_bytes(formats[k % 3]))
    (root / "images" / "unreferenced.jpg").write_bytes(image_bytes("JPEG"))
    return root


def test_ier_real_annotations(shared, tmp_path):
    raw = _ier_raw(shared, tmp_path / "ier")
    result = build_dataset(make_builder("ier", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "ier")
    assert dict(result.report.rows) == {"train": 3061, "validation": 383, "test": 495}
    counters = result.report.counters
    assert counters["images_without_annotation"] == 1
    assert counters["pairs_shared_between_splits"] == 56  # valid∩test 55, train∩valid 2, train∩test 1 (overlapping)
    assert counters["pairs_repeated_under_several_uids"] > 460  # 460 in train alone, plus valid and test
    notes = [p for p in result.report.problems if p.action == "note"]
    valid_test = [p for p in notes if "valid.json" in p.file and "test.json" in p.file]
    assert len(valid_test) == 55
    assert any("repeats under 14 uids" in p.reason for p in notes)
    ds = load_dataset(str(tmp_path / "out"))
    assert {k: len(v) for k, v in ds.items()} == {"train": 3061, "validation": 383, "test": 495}
    row = ds["validation"][0]
    assert len(row["captions"]) == 3 and row["img0"] and row["pair_id"]
    assert row["before"].size == (8, 6)  # GIF/PNG/JPEG all decode


def test_clevr_dc_real_split_gives_the_papers_counts_and_even_action_blocks(shared, tmp_path):
    """The real split.json: 40,800 / 2,400 / 4,800 pairs, each split spread evenly over the six
    8,000-index action blocks the card's categories come from (no image is read)."""
    from idc_toolkit.building.report import BuildReport

    raw = tmp_path / "clevr_dc"
    raw.mkdir()
    shutil.copy(shared / "real_annotations/clevr_dc/split.json", raw / "split.json")
    ids = [i for ids in json.loads((raw / "split.json").read_text()).values() for i in ids]
    (raw / "captions.json").write_text(json.dumps({str(i): [f"caption {i}"] for i in ids}))
    (raw / "bef").mkdir()
    (raw / "aft").mkdir()
    builder = make_builder("clevr_dc", raw)
    builder.check_raw()
    report = BuildReport("clevr_dc", strict=True)
    counts = {}
    for split in builder.split_names():
        records = list(builder.generate(split, report))
        counts[split] = {c: sum(1 for r in records if r.category == c) for c in builder.categories}
    per_block = {"train": 6800, "validation": 400, "test": 800}
    assert counts == {split: {c: n for c in builder.categories} for split, n in per_block.items()}
    assert builder.facts().no_change_categories == ("distractor",) and builder.facts().pair_style == "scene"


def test_syned_real_files_with_emu_edit_copy(shared, tmp_path):
    src = shared / "real_annotations/syned"
    raw = tmp_path / "syned"
    raw.mkdir()
    for f in src.iterdir():
        shutil.copy(f, raw / f.name)
    from idc_toolkit.builders.syned import parse_instruction_file

    rows = {}
    for split, name in (("validation", "instructions_with_idx_train_split.txt"), ("test", "instructions_with_idx_test_split.txt")):
        instr = parse_instruction_file(src / name)
        rows[split] = [{"idx": i, "instruction": t.strip(), "task": ["add", "remove", "text"][i % 3]} for i, t in sorted(instr.items())]
    make_emu_edit(raw / "emu_edit", rows)
    result = build_dataset(make_builder("syned", raw), tmp_path / "out", progress=False)
    assert_training_defaults(tmp_path / "out", "syned")
    assert dict(result.report.rows) == {"train": 3050, "validation": 539, "test": 2022}
    ds = load_dataset(str(tmp_path / "out"))
    names = ds["test"].features["category"].names
    assert names[:7] == ["background", "global", "style", "remove", "add", "local", "texture"] and "text" in names
    paraphrases = json.loads((src / "gt_augmented_test_clean.json").read_text())
    by_id = {r["idx"]: r for r in ds["test"].select_columns(["idx", "captions", "instruction"])}
    row0 = by_id[0]
    assert row0["captions"][0] == row0["instruction"]
    expected = [clean_paraphrase(p) for p in paraphrases["0 "] if clean_paraphrase(p)]
    assert row0["captions"][1:] == expected
    all_caps = [c for r in by_id.values() for c in r["captions"]]
    assert all(c and not (c.startswith('"') and c.endswith('"')) for c in all_caps)
    empty_lists = [k for k, v in paraphrases.items() if not v]
    assert len(empty_lists) == 4
    for k in empty_lists:
        assert by_id[int(k)]["captions"] == [by_id[int(k)]["instruction"]]
    repairs = [p for p in result.report.problems if p.action == "repaired"]
    assert sum("quotes" in p.reason for p in repairs) >= 3293
    assert sum("empty paraphrase" in p.reason for p in repairs) == 2


def test_clean_paraphrase():
    assert clean_paraphrase(' "Add a goat" ') == "Add a goat"
    assert clean_paraphrase('""nested""') == "nested"
    assert clean_paraphrase('say "hi" now') == 'say "hi" now'


def _cauldron_rows(ids, refs, extra_rows=()):
    """Rows as The Cauldron / FineVision re-host Spot-the-Diff: two images, one user/assistant turn;
    the answer joins the release's sentences (capitalised, full stops), no id anywhere."""
    rows = []
    for pid in ids:
        answer = " ".join(s.strip().capitalize() + "." for s in refs[pid] if s.strip())
        rows.append({"images": [{"bytes": image_bytes(color=(int(pid) % 256, 1, 2)), "path": None},
                                {"bytes": image_bytes(color=(int(pid) % 256, 3, 4)), "path": None}],
                     "texts": [{"user": "What differs between the two images?", "assistant": answer}], "source": "spot_the_diff"})
    return rows + list(extra_rows)


def test_spot_the_diff_images_from_hub_rehosts_matched_by_the_real_annotations(shared, tmp_path):
    """Real annotations; images from a Cauldron-style copy (matched by text) and a Mantis-style one
    (image paths keep the release's names). Pairs whose sentences repeat elsewhere in the release
    ('there are no differences') cannot be told apart and are reported, not guessed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ann = {s: json.loads((shared / "real_annotations/spot_the_diff" / f"{s}.json").read_text()) for s in ("train", "val", "test")}
    raw = make_spot_the_diff(tmp_path / "raw", ann, fmt_images=False)
    refs: dict[str, list[str]] = {}
    for items in ann.values():
        for it in items:
            refs.setdefault(str(it["img_id"]), []).extend(it["sentences"])
    train_ids = list(dict.fromkeys(str(it["img_id"]) for it in ann["train"]))[:30]  # '76': 'there are no differences'
    test_ids = list(dict.fromkeys(str(it["img_id"]) for it in ann["test"]))[:3]
    stray = {"images": [{"bytes": image_bytes(), "path": None}] * 2,
             "texts": [{"user": "?", "assistant": "A dog sits on a sofa."}], "source": "spot_the_diff"}
    rehost = tmp_path / "the_cauldron"
    (rehost / "spot_the_diff").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(_cauldron_rows(train_ids, refs, [stray])), rehost / "spot_the_diff/train-00000-of-00002.parquet")
    (rehost / "mantis/imgs").mkdir(parents=True)
    mantis = []
    for pid in test_ids:
        for suffix, c in (("", 5), ("_2", 6)):
            (rehost / "mantis/imgs" / f"{pid}{suffix}.png").write_bytes(image_bytes(color=(int(pid) % 256, c, c)))
        mantis.append({"id": f"spot-{pid}", "images": [{"bytes": None, "path": f"mantis/imgs/{pid}.png"},
                                                        {"bytes": None, "path": f"mantis/imgs/{pid}_2.png"}],
                       "conversation": [{"role": "user", "content": "?"}, {"role": "assistant", "content": "(paraphrased)"}],
                       "source": "spot-the-diff"})
    outside = tmp_path / "outside"  # a row whose image path leaves the copy is not read
    outside.mkdir()
    escaping = list(dict.fromkeys(str(it["img_id"]) for it in ann["train"]))[40]  # a pair no other row holds
    for suffix in ("", "_2"):
        (outside / f"{escaping}{suffix}.png").write_bytes(image_bytes(color=(9, 9, 9)))
    mantis.append({"id": "escape", "images": [{"bytes": None, "path": f"../outside/{escaping}.png"},
                                              {"bytes": None, "path": f"../outside/{escaping}_2.png"}],
                   "conversation": [{"role": "user", "content": "?"}], "source": "spot-the-diff"})
    pq.write_table(pa.Table.from_pylist(mantis), rehost / "spot_the_diff/train-00001-of-00002.parquet")

    result = build_dataset(make_builder("spot_the_diff", raw, {"rehost": str(rehost)}), tmp_path / "out", progress=False)
    duplicates = {pid for pid in train_ids if sum(1 for q in refs if sorted(refs[q]) == sorted(refs[pid])) > 1}
    assert "76" in duplicates and escaping not in duplicates
    c = result.report.counters
    assert c["rehost_rows_matched"] == 30 - len(duplicates) + 3 + 1 and c["rehost_rows_unmatched"] == len(duplicates) + 1
    assert dict(result.report.rows) == {"train": 30 - len(duplicates), "test": 3}  # the escaping pair is not built
    assert any(p.record == escaping and "inside the copy" in p.reason for p in result.report.problems)
    assert c["validation_pairs_not_in_rehost"] == 1493
    reasons = [p.reason for p in result.report.problems if p.action == "note"]
    assert any("fits" in r and "release pairs" in r for r in reasons) and any("states no release pair" in r for r in reasons)
    ds = load_dataset(str(tmp_path / "out"))
    for row in ds["train"]:  # every image went to its own pair, captions from the release
        assert row["before"].getpixel((0, 0)) == (int(row["pair_id"]) % 256, 1, 2) and row["captions"] == refs[row["pair_id"]]
    assert [r["after"].getpixel((0, 0))[1] for r in ds["test"]] == [6, 6, 6]
    assert "re-hosted copy (`the_cauldron`)" in (tmp_path / "out" / "README.md").read_text()

"""Hostile build inputs: each ends in one line naming the file, the record and the cause (exit 1,
no traceback), or in a skipped record of the build report saying why; nothing from outside --raw,
nothing malformed, is written as if it were the release's."""

from __future__ import annotations

import io
import json
import re
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest
from PIL import Image

from idc_toolkit.cli.build import main as build_main

from conftest import REPO, image_bytes, make_spot_the_diff


# -- what a case expects ---------------------------------------------------------------------
@dataclass
class Error:
    """``idc-build`` exits 1 with one line matching ``pattern``."""

    pattern: str


@dataclass
class Skipped:
    """``idc-build`` finishes and its report skips ``record`` of a file matching ``file`` for a reason
    matching ``reason``."""

    file: str
    record: str
    reason: str


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- files ------------------------------------------------------------------------------------
def png(size=(16, 16), color=(40, 60, 80), mode="RGB", fmt="PNG") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, color).save(buf, fmt)
    return buf.getvalue()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def bomb_png(width=20000, height=20000) -> bytes:
    """A well-formed PNG whose header declares ``width`` x ``height`` pixels (a few dozen bytes)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(b"")) + _chunk(b"IEND", b"")


def label_png(size=(16, 16), values=(0, 255)) -> bytes:
    import numpy as np

    arr = np.zeros((size[1], size[0], 3), dtype=np.uint8)
    arr[1:4, 1:4, 0] = values[1]
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _outside(tmp: Path, name: str, data: bytes) -> Path:
    return _write(tmp / "elsewhere" / name, data)


# -- raw releases -----------------------------------------------------------------------------
def folder_raw(tmp: Path, names=("a.png", "b.png"), before: dict | None = None, after: dict | None = None,
               labels: dict | None = None, captions: Optional[tuple[str, bytes]] = None) -> Path:
    """``before/`` + ``after/`` pairs of 16x16 PNGs; ``before``/``after``/``labels`` map a name to bytes or
    to a path outside to link it to."""
    raw = tmp / "raw"
    for side, override in (("before", before or {}), ("after", after or {})):
        for k, name in enumerate(names):
            _place(raw / side / name, override.get(name, png(color=(40, 10 * k, 200 if side == "after" else 0))))
    for name, data in (labels or {}).items():
        _place(raw / "label" / name, data)
    if captions:
        _write(raw / captions[0], captions[1])
    return raw


def _place(path: Path, data: bytes | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, Path):
        path.symlink_to(data)
    else:
        path.write_bytes(data)


def levir_mci_raw(tmp: Path, labels: dict) -> Path:
    raw = tmp / "raw"
    names = ["test_000001.png", "test_000002.png"]
    images = [{"filepath": "test", "filename": n, "split": "test", "changeflag": 1,
               "sentences": [{"raw": " a road appeared ."}]} for n in names]
    _write(raw / "LevirCCcaptions.json", json.dumps({"images": images}))
    for n in names:
        for side in ("A", "B"):
            _write(raw / "images/test" / side / n, png())
        _place(raw / "images/test/label" / n, labels.get(n, label_png()))
    return raw


def second_cc_raw(tmp: Path, maps: dict) -> Path:
    import numpy as np

    raw = tmp / "raw"
    names = ["00001.png", "00002.png"]
    images = [{"filename": n, "split": "test", "sentences": [{"raw": "a building appears ."}]} for n in names]
    _write(raw / "SECOND-CC-AUG.json", json.dumps({"images": images}))
    white = np.full((12, 12, 3), 255, dtype=np.uint8)
    white[2:4, 2:4] = (128, 0, 0)
    buf = io.BytesIO()
    Image.fromarray(white).save(buf, "PNG")
    for n in names:
        for side in ("A", "B"):
            _write(raw / "test/rgb" / side / n, png((12, 12)))
            _place(raw / "test/sem" / side / n, maps.get(f"{side}/{n}", buf.getvalue()))
    return raw


def img_diff_raw(tmp: Path, bbox: str) -> Path:
    raw = tmp / "raw"
    records = [{"conversations": [{"from": "human", "value": "?"}, {"from": "gpt", "value": f"caption {i}"}],
                "path": f"e/{i}", "bbox": b} for i, b in enumerate(["[1, 1, 5, 5]", bbox])]
    _write(raw / "img_diff_object_replacement.json", json.dumps(records))
    for r in records:
        for k in (0, 1):
            _write(raw / "object_replacement" / f"{r['path']}_{k}.jpg", png((12, 10), fmt="JPEG"))
    return raw


DIFFSPOT_GOOD = {"task_type": "visual_diff", "difficulty": "easy", "ground_truth_diff": "The button turned red.",
                 "mutation_dicts_json": json.dumps([{"type": "color"}]), "domain": "shop",
                 "target_bbox_x": 1, "target_bbox_y": 1, "target_bbox_w": 5, "target_bbox_h": 3}


def diffspot_raw(tmp: Path, hostile: dict) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [DIFFSPOT_GOOD, {**DIFFSPOT_GOOD, **hostile}]
    cell = {"bytes": png((20, 12)), "path": None}
    table = [{**r, "image_before": cell, "image_after": cell} for r in rows]
    raw = tmp / "raw"
    (raw / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(table), raw / "data/test-00000-of-00001.parquet")
    return raw


def dubai_raw(tmp: Path, filename) -> Path:
    raw = tmp / "raw"
    test = [{"filename": filename, "split": "test", "sentences": [{"raw": "new roads"}]},
            {"filename": "1x1.tif", "split": "test", "sentences": [{"raw": "an island"}]}]
    for split, images in (("Train", []), ("Validation", []), ("Test", test)):
        _write(raw / f"description_jsontr_te_val/{split}_Dubai_CC.json", json.dumps({"images": images}))
    for year in ("2000", "2010"):
        _write(raw / f"RGB/500_{year}/1x1.tif", png(fmt="TIFF"))
    return raw


SPOT = {"train": [{"img_id": "1", "sentences": ["a car left"]}, {"img_id": "2", "sentences": ["a person appeared"]}],
        "val": [{"img_id": "4", "sentences": ["x"]}], "test": [{"img_id": "5", "sentences": ["a truck arrived"]}]}


def rehost_raw(tmp: Path, first_before: bytes | None = None, corrupt: bool = False) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = make_spot_the_diff(tmp / "raw", SPOT, fmt_images=False)
    copy = tmp / "the_cauldron"
    (copy / "spot_the_diff").mkdir(parents=True)
    shard = copy / "spot_the_diff/train-00000-of-00001.parquet"
    if corrupt:
        shard.write_bytes(b"PAR1 this was never a parquet file")
        return raw, copy
    rows = [{"images": [{"bytes": first_before if pid == "1" and first_before else image_bytes(), "path": None},
                        {"bytes": image_bytes(color=(1, 2, 3)), "path": None}],
             "texts": [{"user": "What differs?", "assistant": answer}]}
            for pid, answer in (("1", "A car left."), ("2", "A person appeared."))]
    pq.write_table(pa.Table.from_pylist(rows), shard)
    return raw, copy


DEEP = "[" * 100_000 + "]" * 100_000
DIGITS = "1" * 10_000


def _csv(text: str, encoding: str = "utf-8") -> tuple[str, bytes]:
    return "captions.csv", text.encode(encoding)


# -- the table ------------------------------------------------------------------------------
Case = Callable[[Path], tuple[list[str], object]]


def _build(name: str, raw: Path, *extra: str) -> list[str]:
    return [name, "--raw", str(raw), *extra]


def _rehost_build(raw: Path, copy: Path) -> list[str]:
    return _build("spot_the_diff", raw, "--config", f"rehost={copy}")


CASES: dict[str, Case] = {
    # 1. labels read through symbolic links from outside --raw: the images' rule
    "folder label linked from outside": lambda t: (
        _build("folder", folder_raw(t, labels={"a.png": _outside(t, "secret.png", label_png())})),
        Skipped(r"label/a\.png$", "a.png", "resolves outside the raw folder")),
    "folder label folder linked from outside": lambda t: (
        _build("folder", _linked_label_folder(t)),
        Skipped(r"label/a\.png$", "a.png", "resolves outside the raw folder")),
    "levir_mci label linked from outside": lambda t: (
        _build("levir_mci", levir_mci_raw(t, {"test_000001.png": _outside(t, "secret.png", label_png())})),
        Skipped(r"label/test_000001\.png$", "test_000001", "resolves outside the raw folder")),
    "second_cc sem map linked from outside": lambda t: (
        _build("second_cc", second_cc_raw(t, {"B/00002.png": _outside(t, "secret.png", png((12, 12), (255, 255, 255)))})),
        Skipped(r"sem/B/00002\.png$", r"images[1] (00002.png)", "resolves outside the raw folder")),
    # 2. decompression bombs, read from the header only
    "folder image of 20000x20000": lambda t: (
        _build("folder", folder_raw(t, before={"b.png": bomb_png()})),
        Skipped(r"before/b\.png$", "b", r"before image: 20000 x 20000 pixels.*decompression-bomb limit")),
    "folder image of 20000x20000, full verification": lambda t: (
        _build("folder", folder_raw(t, after={"b.png": bomb_png()}), "--verify-images", "full"),
        Skipped(r"after/b\.png$", "b", r"after image: 20000 x 20000 pixels.*decompression-bomb limit")),
    "rehost image of 20000x20000": lambda t: (
        _rehost_build(*rehost_raw(t, bomb_png())),
        Skipped(r"train-00000-of-00001\.parquet#row 0", "1", r"before image: 20000 x 20000 pixels.*decompression-bomb")),
    "levir_mci label of 20000x20000": lambda t: (
        _build("levir_mci", levir_mci_raw(t, {"test_000002.png": bomb_png()})),
        Skipped(r"label/test_000002\.png$", "test_000002", r"20000 x 20000 pixels.*decompression-bomb limit")),
    # 3. labels of another size than their pair, or not a PNG at all
    "levir_mci label of 300x7 for a 16x16 pair": lambda t: (
        _build("levir_mci", levir_mci_raw(t, {"test_000002.png": label_png((300, 7))})),
        Skipped(r"label/test_000002\.png$", "test_000002", r"300 x 7 pixels.*before image is 16 x 16")),
    "levir_mci label that is no image": lambda t: (
        _build("levir_mci", levir_mci_raw(t, {"test_000002.png": b"<html>403 Forbidden</html>"})),
        Skipped(r"label/test_000002\.png$", "test_000002", r"label: not an image")),
    "levir_mci label cut short": lambda t: (
        _build("levir_mci", levir_mci_raw(t, {"test_000002.png": label_png()[:60]})),
        Skipped(r"label/test_000002\.png$", "test_000002", r"label: .*PNG")),
    "second_cc sem map of another size": lambda t: (
        _build("second_cc", second_cc_raw(t, {"A/00001.png": png((12, 30), (255, 255, 255))})),
        Skipped(r"sem/A/00001\.png$", r"images[0] (00001.png)", r"12 x 30 pixels.*before image is 12 x 12")),
    "folder label that is a JPEG": lambda t: (
        _build("folder", folder_raw(t, labels={"a.png": png(fmt="JPEG")})),
        Skipped(r"label/a\.png$", "a.png", r"JPEG.*lossy.*PNG")),
    "folder label of garbage": lambda t: (
        _build("folder", folder_raw(t, labels={"b.png": b"\x00" * 64})),
        Skipped(r"label/b\.png$", "b.png", r"not an image")),
    # 4. boxes: finite, ordered, inside the image
    "img_diff box of 1e400": lambda t: (
        _build("img_diff", img_diff_raw(t, "[1e400, 0, 5, 5]")),
        Skipped(r"img_diff_object_replacement\.json$", "[1]", r"not finite")),
    "img_diff box with a negative corner": lambda t: (
        _build("img_diff", img_diff_raw(t, "[-5, 0, 5, 5]")),
        Skipped(r"img_diff_object_replacement\.json$", "[1]", r"negative")),
    "img_diff box x0 > x1": lambda t: (
        _build("img_diff", img_diff_raw(t, "[8, 0, 2, 5]")),
        Skipped(r"img_diff_object_replacement\.json$", "[1]", r"x0 > x1")),
    "img_diff bbox {[]: 1}": lambda t: (
        _build("img_diff", img_diff_raw(t, "{[]: 1}")),
        Skipped(r"img_diff_object_replacement\.json$", "[1]", r"not a box or a list of")),
    "img_diff box outside the image": lambda t: (
        _build("img_diff", img_diff_raw(t, "[0, 0, 50, 50]")),
        Skipped(r"img_diff_object_replacement\.json#\[1\]$", "replacement/e/1", r"change_boxes\[0\].*outside the 12 x 10 before image")),
    "diffspot box of negative width": lambda t: (
        _build("diffspot", diffspot_raw(t, {"target_bbox_w": -5})),
        Skipped(r"test-00000-of-00001\.parquet$", "row 1 (test_1)", r"target_bbox_w -5")),
    "diffspot box outside the image": lambda t: (
        _build("diffspot", diffspot_raw(t, {"target_bbox_x": 100})),
        Skipped(r"test-00000-of-00001\.parquet#row 1 \(test_1\)$", "test_1", r"outside the 20 x 12 before image")),
    # 5. JSON the card declares as JSON; nesting and numbers Python's reader refuses
    "diffspot mutations not JSON": lambda t: (
        _build("diffspot", diffspot_raw(t, {"task_type": "no_diff", "mutation_dicts_json": "{not json"})),
        Error(r"test-00000-of-00001\.parquet, record row 1 \(test_1\): mutation_dicts_json is not JSON")),
    "diffspot mutations 100,000 deep": lambda t: (
        _build("diffspot", diffspot_raw(t, {"mutation_dicts_json": DEEP})),
        Error(r"test-00000-of-00001\.parquet, record row 1 \(test_1\): mutation_dicts_json: JSON nested deeper")),
    "diffspot mutations with a 10,000-digit number": lambda t: (
        _build("diffspot", diffspot_raw(t, {"mutation_dicts_json": f'[{{"type": "color", "size": {DIGITS}}}]'})),
        Error(r"record row 1 \(test_1\): mutation_dicts_json: a number of 10000 digits.*4300")),
    "annotation file 100,000 deep": lambda t: (
        _build("spot_the_diff", _write_spot(t, DEEP)),
        Error(r"annotations/train\.json: .*nested")),
    "annotation file with a 10,000-digit id": lambda t: (
        _build("spot_the_diff", _write_spot(t, f'[{{"img_id": {DIGITS}, "sentences": ["x"]}}]')),
        Error(r"annotations/train\.json: .*10000 digits")),
    # 6. a Dubai-CC filename that is a list
    "dubai_cc filename a list": lambda t: (
        _build("dubai_cc", dubai_raw(t, ["6x26.tif"])),
        Skipped(r"Test_Dubai_CC\.json$", "images[0]", r"filename must be a string, found list")),
    # 7. a corrupt parquet in a rehost= copy
    "rehost copy with a corrupt parquet": lambda t: (
        _rehost_build(*rehost_raw(t, corrupt=True)),
        Error(r"train-00000-of-00001\.parquet: not a readable parquet file")),
    # 8. captions.csv read strictly; encodings named
    "csv stray quote merging rows": lambda t: (
        _build("folder", folder_raw(t, ("a.png", "b.png", "c.png"), captions=_csv(
            'image,caption\na.png,"a car left\nb.png,a bike appeared\nc.png,the "lamp" is on\n'))),
        Error(r"captions\.csv: 1 malformed CSV row: line 2: .*runs to line 4: a stray quote")),
    "csv stray quote closed at a line's end": lambda t: (
        _build("folder", folder_raw(t, ("a.png", "b.png"), captions=_csv(
            'image,caption\na.png,"a car left\nb.png,a bike appeared"\n'))),
        Error(r"captions\.csv: 1 malformed CSV row: line 2: a quoted field runs to line 3 over the row 'b\.png,a bike")),
    "csv unquoted comma, two rows": lambda t: (
        _build("folder", folder_raw(t, ("a.png", "b.png", "c.png"), captions=_csv(
            "image,caption\na.png,a car, then a bike\nb.png,fine\nc.png,one, two, three\n"))),
        Error(r"captions\.csv: 2 malformed CSV rows: line 2: 3 fields.*header has 2.*; line 4: 4 fields")),
    "csv in latin-1": lambda t: (
        _build("folder", folder_raw(t, captions=_csv("image,caption\na.png,un caf\xe9\n", "latin-1"))),
        Error(r"captions\.csv: not UTF-8 text \(byte 0xe9 at offset 26, line 2\); save it as UTF-8")),
    "csv in UTF-16": lambda t: (
        _build("folder", folder_raw(t, captions=_csv("image,caption\na.png,x\n", "utf-16"))),
        Error(r"captions\.csv: UTF-16 text \(it starts with a UTF-16 byte-order mark\); save it as UTF-8")),
    "jsonl in UTF-32": lambda t: (
        _build("folder", folder_raw(t, captions=("captions.jsonl", '{"image": "a.png", "caption": "x"}\n'.encode("utf-32")))),
        Error(r"captions\.jsonl: UTF-32 text")),
    "jsonl in latin-1": lambda t: (
        _build("folder", folder_raw(t, captions=("captions.jsonl", '{"image": "a.png", "caption": "caf\xe9"}\n'.encode("latin-1")))),
        Error(r"captions\.jsonl: not UTF-8 text \(byte 0xe9")),
}


def _linked_label_folder(t: Path) -> Path:
    raw = folder_raw(t)
    outside = t / "elsewhere_labels"
    _write(outside / "a.png", label_png())
    (raw / "label").symlink_to(outside, target_is_directory=True)
    return raw


def _write_spot(t: Path, train_json: str) -> Path:
    raw = make_spot_the_diff(t / "raw", SPOT)
    (raw / "data/annotations/train.json").write_text(train_json)
    return raw


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_is_one_line_or_a_skipped_record(name, tmp_path, capsys):
    argv, expect = CASES[name](tmp_path)
    out = tmp_path / "out"
    code = build_main([*argv, "--out", str(out), "--no-progress"])
    stdout, err = capsys.readouterr()
    if isinstance(expect, Error):
        assert code == 1, (stdout, err)
        line = _one_line(err)
        assert re.search(expect.pattern, line), line
        assert not (out / "README.md").exists()
        return
    assert code == 0, err
    problems = json.loads((out / "build_report.json").read_text())["problems"]
    hits = [p for p in problems if p["action"] == "skipped" and re.search(expect.file, p["file"])
            and p["record"] == expect.record and re.search(expect.reason, p["reason"])]
    assert len(hits) == 1, problems


def test_a_utf8_bom_is_read_as_utf8(tmp_path):
    raw = folder_raw(tmp_path, captions=_csv("\ufeffimage,caption\na.png,un café\nb.png,x\n"))
    assert build_main(["folder", "--raw", str(raw), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    from datasets import load_dataset

    assert load_dataset(str(tmp_path / "out"), split="test")["captions"] == [["un café"], ["x"]]


def test_a_pair_skipped_for_a_case_mismatch_is_named_in_the_summary(tmp_path, capsys):
    raw = folder_raw(tmp_path, ("a.png",))
    _write(raw / "before/coffee.jpg", png(fmt="JPEG"))
    _write(raw / "after/Coffee.jpg", png(fmt="JPEG"))
    out = tmp_path / "out"
    assert build_main(["folder", "--raw", str(raw), "--out", str(out), "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    assert "after/Coffee.jpg differs from before/coffee.jpg only in case" in stdout, stdout
    assert str(out / "build_report.json") in stdout, stdout


def test_list_into_a_closed_pipe_ends_quietly(tmp_path):
    """``idc-build --list | head``: the reader goes away first; no BrokenPipeError traceback."""
    code = "import sys; from idc_toolkit.cli.build import main; sys.exit(main(['--list']))"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "BrokenPipeError" not in err and "Traceback" not in err and "Exception ignored" not in err, err


@pytest.mark.parametrize("text, cause", [
    (DEEP, r"JSON nested deeper than Python's JSON reader can follow"),
    (f'{{"1": [{DIGITS}]}}', r"a number of 10000 digits, more than Python reads \(4300"),
    (f'{{"pair_id": "1", "caption": "a"}}\n{{"pair_id": "2", "caption": {DEEP}}}\n', r"line 2: JSON nested deeper")])
def test_check_references_answers_deep_json_and_long_numbers_in_one_line(text, cause, tmp_path, capsys):
    """One line for the problem (check-references' own count line follows it), no traceback."""
    from idc_toolkit.cli.eval import main as eval_main

    path = _write(tmp_path / "refs.json", text)
    assert eval_main(["check-references", str(path)]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 2 and lines[1] == f"{path}: 1 problem(s)", err
    assert lines[0].startswith(f"{path}: ") and re.search(cause, lines[0]), err


def test_image_files_written_from_ids_keep_ids_apart():
    """The only builder that writes image files names them by iNaturalist's numeric photo id (no
    free-form id reaches a file name); ids that clean to the same name keep apart by their hash."""
    from idc_toolkit.builders.birds_to_words import photo_name
    from idc_toolkit.files import file_name_for

    assert photo_name("https://static.inaturalist.org/photos/123/medium.JPG") == "123.jpg"
    with pytest.raises(ValueError):
        photo_name("https://static.inaturalist.org/photos/x y/medium.jpg")
    assert file_name_for("x y", ".png") != file_name_for("x_y", ".png")

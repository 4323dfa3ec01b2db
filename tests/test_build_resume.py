"""An interrupted build continues where it stopped and ends identical to an uninterrupted one."""

import json

import pyarrow.parquet as pq
import pytest

import idc_toolkit.build as build_mod
from idc_toolkit.build import build_dataset, make_builder
from idc_toolkit.writer import ShardWriter

from conftest import make_spot_the_diff

ANN = {
    "train": [{"img_id": str(i), "sentences": [f"change number {i}"]} for i in range(1, 26)],
    "val": [{"img_id": "100", "sentences": ["x"]}],
    "test": [{"img_id": str(i), "sentences": [f"test {i}"]} for i in range(200, 207)],
}


def _rows(out):
    rows = []
    for f in sorted((out / "data").glob("*.parquet")):
        t = pq.read_table(f)
        rows += [(f.name, r["pair_id"], r["captions"], r["before"]["bytes"]) for r in t.to_pylist()]
    return rows


def test_interrupted_build_resumes(tmp_path, monkeypatch):
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    (raw / "data/resized_images/3_2.png").unlink()    # a skip before the interruption point
    (raw / "data/resized_images/20.png").unlink()     # and one after it
    reference = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "ref", max_shard_rows=4, progress=False)

    calls = {"n": 0}
    original_add = ShardWriter.add

    def flaky_add(self, row, nbytes):
        calls["n"] += 1
        if calls["n"] == 11:
            raise KeyboardInterrupt("simulated interruption")
        return original_add(self, row, nbytes)

    monkeypatch.setattr(ShardWriter, "add", flaky_add)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(make_builder("spot_the_diff", raw), out, max_shard_rows=4, progress=False)
    state = json.loads((out / ".idc_build.json").read_text())
    assert state["splits"]["train"]["shards"] == ["train-00000.parquet", "train-00001.parquet"]
    monkeypatch.setattr(ShardWriter, "add", original_add)

    reads = []
    original_read = build_mod.read_image_bytes
    monkeypatch.setattr(build_mod, "read_image_bytes", lambda p, v: reads.append(p.name) or original_read(p, v))
    resumed = build_dataset(make_builder("spot_the_diff", raw), out, max_shard_rows=4, progress=False)
    assert resumed.resumed
    assert "1.png" not in reads and "8.png" not in reads  # finished shards are not read again
    assert _rows(out) == _rows(tmp_path / "ref")
    assert resumed.report.to_dict() == reference.report.to_dict()
    assert [p.record for p in resumed.report.problems if p.action == "skipped"] == ["3", "20"]
    assert json.loads((out / "build_report.json").read_text()) == json.loads((tmp_path / "ref" / "build_report.json").read_text())
    assert sorted(p.name for p in (out / "data").iterdir()) == sorted(p.name for p in (tmp_path / "ref" / "data").iterdir())

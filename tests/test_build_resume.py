"""The run engine under idc-build: interruptions (Ctrl-C, kill -9, a kill inside finalise),
fingerprinted resume, row-range shards, locks, and a build that writes nothing."""

import hashlib
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
from datasets import load_dataset

import idc_toolkit.building.pipeline as build_mod
from idc_toolkit.builders import make_builder
from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.errors import BuildError, RunError

from conftest import kill_mid_run, make_spot_the_diff

ANN = {
    "train": [{"img_id": str(i), "sentences": [f"change number {i}"]} for i in range(1, 26)],
    "val": [{"img_id": "100", "sentences": ["x"]}],
    "test": [{"img_id": str(i), "sentences": [f"test {i}"]} for i in range(200, 207)],
}


def _files(out):
    """Every file of a finished folder with its SHA-256: byte identity, not just equal rows."""
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def raw(tmp_path):
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    (raw / "data/resized_images/3_2.png").unlink()    # a skip before the interruption point
    (raw / "data/resized_images/20.png").unlink()     # and one after it
    return raw


@pytest.fixture
def reference(raw, tmp_path):
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "ref", rows_per_part=4, progress=False)
    return tmp_path / "ref", result


def test_ctrl_c_then_rerun_resumes_without_rereading_finished_parts(raw, reference, tmp_path, monkeypatch):
    ref_dir, ref = reference
    original_read = build_mod.read_image_bytes
    calls = {"n": 0}

    def flaky(path, verify):
        calls["n"] += 1
        if calls["n"] == 23:
            raise KeyboardInterrupt("simulated Ctrl-C")
        return original_read(path, verify)

    monkeypatch.setattr(build_mod, "read_image_bytes", flaky)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert not (out / "README.md").exists() and not (out / "data").exists()  # nothing loadable yet
    with pytest.raises(Exception):
        load_dataset(str(out))
    reads = []
    monkeypatch.setattr(build_mod, "read_image_bytes", lambda p, v: reads.append(p.name) or original_read(p, v))
    resumed = build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert resumed.resumed
    assert "1.png" not in reads and "4_2.png" not in reads  # finished parts are not read again
    assert _files(out) == _files(ref_dir)
    assert resumed.report.to_dict() == ref.report.to_dict()
    assert [p.record for p in resumed.report.problems if p.action == "skipped"] == ["3", "20"]


CHILD = textwrap.dedent("""
    import sys, time
    import idc_toolkit.building.pipeline as m
    from idc_toolkit.cli.build import main
    original = m.read_image_bytes
    m.read_image_bytes = lambda p, v: (time.sleep(0.01), original(p, v))[1]
    sys.exit(main(["spot_the_diff", "--raw", sys.argv[1], "--out", sys.argv[2], "--rows-per-part", "4", "--no-progress"]))
""")


@pytest.mark.parametrize("seed", [0, 1])  # 2 x 3 kills: as many kill events as the 3 x 2 before
def test_kill_9_at_a_random_moment_then_rerun_is_identical(raw, reference, tmp_path, seed):
    ref_dir, _ = reference
    out = tmp_path / "out"
    rng = random.Random(seed)
    for _ in range(3):  # idc-build killed three times, at random moments: start-up, or inside a part
        kill_mid_run(CHILD, [raw, out], out, rng.randint(-1, 3), 0.05, rng)
    build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert _files(out) == _files(ref_dir)


def test_annotation_edited_after_a_kill_is_named_and_refused(raw, tmp_path, monkeypatch):
    original_read = build_mod.read_image_bytes
    calls = {"n": 0}

    def flaky(path, verify):
        calls["n"] += 1
        if calls["n"] == 15:
            raise KeyboardInterrupt
        return original_read(path, verify)

    monkeypatch.setattr(build_mod, "read_image_bytes", flaky)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    monkeypatch.setattr(build_mod, "read_image_bytes", original_read)
    path = raw / "data/annotations/train.json"
    items = json.loads(path.read_text())
    items.insert(2, {"img_id": "1", "sentences": ["an inserted item for an existing pair"]})  # shifts every position
    path.write_text(json.dumps(items))
    with pytest.raises(RunError, match="raw:annotations/train.json"):
        build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    rebuilt = build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, overwrite=True, progress=False)
    ds = load_dataset(str(out), split="train")
    assert sorted(ds["pair_id"], key=int) == [str(i) for i in range(1, 26) if i not in (3, 20)]  # none twice, none lost
    assert ds[0]["captions"] == ["change number 1", "an inserted item for an existing pair"]
    assert rebuilt.report.rows["train"] == 23


def test_kill_inside_finalise_is_finished_by_the_rerun(raw, reference, tmp_path, monkeypatch):
    import idc_toolkit.runs.folder as folder_mod

    ref_dir, _ = reference
    real_replace = os.replace

    def dies_moving_data(src, dst):
        if str(dst).endswith("/data"):
            raise KeyboardInterrupt("killed between the card and the data")
        return real_replace(src, dst)

    monkeypatch.setattr(folder_mod.os, "replace", dies_moving_data)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert (out / "README.md").exists() and not (out / "data").exists()
    with pytest.raises(Exception):  # the card names data files that are not there yet: not loadable
        load_dataset(str(out))
    monkeypatch.setattr(folder_mod.os, "replace", real_replace)
    build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert _files(out) == _files(ref_dir)


def test_shards_on_a_one_file_split_complete_the_same_folder(raw, reference, tmp_path, capsys):
    ref_dir, _ = reference
    out = tmp_path / "out"
    first = build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, shard=(0, 2), progress=False)
    assert not first.already_built and not (out / "README.md").exists()
    with pytest.raises(Exception):
        load_dataset(str(out))
    build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, shard=(1, 2), progress=False)
    assert _files(out) == _files(ref_dir)


def test_a_second_job_on_a_locked_folder_names_the_holder(raw, tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from idc_toolkit.runs.locks import FolderLock
        from pathlib import Path
        lock = FolderLock(Path({str(out)!r}) / ".idc_run" / "locks" / "job-0-of-1.lock", "x").acquire()
        print("held", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunError, match=f"in use by pid {holder.pid} on "):
            build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    build_dataset(make_builder("spot_the_diff", raw), out, progress=False)  # the lock died with its holder


def test_a_split_whose_every_pair_is_skipped_is_an_error_naming_why(tmp_path):
    raw = make_spot_the_diff(tmp_path / "raw", ANN, fmt_images=False)  # annotations, no images yet
    with pytest.raises(BuildError, match=r"0 of 25 train pairs written: 25 x before image: image file not found under "
                                         r".*resized_images/"):
        build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)


def test_card_sizes_mean_what_push_to_hub_writes(reference):
    ref_dir, _ = reference
    from idc_toolkit.card_data import read_card_data

    info = read_card_data(ref_dir)["dataset_info"]
    for split in info["splits"]:
        ds = load_dataset(str(ref_dir), split=split["name"])
        assert split["num_bytes"] == ds._estimate_nbytes()  # what push_to_hub computes for the loaded split
    parquet = sum(p.stat().st_size for p in (ref_dir / "data").glob("*.parquet"))
    assert info["download_size"] == parquet and info["dataset_size"] == sum(s["num_bytes"] for s in info["splits"])
    assert "idc_toolkit_run" in read_card_data(ref_dir) and not (ref_dir / ".idc_run").exists()


def test_kill_after_the_moves_finishes_without_redoing_the_work(raw, reference, tmp_path, monkeypatch):
    import idc_toolkit.runs.folder as folder_mod

    ref_dir, _ = reference
    real_rmtree = folder_mod.shutil.rmtree

    def dies_cleaning_up(path, *a, **k):
        if str(path).endswith("/final"):
            raise KeyboardInterrupt("killed after the parts were removed")
        return real_rmtree(path, *a, **k)

    monkeypatch.setattr(folder_mod.shutil, "rmtree", dies_cleaning_up)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    monkeypatch.setattr(folder_mod.shutil, "rmtree", real_rmtree)

    def no_reads(*a, **k):
        raise AssertionError("a finished build read an image again")

    monkeypatch.setattr(build_mod, "read_image_bytes", no_reads)
    build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, progress=False)
    assert _files(out) == _files(ref_dir)


def test_shards_are_cut_where_push_to_hub_cuts_them(raw, tmp_path):
    """``--max-shard-size`` means push_to_hub's ``max_shard_size``: int(num_bytes / size) + 1
    shards of contiguous rows as ``Dataset.shard(contiguous=True)`` cuts them, whatever the
    parts were, and the rows stay in order."""
    from idc_toolkit.card_data import read_card_data

    whole = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "whole", rows_per_part=4, progress=False)
    train_bytes = {s["name"]: s["num_bytes"] for s in read_card_data(tmp_path / "whole")["dataset_info"]["splits"]}["train"]
    size = train_bytes // 5 + 1  # five shards for train, fewer for the smaller splits
    out = tmp_path / "cut"
    build_dataset(make_builder("spot_the_diff", raw), out, rows_per_part=4, max_shard_bytes=size, progress=False)
    info = {s["name"]: s for s in read_card_data(out)["dataset_info"]["splits"]}
    cuts = {}
    for split in whole.report.rows:
        ds = load_dataset(str(tmp_path / "whole"), split=split)
        expected_shards = int(ds._estimate_nbytes() / size) + 1
        assert info[split]["num_bytes"] == ds._estimate_nbytes()
        files = sorted((out / "data").glob(f"{split}-*.parquet"))
        assert len(files) == expected_shards
        cuts[split] = len(files)
        lengths = [load_dataset("parquet", data_files=str(f), split="train").num_rows for f in files]
        assert lengths == [len(ds.shard(expected_shards, i, contiguous=True)) for i in range(expected_shards)]
        assert load_dataset(str(out), split=split)["pair_id"] == ds["pair_id"]
    assert cuts["train"] > 2 and cuts["train"] != -(-whole.report.rows["train"] // 4)  # not the 4-row parts


def test_a_rebuild_with_an_equal_card_loads_its_own_rows_not_the_cached_ones(tmp_path):
    """``load_dataset(folder)`` keys its Arrow cache by the folder name and card only: a
    rebuild after a one-digit fix keeps every size, so the card must carry the files'
    fingerprint or the previous build's rows come back."""
    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    out = tmp_path / "out"
    build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
    assert load_dataset(str(out), split="train")[0]["captions"] == ["change number 1"]
    path = raw / "data/annotations/train.json"
    path.write_text(path.read_text().replace('"change number 1"', '"change number 9"'))
    build_dataset(make_builder("spot_the_diff", raw), out, progress=False, overwrite=True)
    assert load_dataset(str(out), split="train")[0]["captions"] == ["change number 9"]


def test_a_folder_edited_after_it_was_written_is_refused_before_load_dataset_could_serve_stale_rows(tmp_path):
    """The same rows and columns, one caption changed by hand: the card's digest of the data
    files no longer matches, so the run engine and idc-train refuse the folder in one line."""
    import pyarrow.parquet as pq

    from idc_toolkit.runs.rows import open_split

    raw = make_spot_the_diff(tmp_path / "raw", ANN)
    out = tmp_path / "out"
    build_dataset(make_builder("spot_the_diff", raw), out, progress=False)
    open_split(out, "train")  # as written: accepted
    path = sorted((out / "data").glob("train-*.parquet"))[0]
    table = pq.read_table(path)
    captions = table.column("captions").to_pylist()
    captions[0] = ["change number 9"]
    pq.write_table(table.set_column(table.schema.get_field_index("captions"), "captions", [captions]), path)
    with pytest.raises(RunError, match=r"data/train-\*.parquet are not the files its card .* was written for"):
        open_split(out, "train")

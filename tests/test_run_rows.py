"""Row sources and the part grid, against plain references."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from idc_toolkit.runs.rows import ParquetRows, contiguous_block, part_grid


def test_parquet_rows_read_any_range_like_a_plain_table(tmp_path):
    files, everything = [], []
    for f, (n, group) in enumerate([(37, 10), (5, 100), (64, 64), (23, 7)]):  # row groups of every shape
        rows = [{"pair_id": f"{f}_{k}", "x": k} for k in range(n)]
        path = tmp_path / f"train-{f:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=group)
        files.append(path)
        everything += rows
    source = ParquetRows(files)
    assert len(source) == len(everything)
    rng = random.Random(0)
    for _ in range(200):  # random ranges, in random order
        a = rng.randrange(0, len(everything) + 1)
        b = rng.randrange(a, min(len(everything), a + 40) + 1)
        assert source.read(a, b) == everything[a:b]
    sequential = [r for start in range(0, len(everything), 9) for r in source.read(start, min(start + 9, len(everything)))]
    assert sequential == everything
    with pytest.raises(IndexError):
        source.read(0, len(everything) + 1)


def test_shards_are_contiguous_blocks_like_dataset_shard():
    from datasets import Dataset

    ds = Dataset.from_dict({"i": list(range(23))})
    for n in (1, 2, 3, 7, 23):
        blocks = [list(contiguous_block(23, i, n)) for i in range(n)]
        assert blocks == [ds.shard(n, i, contiguous=True)["i"] for i in range(n)]
    parts = part_grid("test", 1270, 500)
    assert [(p.start, p.stop) for p in parts] == [(0, 500), (500, 1000), (1000, 1270)]


def test_progress_moves_with_batches_not_parts(tmp_path):
    """A part of slow rows reports after every batch (a long pass shows progress every minute)."""
    from datasets import Features, Value

    from idc_toolkit.runs.engine import PartOutput, write_part
    from idc_toolkit.runs.rows import ListRows, Part

    class Task:
        batch_size = 4
        features = Features({"x": Value("int64")})

        def __call__(self, split, rows, start):
            return PartOutput([{"x": r} for r in rows])

    told = []
    n = write_part(tmp_path, Part("train", 0, 0, 10), ListRows(list(range(10))), Task(), on_batch=told.append)
    assert n == 10 and told == [4, 4, 2]


def test_hub_rows_travel_as_their_id_and_load_again_where_they_land(demo_dataset, tmp_path):
    """A Hub split pickled for a Ray actor on another node carries its id, split and fingerprint,
    not the driver's cache files: unpickled under another HF cache it loads and reads the same rows;
    a reload of another version is refused. (A local folder stands in for the Hub id: offline.)"""
    import pickle
    import subprocess
    import sys

    from datasets import load_dataset

    from idc_toolkit.errors import RunError
    from idc_toolkit.runs.rows import DatasetRows

    ds = load_dataset(str(demo_dataset), split="test")
    rows = DatasetRows(ds, str(demo_dataset), "test")
    blob = pickle.dumps(rows)
    assert ds.cache_files[0]["filename"].encode() not in blob and len(blob) < 2000
    (tmp_path / "rows.pkl").write_bytes(blob)
    expected = [r["pair_id"] for r in rows.read(0, len(rows))]
    code = ("import pickle, sys; rows = pickle.loads(open(sys.argv[1], 'rb').read()); "
            "print([r['pair_id'] for r in rows.read(0, len(rows))])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "rows.pkl")], capture_output=True, text=True,
                         env={**__import__("os").environ, "HF_DATASETS_CACHE": str(tmp_path / "other_node_cache")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == repr(expected)
    rows.fingerprint = "another-version"
    moved = pickle.loads(pickle.dumps(rows))
    with pytest.raises(RunError, match="not the version the job started with"):
        moved.read(0, 1)


def test_row_groups_are_at_most_100_rows_as_the_readme_says(demo_dataset):
    import glob

    from idc_toolkit.runs.parquet import ROWS_PER_GROUP

    assert ROWS_PER_GROUP == 100
    for f in glob.glob(str(demo_dataset / "data" / "*.parquet")):
        meta = pq.ParquetFile(f).metadata
        assert all(0 < meta.row_group(i).num_rows <= 100 for i in range(meta.num_row_groups))


def test_an_edit_that_leaves_the_parquet_tail_unchanged_changes_the_input_fingerprint(tmp_path):
    """A one-letter caption edit can keep the file's size and its last 64 KiB (footer, page
    sizes, statistics and the image column's pages), which is what the fingerprint hashed
    before: it must still change, or a resume mixes rows of two versions of its input."""
    from idc_toolkit.runs.fingerprint import parquet_files_fingerprint

    rng = random.Random(0)
    n = 20_000
    base = [[f"the {rng.choice(['red', 'blue', 'green'])} cube moved {i}"] for i in range(n)]
    images = [rng.randbytes(64) for _ in range(n)]
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.table({"captions": base, "after": images}), path)
    before = parquet_files_fingerprint([path])
    size, tail = path.stat().st_size, path.read_bytes()[-65536:]
    for _ in range(400):  # about 1 edit in 25 keeps size and tail (8 of 200 measured)
        caps = [list(c) for c in base]
        k = rng.randrange(n // 2)
        j = rng.randrange(len(caps[k][0]))
        caps[k][0] = caps[k][0][:j] + rng.choice("abcdefghijklmnopqrstuvwxyz") + caps[k][0][j + 1:]
        if caps == base:
            continue
        pq.write_table(pa.table({"captions": caps, "after": images}), path)
        if path.stat().st_size == size and path.read_bytes()[-65536:] == tail:
            break
    else:
        pytest.fail("no tail-preserving edit found; the premise of this test no longer holds")
    assert pq.read_table(path).column("captions").to_pylist() != base
    assert parquet_files_fingerprint([path]) != before

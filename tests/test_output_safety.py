"""Output folders never lose a user's files, fingerprints follow content, ids never escape."""

import hashlib
import json
import os
from pathlib import Path

import pytest

from idc_toolkit.errors import RunError
from idc_toolkit.files import file_name_for, inside
from idc_toolkit.runs import RunFolder
from idc_toolkit.runs.fingerprint import file_sha256, files_sha256


def test_overwrite_never_removes_files_no_run_of_ours_wrote(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "results.csv").write_text("mine too")
    for overwrite in (False, True):
        with pytest.raises(RunError, match=r"already holds files that are not an idc-toolkit run \(sub, thesis.tex\).*--overwrite never removes them"):
            RunFolder(out, "training", {"a": 1}, owned=("adapter",), card_record=False).open(overwrite)
    assert (out / "thesis.tex").read_text() == "mine" and (out / "sub" / "results.csv").is_file()


def test_a_file_of_our_name_without_our_record_is_not_ours(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("the user's own readme")
    with pytest.raises(RunError, match="without the record of an idc-toolkit run"):
        RunFolder(out, "masks", {"a": 1}).open(overwrite=True)
    assert (out / "README.md").read_text() == "the user's own readme"


def test_overwrite_replaces_only_what_our_run_wrote(tmp_path):
    out = tmp_path / "out"
    RunFolder(out, "training", {"a": 1}, owned=("adapter",), card_record=False).open()
    (out / "adapter").mkdir()
    with pytest.raises(RunError, match="other settings .*a: 1 -> 2"):
        RunFolder(out, "training", {"a": 2}, owned=("adapter",), card_record=False).open()
    RunFolder(out, "training", {"a": 2}, owned=("adapter",), card_record=False).open(overwrite=True)
    assert not (out / "adapter").exists()


def test_evaluation_refuses_outputs_it_did_not_write(tmp_path):
    from idc_toolkit.evaluators.outputs import open_evaluation_folder

    (tmp_path / "per_pair.csv").write_text("a user's file")
    for overwrite in (False, True):
        with pytest.raises(RunError, match="holds per_pair.csv without the record of an idc-toolkit run"):
            open_evaluation_folder(tmp_path, {"x": 1}, overwrite)
    assert (tmp_path / "per_pair.csv").read_text() == "a user's file"
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match=r"not an idc-toolkit run \(notes.txt\)"):
        open_evaluation_folder(tmp_path, {"x": 1}, True)


def test_a_torn_record_is_replaced_with_overwrite_only(tmp_path):
    folder = RunFolder(tmp_path / "out", "training", {"a": 1}, owned=("adapter",), card_record=False).open()
    (folder.state_dir / "run.json").write_text('{"kind": "trai')  # what an in-place write cut by a kill left
    with pytest.raises(RunError, match="run.json is unreadable; pass --overwrite"):
        RunFolder(tmp_path / "out", "training", {"a": 1}, owned=("adapter",), card_record=False).open()
    again = RunFolder(tmp_path / "out", "training", {"a": 1}, owned=("adapter",), card_record=False).open(overwrite=True)
    assert not again.complete and json.loads((again.state_dir / "run.json").read_text())["fields"]["a"] == 1


def test_content_hash_follows_content_not_size_and_mtime(tmp_path, monkeypatch):
    """cp -p / rsync -a / tar keep size and mtime: the cache must still see the new content."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a, b = tmp_path / "weights.bin", tmp_path / "other.bin"
    a.write_bytes(b"model A" * 100)
    b.write_bytes(b"model B" * 100)
    first = file_sha256(a)
    st = a.stat()
    os.replace(b, a)  # another model's file of the same size takes its place...
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))  # ...with the old mtime restored
    assert a.stat().st_size == st.st_size and a.stat().st_mtime_ns == st.st_mtime_ns
    assert file_sha256(a) != first


def test_content_hash_cache_keeps_one_entry_per_existing_file(tmp_path, monkeypatch):
    """Every rebuild hashes new file versions: stale keys are dropped, not kept forever."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("IDC_CACHE", raising=False)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    file_sha256(a), file_sha256(b)
    a.write_bytes(b"three")  # a new version of a
    b.unlink()
    file_sha256(a)
    cache = json.loads((tmp_path / "cache/idc_toolkit/content_hashes.json").read_text())
    assert [k.rsplit("|", 5)[0] for k in cache] == [str(a.resolve())]
    assert list(cache.values()) == [hashlib.sha256(b"three").hexdigest()]


def test_content_hashes_of_many_files_read_and_write_the_cache_once(tmp_path, monkeypatch):
    """A dataset of thousands of shards: one cache read and one write for all of them, and
    each hash is its own file's (checked against hashlib), also for a file named twice."""
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    files = [tmp_path / f"train-{k:05d}.parquet" for k in range(50)]
    for k, f in enumerate(files):
        f.write_bytes(f"shard {k}".encode() * (k + 1))
    writes = []
    real_replace = Path.replace
    monkeypatch.setattr(Path, "replace", lambda self, target: writes.append(target) or real_replace(self, target))
    hashes = files_sha256(files + files[:1])
    assert hashes == [hashlib.sha256(f.read_bytes()).hexdigest() for f in files + files[:1]]
    assert len(writes) == 1
    files[3].write_bytes(b"a new version")
    assert files_sha256(files)[3] == hashlib.sha256(b"a new version").hexdigest()
    assert files_sha256(files) == [file_sha256(f) for f in files] and len(writes) == 2  # the rest cached


def test_processes_asking_for_the_same_new_hashes_at_once_hash_them_once(tmp_path, monkeypatch):
    """torchrun's ranks open the same new dataset at the same moment: one of them hashes it, the
    others wait for its cache entries (each file read once in all), and all get hashlib's values;
    the lock's file is gone afterwards."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import idc_toolkit.runs.fingerprint as fingerprint

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    files = [tmp_path / f"train-{k}.parquet" for k in range(6)]
    for k, f in enumerate(files):
        f.write_bytes(os.urandom(200_000 + k))
    read, hashing, original = [], threading.Event(), fingerprint._sha256_file

    def slow(path, bar=None):
        read.append(path.name)
        hashing.set()
        threading.Event().wait(0.05)  # long enough for the other asker to arrive meanwhile
        return original(path, bar)

    monkeypatch.setattr(fingerprint, "_sha256_file", slow)

    def ask(first):
        if not first:
            hashing.wait(5)  # arrives while the first one hashes
        return fingerprint.files_sha256(files)

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(ask, (True, False, False)))
    expected = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    assert results == [expected] * 3
    assert sorted(read) == sorted(f.name for f in files)
    assert not list((tmp_path / "cache").rglob("*.lock"))


def test_a_long_first_hashing_shows_progress_and_a_cached_one_does_not(tmp_path, monkeypatch, capsys):
    import idc_toolkit.runs.fingerprint as fingerprint

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fingerprint, "PROGRESS_BYTES", 3_000_000)  # "long": 3 MB here
    files = [tmp_path / f"train-{k}.parquet" for k in range(4)]
    for f in files:
        f.write_bytes(os.urandom(1_000_000))
    fingerprint.files_sha256(files[:2], progress=True)  # 2 MB to hash: under the bar's size
    assert "hashing" not in capsys.readouterr().err
    fingerprint.files_sha256(files, progress=False)
    assert "hashing" not in capsys.readouterr().err  # asked for no progress
    files[0].write_bytes(os.urandom(1_000_000))
    for f in files[1:]:
        f.write_bytes(f.read_bytes() + b"x")  # new versions: 4 MB to hash again
    fingerprint.files_sha256(files, progress=True)
    err = capsys.readouterr().err
    assert "hashing the input" in err and "4.00M/4.00M" in err
    fingerprint.files_sha256(files, progress=True)  # cached: nothing to show
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("pair_id", ["../../../X", "/etc/passwd", "a/b", "..", "", "con\x00x", "ok_id-1.png"])
def test_file_names_made_from_ids_stay_inside_their_folder(tmp_path, pair_id):
    name = file_name_for(pair_id, ".png")
    path = inside(tmp_path, name)
    assert path.parent == tmp_path.resolve() and "/" not in name
    with pytest.raises(ValueError):
        inside(tmp_path, "../escape.png")
    assert file_name_for("../a") != file_name_for("__a")  # two ids never share a file


def test_ids_sharing_a_long_prefix_get_distinct_file_names():
    """Clean ids longer than a file name keeps are cut, and every name carries the whole id's hash."""
    prefix = "scene_" + "a" * 200
    ids = [prefix + tail for tail in ("", "1", "2", "_b", "-c", ".d")]
    names = [file_name_for(i, ".png") for i in ids]
    assert len(set(names)) == len(ids) and all(len(n) <= 120 for n in names)
    assert file_name_for("short_id-1").startswith("short_id-1-")  # a clean short id keeps its text, and its hash follows


def test_builders_refuse_ids_that_resolve_outside_raw(tmp_path):
    """Spot-the-Diff's img_id becomes a path: ``../`` and absolute ids, and ids through a link to
    a folder outside (``..`` after it included) are skipped and reported (strict: an error), never
    embedded from outside --raw."""
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.errors import BuildError

    from conftest import image_bytes, make_spot_the_diff

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "private.png").write_bytes(image_bytes("PNG"))
    (secret / "private_2.png").write_bytes(image_bytes("PNG"))
    good = [{"img_id": str(i), "sentences": ["a change"]} for i in range(3)]
    evil = [{"img_id": "../../../secret/private", "sentences": ["x"]}, {"img_id": str(secret / "private"), "sentences": ["y"]},
            {"img_id": "link/private", "sentences": ["z"]}, {"img_id": "link/../0", "sentences": ["w"]}]
    held_out = [{"img_id": str(i), "sentences": ["a change"]} for i in (10, 11)]
    (tmp_path / "raw" / "data" / "resized_images").mkdir(parents=True)
    (tmp_path / "raw" / "data" / "resized_images" / "link").symlink_to(secret)  # "link/../0" is secret/../0.png
    raw = make_spot_the_diff(tmp_path / "raw", {"train": good + evil, "val": held_out[:1], "test": held_out[1:]})
    result = build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out", progress=False)
    assert result.report.rows["train"] == 3
    reasons = [p.reason for p in result.report.problems if p.action == "skipped"]
    assert sum("resolves outside the raw folder" in r for r in reasons) == 4, reasons
    with pytest.raises(BuildError, match="strict mode: .*resolves outside the raw folder"):
        build_dataset(make_builder("spot_the_diff", raw), tmp_path / "out2", progress=False, strict=True)


def test_no_output_names_a_local_absolute_path(demo_dataset, tmp_path):
    """A derived dataset's card, JSON and parquet metadata name their source by its name and
    fingerprint, never by where it lies on this machine."""
    pytest.importorskip("torch")
    from idc_toolkit.masks.column import add_change_masks

    out = tmp_path / "masks"
    add_change_masks(demo_dataset, out, device="cpu", progress=False)
    from idc_toolkit.card_data import source_label

    assert source_label(demo_dataset, {"test": "abc"}).startswith(f"{demo_dataset.name} (local folder, fingerprint ")
    assert source_label("org/some_dataset") == "extended|org/some_dataset"
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for root in {str(demo_dataset.parent), str(tmp_path), str(demo_dataset.resolve().parent)}:
                assert root.encode() not in data, (path, root)


def test_out_that_is_a_file_or_unwritable_is_one_line(tmp_path):
    from idc_toolkit.runs.folder import check_out_dir

    (tmp_path / "afile").write_text("x")
    with pytest.raises(RunError, match="--out .*afile is a file, not a folder"):
        RunFolder(tmp_path / "afile", "training", {}, card_record=False).open()
    with pytest.raises(RunError, match="afile is a file, not a folder"):
        check_out_dir(tmp_path / "afile" / "sub")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permission bits: nothing to check then
            pytest.skip("running as a user that can write anywhere")
        with pytest.raises(RunError, match="is not writable"):
            check_out_dir(locked / "out")
    finally:
        locked.chmod(0o700)


def test_a_dataset_edited_after_it_was_written_is_refused_in_one_line(demo_dataset, tmp_path):
    """Columns or row counts that disagree with the card: one line naming the folder, before any work."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from idc_toolkit.runs import open_split

    copy = tmp_path / "edited"
    shutil.copytree(demo_dataset, copy)
    shard = sorted((copy / "data").glob("train-*.parquet"))[0]
    table = pq.read_table(shard)
    pq.write_table(table.slice(0, table.num_rows - 1), shard)
    with pytest.raises(RunError, match=r"data/train-\*.parquet holds \d+ rows but its card .* says \d+"):
        open_split(copy, "train")
    pq.write_table(table.append_column("extra", pa.array([1] * table.num_rows)), shard)
    with pytest.raises(RunError, match=r"columns that its card .* does not list \(extra\)"):
        open_split(copy, "train")


def test_out_as_a_file_uri_lands_in_its_folder_and_unreachable_stores_are_named(tmp_path, monkeypatch, capsys):
    """``--out file:///...`` (as Ray Data and datasets take outputs) is its local folder, even after
    a ``Path`` collapsed its slashes; an object store that cannot be reached, or a scheme nothing
    opens, is one line naming the URI, before any work, and never a folder called ``s3:`` under
    the working directory."""
    from idc_toolkit.cli.eval import main as eval_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "refs.json").write_text(json.dumps({"annotations": [{"image_id": "a", "caption": "a red cube moved"}]}))
    (tmp_path / "preds.json").write_text(json.dumps({"a": "the red cube moved"}))
    args = ["--predictions", "preds.json", "--references", "refs.json", "--metrics", "BLEU"]
    target = tmp_path / "with space" / "eval"
    assert eval_main([*args, "--out", target.as_uri()]) == 0
    assert (target / "metrics.json").is_file() and not (tmp_path / "file:").exists()
    capsys.readouterr()
    folder = RunFolder(Path(target.as_uri()), "evaluation", {}, card_record=False)  # file:/... after Path()
    assert folder.out == target
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    closed = "s3://bucket/eval?endpoint_override=127.0.0.1:9&scheme=http&region=us-east-1"  # nothing listens on port 9
    for uri, why in ((closed, "cannot be read (When listing objects"), ("nosuch://bucket/eval", "cannot be opened")):
        assert eval_main([*args, "--out", uri]) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"--out {uri}: {why}" in err, err
        assert not any(p.name.endswith(":") for p in tmp_path.iterdir())
        assert not list((tmp_path / "cache").rglob("metrics.json"))
    with pytest.raises(RunError, match="not a valid file:// URI"):
        RunFolder("file:///tmp/a b", "evaluation", {}, card_record=False)


def _toy_run(uri, settings, overwrite=False, report="report.txt"):
    """A run of ours publishing one file and its record to ``uri`` (no dataset: its record is
    ``.idc_run/run.json``, as a generation's or an evaluation's)."""
    folder = RunFolder(uri, "toy", settings, owned=(report,), card_record=False, progress=False).open(overwrite)
    if not folder.complete:
        folder.finalise(lambda final: (final / report).write_text(json.dumps(settings)))
    return folder


def test_uris_are_shown_without_their_secrets():
    from idc_toolkit.stores import shown_uri

    uri = "gs://b/x?token=T0K&access_key=AK&Secret_Key=S3C&scheme=http&password=PW"
    assert shown_uri(uri) == "gs://b/x?token=***&access_key=AK&Secret_Key=***&scheme=http&password=***"
    assert shown_uri("s3://b/x?endpoint_override=h:9") == "s3://b/x?endpoint_override=h:9"


def test_an_object_store_out_is_held_to_the_rule_of_a_local_folder(tmp_path, monkeypatch):
    """An fsspec ``memory://`` store as the destination: the same run is done, another run is refused
    naming what differs, ``--overwrite`` replaces only what a run of ours wrote, and files no run of
    ours wrote are refused with or without it and stay."""
    from idc_toolkit.stores import Store

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = f"memory://store/{tmp_path.name}/rule"
    store = Store.open(uri)
    assert not _toy_run(uri, {"a": 1}).resumed
    assert store.entries() == [".idc_run", "report.txt"] and store.read_text("report.txt") == '{"a": 1}'
    assert json.loads(store.read_text(".idc_run/run.json"))["complete"] is True
    assert _toy_run(uri, {"a": 1}).complete
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "elsewhere"))  # a machine without the staging folder
    copy = _toy_run(uri, {"a": 1})
    assert copy.complete and (copy.out / "report.txt").read_text() == '{"a": 1}' and copy.state["fields"]["a"] == 1
    with pytest.raises(RunError, match=rf"^{uri} holds a toy run with other settings \(a: 1 -> 2\); pass --overwrite"):
        _toy_run(uri, {"a": 2})
    _toy_run(uri, {"a": 2}, overwrite=True)
    assert store.read_text("report.txt") == '{"a": 2}'
    store.write_text("notes.txt", "the user's own")
    for overwrite in (False, True):
        with pytest.raises(RunError, match=rf"^{uri} already holds files that are not an idc-toolkit run \(notes.txt\)"):
            _toy_run(uri, {"a": 3}, overwrite=overwrite)
    assert store.read_text("notes.txt") == "the user's own" and store.read_text("report.txt") == '{"a": 2}'
    bare = f"memory://store/{tmp_path.name}/bare"
    Store.open(bare).write_text("report.txt", "not from a run")
    with pytest.raises(RunError, match=rf"^{bare} holds report.txt without the record of an idc-toolkit run"):
        _toy_run(bare, {"a": 1}, overwrite=True)


def test_a_publication_cut_short_is_finished_by_the_same_command(tmp_path, monkeypatch):
    """The upload fails after the marker and the first file: one line says the run is finished
    in its staging folder; a reader finds no record meanwhile (only the marker); the same
    command, without ``--overwrite``, finishes the publication and computes nothing."""
    from idc_toolkit.stores import Store

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = f"memory://store/{tmp_path.name}/cut"
    store = Store.open(uri)
    _toy_run(uri, {"a": 1})
    uploads = []
    original = Store.upload

    def fails_after_one(self, local, name, on_bytes=lambda n: None):
        if uploads:
            raise OSError("connection reset by peer")
        uploads.append(name)
        return original(self, local, name, on_bytes)

    monkeypatch.setattr(Store, "upload", fails_after_one)
    with pytest.raises(RunError, match=rf"^publishing to {uri} failed \(connection reset by peer\); the run is finished in "
                                       r".*: run the same command again to publish it$"):
        _toy_run(uri, {"a": 2}, overwrite=True)
    assert uploads == ["report.txt"] and store.read_text(".idc_run/run.json") is None
    assert json.loads(store.read_text(".idc_run/publishing-run.json"))["fields"]["a"] == 2
    monkeypatch.setattr(Store, "upload", original)
    again = _toy_run(uri, {"a": 2})
    assert again.complete and store.entries() == [".idc_run", "report.txt"]
    assert store.read_text(".idc_run/publishing-run.json") is None and store.read_text("report.txt") == '{"a": 2}'
    assert json.loads(store.read_text(".idc_run/run.json"))["fields"]["a"] == 2


def test_a_run_published_meanwhile_by_another_machine_is_not_replaced(tmp_path, monkeypatch):
    """Object stores have no locks: a run that began on an empty destination looks again before
    publishing, and refuses when another run was published there meanwhile."""
    from idc_toolkit.stores import Store

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = f"memory://store/{tmp_path.name}/race"
    slow = RunFolder(uri, "toy", {"a": 1}, owned=("report.txt",), card_record=False, progress=False).open()
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "elsewhere"))  # another machine: its own staging folder
    _toy_run(uri, {"a": 2})
    with pytest.raises(RunError, match=rf"^{uri} changed while this run worked: another toy run was published there"):
        slow.finalise(lambda final: (final / "report.txt").write_text("a: 1"))
    assert Store.open(uri).read_text("report.txt") == '{"a": 2}'


def test_two_runs_sharing_an_object_store_out_keep_each_others_files(tmp_path, monkeypatch):
    """``idc-eval --model``'s shape: a generation, then the evaluation of its captions beside it
    (each with its own record). The generation again with ``--overwrite`` removes the evaluation
    it made stale, as it does in a local folder; the evaluation again, with unchanged settings,
    puts its files back at the destination, though its record there still says it finished."""
    from idc_toolkit.stores import Store

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = f"memory://store/{tmp_path.name}/shared"
    store = Store.open(uri)

    def generation(overwrite=False):
        folder = RunFolder(uri, "toy generation", {"model": "m"}, owned=("preds.txt", "metrics.json"), card_record=False,
                           progress=False).open(overwrite)
        if not folder.complete:
            folder.finalise(lambda final: (final / "preds.txt").write_text("captions"))

    def evaluation():
        folder = RunFolder(uri, "evaluation", {"metrics": "BLEU"}, owned=("metrics.json",), tolerated=("preds.txt",),
                           card_record=False, record_file="evaluation.json", progress=False).open()
        (folder.out / "metrics.json").write_text("scores")  # an evaluation rewrites its files, then finalises
        folder.finalise(lambda final: None)

    generation()
    evaluation()
    assert store.entries() == [".idc_run", "metrics.json", "preds.txt"]
    generation(overwrite=True)
    assert store.entries() == [".idc_run", "preds.txt"]
    evaluation()
    assert store.entries() == [".idc_run", "metrics.json", "preds.txt"] and store.read_text("metrics.json") == "scores"


HOSTILE_NAMES = ["a | b", "line\nbreak", r"\input{/etc/passwd}", r"50% & $x_1^{2}$ #~", "</script><script>alert(1)</script>",
                 "{{ jinja }}", "plain"]


def test_hostile_category_names_stay_data_in_every_table(tmp_path):
    """Category names are data in metrics.md, the layouts' Markdown and LaTeX and by_category.csv:
    Markdown rows keep their column count, LaTeX prints every special character (nothing runs:
    no unescaped backslash, brace, ``&`` or ``%`` from a name), the CSV reads back the names intact."""
    import csv
    import re

    from idc_toolkit.escape import latex
    from idc_toolkit.evaluators.scoring import evaluate

    refs = {"annotations": [{"image_id": f"p{i}", "caption": c} for i in range(len(HOSTILE_NAMES) * 2)
                            for c in ("the red cube moved", "a red cube was moved")]}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    cats = {f"p{i}": HOSTILE_NAMES[i % len(HOSTILE_NAMES)] for i in range(len(HOSTILE_NAMES) * 2)}
    (tmp_path / "cats.json").write_text(json.dumps(cats))
    preds = {f"p{i}": "the red cube moved" if i % 2 else "a blue sphere" for i in range(len(HOSTILE_NAMES) * 2)}
    evaluate(preds, references=str(tmp_path / "refs.json"), categories=str(tmp_path / "cats.json"), metrics=["BLEU"],
             out=tmp_path / "out", layouts=["all"])
    out = tmp_path / "out"
    for md in [out / "metrics.md", *out.glob("layout_*.md")]:
        rows = [line for line in md.read_text().splitlines() if line.startswith("|")]
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in rows}
        assert len(widths) == 1, (md.name, rows)
    for tex in out.glob("layout_*.tex"):
        body = tex.read_text()
        for name in HOSTILE_NAMES:
            if name in body:  # a name that needs no escaping appears as it is
                assert latex(name) == name
        assert r"\input{" not in body and "$x_1" not in body and "50% " not in body
    with open(out / "by_category.csv", newline="") as fh:
        names = {row["name"] for row in csv.DictReader(fh)}
    assert set(HOSTILE_NAMES) <= names


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    from idc_toolkit.files import open_atomic

    target = tmp_path / "per_pair.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with open_atomic(target) as fh:
            fh.write("half a table")
            raise RuntimeError("disk full")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["per_pair.csv"]
    with open_atomic(target) as fh:
        fh.write("new\r\n")  # line ends kept as written
    assert target.read_bytes() == b"new\r\n"

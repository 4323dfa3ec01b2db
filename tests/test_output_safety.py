"""Output folders never lose a user's files, fingerprints follow content, ids never escape."""

import os

import pytest

from idc_toolkit.errors import IDCError, RunError
from idc_toolkit.files import file_name_for, inside
from idc_toolkit.runs import RunFolder
from idc_toolkit.runs.fingerprint import file_sha256


def test_overwrite_never_removes_files_no_run_of_ours_wrote(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "results.csv").write_text("mine too")
    for overwrite in (False, True):
        with pytest.raises(RunError, match="holds files that no training run writes .*sub, thesis.tex"):
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
    from idc_toolkit.errors import EvaluationError
    from evaluators.outputs import check_previous_run

    (tmp_path / "per_pair.csv").write_text("a user's file")
    for overwrite in (False, True):
        with pytest.raises(EvaluationError, match="per_pair.csv but no metrics.json"):
            check_previous_run(tmp_path, {"x": 1}, overwrite)


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


@pytest.mark.parametrize("pair_id", ["../../../X", "/etc/passwd", "a/b", "..", "", "con\x00x", "ok_id-1.png"])
def test_file_names_made_from_ids_stay_inside_their_folder(tmp_path, pair_id):
    name = file_name_for(pair_id, ".png")
    path = inside(tmp_path, name)
    assert path.parent == tmp_path.resolve() and "/" not in name
    with pytest.raises(ValueError):
        inside(tmp_path, "../escape.png")
    assert file_name_for("../a") != file_name_for("__a")  # two ids never share a file

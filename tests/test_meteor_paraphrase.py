"""METEOR with its paraphrase table cut to the references aligns as with the whole table."""

import random

import pytest

from idc_toolkit.metrics import meteor as meteor_mod
from idc_toolkit.metrics import paraphrase
from idc_toolkit.metrics.meteor import MeteorProcess

pytestmark = pytest.mark.java

def test_lines_of_plain_words_are_what_meteors_normalizer_leaves_unchanged():
    """The normalizer JVM is skipped for such lines: the jar's normalizer returns them as they are."""
    rng = random.Random(3)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    lines = [" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(rng.randint(1, 12)))
             for _ in range(2000)] + ["a 1st 000 cars", "u s 3 5 mr dr no", "000 0 00"]
    assert all(paraphrase.UNCHANGED.fullmatch(line) for line in lines)
    assert paraphrase.normalized(lines + ["mr. smith's car"]) == lines + ["mr. smith 's car"]
    forced = paraphrase.normalized([line + " ." for line in lines])  # not plain: every line through the JVM
    assert [line[:-2] for line in forced] == lines


def test_text_the_cut_is_not_vouched_for_gets_the_whole_table(monkeypatch):
    for odd in ("a café moved", "a car ||| moved", "a car\x0bmoved"):
        assert paraphrase.coverage_needed([["a red car moved"], [odd]]) is None
    assert paraphrase.coverage_needed([["a red car moved"]]) is not None
    monkeypatch.setenv("IDC_METEOR_PARAPHRASE", "full")
    assert paraphrase.coverage_needed([["a red car moved"]]) is None


def test_a_warm_jvm_serves_only_references_its_table_covers():
    """A JVM left idle is reused for references it covers, never for others."""
    small = paraphrase.coverage_needed([["the car moved"]])
    large = paraphrase.coverage_needed([["the red car moved away"], ["the car moved"]])
    assert large.covers(small) and not small.covers(large)
    meteor_mod.close_idle_processes()
    process = meteor_mod.acquire_process(large)
    meteor_mod.release_process(process)
    again = meteor_mod.acquire_process(small)
    assert again is process
    meteor_mod.release_process(again)
    other = meteor_mod.acquire_process(paraphrase.coverage_needed([["a blue sphere appeared"]]))
    try:
        assert other is not process and other.coverage is not process.coverage
        assert not process.covers(None) and MeteorProcess.covers(other, other.coverage)
    finally:
        other.close()
        meteor_mod.close_idle_processes()


def test_a_cache_that_cannot_be_written_means_the_whole_table_without_building(monkeypatch, tmp_path):
    """No index is built where it cannot be kept (8 s in every process would cost more than the
    whole table's load), and the answer holds for the process."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("IDC_CACHE", str(blocked))  # cache_dir() lies under a file: nothing can be created
    monkeypatch.setattr(paraphrase, "_INDEX", [])

    def no_build(table):
        raise AssertionError("the index was built")

    monkeypatch.setattr(paraphrase, "build_index", no_build)
    assert paraphrase.table_index() is None and paraphrase.coverage_needed([["a red car"]]) is None
    assert not paraphrase.index_missing()


def test_arrays_derived_from_the_index_are_kept_beside_it_and_a_damaged_record_is_rebuilt():
    """The phrase table's search order is computed once per machine and read back memory-mapped;
    a damaged record is computed again, never trusted."""
    import numpy as np

    calls = []

    def build(index):
        calls.append(1)
        return {"first_ids": np.asarray(index.first[:5]).astype(np.int64), "count": np.array([index.entries])}

    name = f"test-{random.Random().randrange(1 << 30)}"
    first = paraphrase.derived_arrays(name, build)
    again = paraphrase.derived_arrays(name, build)
    assert len(calls) == 1 and isinstance(again["first_ids"], np.memmap)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    folder = paraphrase._index_dir()
    (folder / f"{name}.json").write_text("{not json")
    assert np.array_equal(paraphrase.derived_arrays(name, build)["count"], first["count"]) and len(calls) == 2
    for f in folder.glob(f"{name}.*"):
        f.unlink()  # the files this test wrote

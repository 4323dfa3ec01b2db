"""Input hygiene and failure modes of the scorer (point 4 and 5 of the scorer issue)."""

import numpy as np
import pytest

import idc_toolkit.metrics.meteor as meteor_mod
from idc_toolkit.errors import EvaluationError
from idc_toolkit.evaluators.predictions import References, prepare
from idc_toolkit.metrics import score_groups
from idc_toolkit.metrics.tokenizer import C1_ONLY, ptb_tokenize
from idc_toolkit.metrics.meteor import MeteorProcess
from idc_toolkit.metrics import text
from idc_toolkit.metrics.text import LINE_SEPARATORS, sanitize_caption


def parsed(lines: list[str]) -> np.ndarray:
    """Statistics lines as rows of numbers, parsed here: the metric keeps the rows, not the lines."""
    return np.array([[float(x) for x in line.split()] for line in lines])


pytestmark = pytest.mark.java

REFS = {"a": ["the red car moved", "a car moved"], "b": ["nothing changed"], "c": ["a man appeared", "someone arrived"]}
REFS_AB = {k: REFS[k] for k in ("a", "b")}


@pytest.mark.parametrize("sep", list(LINE_SEPARATORS))
def test_separators_cannot_shift_captions(sep):
    bad = [f"the car{sep}moved", "second caption", "third one"]
    assert ptb_tokenize([sanitize_caption(s) for s in bad]) == ["the car moved", "second caption", "third one"]


def test_pycocoevalcap_alone_misaligns_on_a_carriage_return():
    """Why sanitising matters: the unmodified tokenizer moves captions to the wrong image."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    out = PTBTokenizer().tokenize({"1": [{"caption": "left\rright"}], "2": [{"caption": "second"}]})
    assert out["2"] != ["second"]


def test_separator_in_captions_scores_like_a_space():
    hyps = {"a": "the red\u2028car moved", "b": "nothing\r\nchanged", "c": "a man\x85appeared"}
    clean = {k: v.replace("\r\n", " ").replace("\u2028", " ").replace("\x85", " ") for k, v in hyps.items()}
    r1 = score_groups(hyps, REFS, metrics=["BLEU", "METEOR", "CIDEr"])
    r2 = score_groups(clean, REFS, metrics=["BLEU", "METEOR", "CIDEr"])
    assert r1.groups["overall"].scores == r2.groups["overall"].scores


def test_empty_prediction_scores_zero_as_in_coco():
    r = score_groups({"a": "", "b": "nothing changed", "c": "a man appeared"}, REFS, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"])
    for metric in ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr"):
        assert r.per_pair[metric][0] == pytest.approx(0.0, abs=1e-6)
    assert r.per_pair["ROUGE_L"][1] == 1.0


def _refs(captions, categories=None):
    return References(captions, categories or {k: None for k in captions}, "test refs")


def test_empty_references_kept_with_a_warning_or_dropped():
    refs = _refs({"a": ["", "a car moved"], "b": ["nothing changed"]})
    preds = {"a": "a car moved", "b": "nothing changed"}
    kept = prepare(preds, refs)
    assert kept.references["a"] == ["", "a car moved"]
    assert any("1 empty reference(s) kept" in w for w in kept.warnings)
    dropped = prepare(preds, refs, drop_empty_references=True)
    assert dropped.references["a"] == ["a car moved"] and any("dropped" in w for w in dropped.warnings)


def test_pair_without_any_reference_is_an_error():
    with pytest.raises(EvaluationError, match="no reference at all: 'b'"):
        prepare({"a": "x", "b": "y"}, _refs({"a": ["x"], "b": []}))
    with pytest.raises(EvaluationError, match="no reference at all: 'b'"):
        prepare({"a": "x", "b": "y"}, _refs({"a": ["x"], "b": ["  "]}), drop_empty_references=True)


def test_missing_and_unknown_prediction_ids():
    refs = _refs({"a": ["x"], "b": ["y"], "c": ["z"]})
    with pytest.raises(EvaluationError, match=r"no prediction for 2 reference id\(s\): 'b', 'c'"):
        prepare({"a": "x"}, refs)
    partial = prepare({"a": "x"}, refs, allow_missing=True)
    assert list(partial.references) == ["a"] and partial.n_missing == 2
    assert any("2 reference pair(s) have no prediction" in w for w in partial.warnings)
    with pytest.raises(EvaluationError, match=r"not in the references .*'zz'"):
        prepare({"a": "x", "b": "y", "c": "z", "zz": "?"}, refs)


def test_change_only_group_and_category_order():
    refs = _refs({"1": ["a"], "2": ["b"], "3": ["c"]}, {"1": "distractor", "2": "add", "3": "move"})
    refs.category_order = ["add", "move", "distractor"]
    prep = prepare({"1": "a", "2": "b", "3": "c"}, refs)
    assert list(prep.groups) == ["add", "move", "distractor", "change_only"]
    assert prep.groups["change_only"] == ["2", "3"]


def test_meteor_death_is_a_clear_error_not_a_hang():
    m = MeteorProcess(timeout=120)
    m._proc.kill()
    with pytest.raises(EvaluationError, match="METEOR exited unexpectedly"):
        m.statistics(["a car"], [["a car moved"]])


def test_meteor_that_cannot_start_properly(monkeypatch):
    monkeypatch.setattr(meteor_mod, "METEOR_ARGS", ["-jar", "/nonexistent/meteor.jar"])
    m = MeteorProcess(timeout=60)
    with pytest.raises(EvaluationError, match="exited unexpectedly") as exc:
        m.statistics(["a"], [["b"]])
    assert "nonexistent" in str(exc.value) or "Unable to access" in str(exc.value)


def test_meteor_silence_times_out(monkeypatch):
    monkeypatch.setattr(meteor_mod, "java_executable", lambda: "sleep")  # a process that never answers
    monkeypatch.setattr(meteor_mod, "JVM_TUNING", [])
    monkeypatch.setattr(meteor_mod, "METEOR_ARGS", ["30"])
    m = MeteorProcess(timeout=2)
    with pytest.raises(EvaluationError, match=r"METEOR gave no answer within 2 s \(killed\)"):
        m.statistics(["a"], [["b"]])
    assert m._proc.poll() is not None


def test_spice_unavailable_is_null_with_reason_and_other_metrics_still_run(tmp_path, monkeypatch):
    monkeypatch.delenv("IDC_SPICE_JARS", raising=False)
    r = score_groups({"a": "a car moved", "b": "nothing", "c": "a man"}, REFS, metrics=["BLEU", "SPICE"])
    assert r.groups["overall"].scores["SPICE"] is None
    assert "SPICE unavailable" in r.spice_status and "IDC_SPICE_JARS" in r.spice_status
    assert r.groups["overall"].scores["Bleu_1"] > 0
    r2 = score_groups({"a": "x", "b": "y", "c": "z"}, REFS, metrics=["SPICE"], spice_jars=str(tmp_path))
    assert "stanford-corenlp-3.6.0.jar" in r2.spice_status and r2.groups["overall"].scores["SPICE"] is None


def test_spice_failure_is_reported_not_raised(tmp_path, monkeypatch):
    for jar in ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar"):
        (tmp_path / jar).write_bytes(b"not a jar")
    monkeypatch.setenv("IDC_SPICE_JARS", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = score_groups({"a": "a car moved", "b": "nothing", "c": "a man"}, REFS, metrics=["ROUGE_L", "SPICE"])
    assert r.groups["overall"].scores["SPICE"] is None and r.spice_status.startswith("SPICE failed")
    assert r.groups["overall"].scores["ROUGE_L"] > 0
    assert (tmp_path / "cache" / "idc_toolkit" / "spice").is_dir()


def test_parallel_meteor_workers_give_one_jvms_statistics():
    """Two JVMs aligning halves of the segments answer what one JVM answers for all of them, one
    compiling with C1 alone (started for a few segments) and one with C2 too; a JVM started for a
    few segments is not handed to a long job."""
    hyps = [f"the {c} cube moved {k % 3} times" for k, c in enumerate(["red", "blue", "green", "gray"] * 3)]
    refs = [[f"a cube moved {k % 2} times", "the cube moved"] for k in range(len(hyps))]
    need = meteor_mod.coverage_needed(refs)  # the table cut to these references, as a scoring loads it
    # a warm JVM where an earlier test left one (never a C1-only one: this job's size is not given)
    procs = [meteor_mod.acquire_process(need), MeteorProcess(coverage=need, segments=len(hyps))]
    assert [p.quick for p in procs] == [False, True] and C1_ONLY in procs[1]._proc.args
    try:
        split = meteor_mod.parallel_statistics(procs, hyps, refs)
        whole = procs[0].statistics(hyps, refs)
        assert procs[1].statistics(hyps, refs) == whole
    finally:
        meteor_mod.release_process(procs[0])
        meteor_mod.release_process(procs[1])
    assert split == whole and len(whole) == len(hyps)
    long_job = meteor_mod.acquire_process(need, meteor_mod.C1_ONLY_BELOW)
    assert long_job is not procs[1] and not long_job.quick
    meteor_mod.release_process(long_job)


@pytest.mark.parametrize("scorer", ["python", "java"])
def test_statistics_cache_means_a_second_scoring_aligns_nothing(monkeypatch, tmp_path, scorer):
    import idc_toolkit.metrics.meteor_align as align_mod
    from idc_toolkit.metrics.implementation import using

    class Worker:  # stands in for a JVM (or the Python aligner): a statistics line derived from the segment
        def __init__(self):
            self.asked = 0

        def statistics(self, hyps, refs):
            self.asked += len(hyps)
            return [" ".join(str(float(len(h) + k)) for k in range(21)) for h in hyps]

    monkeypatch.setenv("IDC_METEOR_CACHE", str(tmp_path / "stats.sqlite"))
    hyps, refs = ["a cube", "the red sphere", "a cube"], [["a cube"], ["a sphere"], ["two cubes"]]

    def run():
        worker = Worker()
        monkeypatch.setattr(meteor_mod, "acquire_processes", lambda n, need=None, segments=None: [worker])
        monkeypatch.setattr(align_mod, "statistics", worker.statistics)
        with using(scorer):
            m = meteor_mod.Meteor()
            m.compute(hyps, refs)
        return worker.asked, m.stats

    runs = [run(), run()]
    assert runs[0][0] == 3 and runs[1][0] == 0 and np.array_equal(runs[0][1], runs[1][1])
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    assert run()[0] == 3  # no cache: everything aligned


@pytest.mark.parametrize("scorer", ["python", "java"])
def test_tokens_cache_means_a_second_scoring_starts_no_tokenizer(monkeypatch, tmp_path, scorer):
    """The references' tokens are kept per block: scoring them again with other hypotheses runs
    the tokenizer on the hypotheses alone, and the same captions again run it not at all."""
    import idc_toolkit.metrics.ptb as ptb_mod
    import idc_toolkit.metrics.tokenizer as tokenizer_mod
    from idc_toolkit.metrics.implementation import using

    monkeypatch.setenv("IDC_TOKENIZER_CACHE", str(tmp_path / "tokens.sqlite"))
    asked = []  # each block (file) tokenized
    if scorer == "java":
        real = tokenizer_mod._run_tokenizer
        monkeypatch.setattr(tokenizer_mod, "_run_tokenizer", lambda lines, timeout: asked.append(list(lines)) or real(lines, timeout))
    else:
        real_text = ptb_mod.tokenize_text
        monkeypatch.setattr(ptb_mod, "tokenize_text", lambda text, lines: asked.append(text.split("\n")) or real_text(text, lines))
    refs = [["The red car moved.", "A car moved"], ["Nothing changed."]]
    flat = [r for rs in refs for r in rs]
    with using(scorer):
        first = tokenizer_mod.ptb_tokenize_blocks([flat, ["A car moved!", "Nothing."]])
        assert first == [["the red car moved", "a car moved", "nothing changed"], ["a car moved", "nothing"]]
        assert asked == [flat, ["A car moved!", "Nothing."]]  # each block as a file of its own
        other = tokenizer_mod.ptb_tokenize_blocks([flat, ["The CAR moved"]])
        assert other == [first[0], ["the car moved"]] and asked[2:] == [["The CAR moved"]]
        assert tokenizer_mod.ptb_tokenize_blocks([flat, ["A car moved!", "Nothing."]]) == first and len(asked) == 3
        assert tokenizer_mod.ptb_tokenize_blocks([[], [""]]) == [[], [""]] and asked[-1] == [""]
        monkeypatch.setenv("IDC_TOKENIZER_CACHE", "0")
        assert tokenizer_mod.ptb_tokenize(flat) == first[0] and len(asked) == 5  # no cache: tokenized again


def test_a_warm_meteor_jvm_is_reused_and_a_broken_one_is_not(monkeypatch):
    """The JVM of one scoring serves the next (no second 6 s load), with the same scores; a JVM
    left in the middle of an exchange is never handed out again."""
    monkeypatch.setenv("IDC_METEOR_WORKERS", "1")
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    started = []
    real = meteor_mod.MeteorProcess
    monkeypatch.setattr(meteor_mod, "MeteorProcess", lambda *a, **k: started.append(1) or real(*a, **k))
    hyps = {"a": "the red car moved", "b": "nothing changed"}
    first = score_groups(hyps, REFS_AB, metrics=["METEOR"])
    second = score_groups(hyps, REFS_AB, metrics=["METEOR"])
    assert first.groups["overall"].scores == second.groups["overall"].scores
    assert len(started) <= 1  # at most one load (none when an earlier test left a warm JVM)
    need = meteor_mod.coverage_needed(list(REFS_AB.values()))  # the scorings' table, not the whole one (9 s of a core)
    process = meteor_mod.acquire_process(need)
    process.in_step = False  # as if an exchange had been interrupted
    meteor_mod.release_process(process)
    other = meteor_mod.acquire_process(need)
    assert other is not process and not process.alive()
    meteor_mod.release_process(other)


def test_a_closed_meteor_jvm_leaves_no_open_pipe():
    """Its pipes are closed with it: an evicted JVM used to leave ResourceWarnings that the
    README test counted among the toolkit's own warnings."""
    import gc
    import time
    import warnings

    need = meteor_mod.coverage_needed([["a red car"]])
    gc.collect()  # what earlier tests left is not this JVM's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        process = MeteorProcess(coverage=need)
        assert process.statistics(["a car"], [["a red car"]])
        process.close()
        del process
        time.sleep(0.5)  # the reader threads see the end of the pipes
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


def test_a_long_python_meteor_job_aligns_in_a_child_process_with_the_same_statistics(monkeypatch):
    """From ``CHILD_FROM`` segments the Python aligner runs in child processes (other cores,
    beside BLEU, ROUGE-L and CIDEr): the same statistics lines as in this process."""
    import idc_toolkit.metrics.meteor_align as align_mod
    import idc_toolkit.metrics.meteor_pool as pool_mod
    from idc_toolkit.metrics.implementation import using

    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    monkeypatch.setattr(pool_mod, "CHILD_FROM", 2)
    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 2)
    hyps = ["a red cube moved", "the sphere is gone", "nothing changed", "a man walks"]
    refs = [["a red cube moved away"], ["the sphere disappeared", "a ball left"], ["there is no change"], [""]]
    started = []
    real = pool_mod.AlignerPool.submit
    monkeypatch.setattr(pool_mod.AlignerPool, "submit", lambda self, h, r, **kw: started.append(len(h)) or real(self, h, r, **kw))
    with using("python"):
        m = meteor_mod.Meteor()
        m.start(len(hyps))
        m.prepare(hyps, refs)
        m.compute(hyps, refs)
    assert started == [4] and np.array_equal(m.stats, parsed(align_mod.statistics(hyps, refs)))


def _segments(n: int) -> tuple[list[str], list[list[str]]]:
    import random

    rng = random.Random(5)
    words = "a the red blue small large cube sphere cylinder moved gone added changed appeared is was".split()
    hyps = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(n)]
    refs = [[" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(3)] for _ in range(n)]
    return hyps, refs


def test_the_processes_and_the_caller_share_the_blocks_with_one_process_statistics(monkeypatch):
    """Two aligner processes take blocks as they finish and the caller, once free, takes some too
    (a core being free of them): every block is aligned once, and together they are the
    statistics of one call, in order, whatever the order they came back in."""
    import idc_toolkit.metrics.meteor_align as align_mod
    import idc_toolkit.metrics.meteor_pool as pool_mod

    monkeypatch.setattr(pool_mod, "BLOCK", 3)
    monkeypatch.setattr(pool_mod, "ASSIST_FROM", 0)
    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 3)
    hyps, refs = _segments(90)
    seen: list[int] = []
    got: dict[int, list[str]] = {}

    def keep(first: int, stats: list[str]) -> None:
        seen.append(first)
        got[first] = stats

    pool = pool_mod.AlignerPool(2)
    pool.submit(hyps, refs, on_block=keep)
    pool.assist()  # at once: the processes are still loading, so the caller takes many blocks
    assert pool.result() == []  # every block's lines went to on_block, none is held twice
    assert [line for first in sorted(got) for line in got[first]] == align_mod.statistics(hyps, refs)
    assert sorted(seen) == list(range(0, 90, 3))  # each block handed on once
    assert seen != sorted(seen)  # the caller's and the processes' blocks interleave
    assert all(w.proc.wait(timeout=30) == 0 for w in pool.workers)


def test_the_processes_align_everything_when_no_assist_comes_and_a_dead_one_is_named(monkeypatch):
    import idc_toolkit.metrics.meteor_align as align_mod
    import idc_toolkit.metrics.meteor_pool as pool_mod

    monkeypatch.setattr(pool_mod, "BLOCK", 4)
    hyps, refs = _segments(20)
    pool = pool_mod.AlignerPool(2)
    pool.submit(hyps, refs)
    assert pool.result() == align_mod.statistics(hyps, refs)
    dying = pool_mod.AlignerPool(2)
    dying.workers[1].proc.kill()
    dying.submit(hyps, refs)
    with pytest.raises(EvaluationError, match="aligner process failed"):
        dying.result()


def test_a_prewarmed_aligner_serves_the_next_scoring_and_is_closed_when_unused(monkeypatch):
    """``prewarm(pairs)`` starts the aligner processes ahead of a large Python scoring; the next
    METEOR scoring takes them, and those nobody took end with the idle processes."""
    import idc_toolkit.metrics.meteor_pool as pool_mod
    from idc_toolkit.metrics.implementation import using

    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    monkeypatch.setattr(pool_mod, "CHILD_FROM", 2)
    monkeypatch.setattr(pool_mod, "BLOCK", 2)
    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 2)
    hyps, refs = _segments(7)
    with using("python"):
        meteor_mod.prewarm(1)  # too small: nothing started
        assert meteor_mod.parked_aligner() is None
        meteor_mod.prewarm(len(hyps))
        m = meteor_mod.Meteor()
        m.start(len(hyps))
        assert m._child is not None and meteor_mod.parked_aligner() is None  # taken
        m.prepare(hyps, refs)
        m.compute(hyps, refs)
        import idc_toolkit.metrics.meteor_align as align_mod

        assert np.array_equal(m.stats, parsed(align_mod.statistics(hyps, refs)))
        meteor_mod.prewarm(len(hyps))
        parked = meteor_mod._PARKED[0]
        meteor_mod.close_idle_processes()
        assert all(w.proc.wait(timeout=30) == 0 for w in parked.workers) and not meteor_mod._PARKED


def test_processes_for_a_job_follow_its_size_and_the_cores(monkeypatch):
    import idc_toolkit.metrics.meteor_pool as pool_mod

    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 1)
    assert pool_mod.processes_for(100_000) == 0  # one core: the aligner runs here
    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 2)
    assert [pool_mod.processes_for(n) for n in (1999, 2000, 100_000)] == [0, 1, 1]
    monkeypatch.setattr(pool_mod, "usable_cores", lambda: 16)
    assert [pool_mod.processes_for(n) for n in (2000, 7000, 100_000)] == [1, 3, pool_mod.MOST_PROCESSES]


def test_the_chart_draws_bars_zero_lines_and_na_the_same_every_time(tmp_path):
    """by_category.png: one bar per metric and group in matplotlib's colours, a zero score as a
    line on the axis, n/a as no bar, the legend clear of the tallest bars; the same bytes each time."""
    from PIL import Image

    from idc_toolkit.evaluators import chart

    data = {"names": ["overall", "color", "add"], "n": [10, 4, 3],
            "series": {"BLEU_4": {"values": [31.5, 0.0, 12.0], "err_low": [1.0, 0.0, 0.0], "err_high": [2.0, 0.0, 0.0]},
                       "CIDEr": {"values": [40.2, None, 95.0], "err_low": [0.0, 0.0, 0.0], "err_high": [0.0, 0.0, 0.0]}}}
    once = chart.draw_by_category(tmp_path / "once.png", data, "a caveat")
    again = chart.draw_by_category(tmp_path / "again.png", data, "a caveat")
    assert once.read_bytes() == again.read_bytes()
    image = Image.open(once).convert("RGB")
    assert image.size == (6 * chart.DPI, 4 * chart.DPI)
    blue, orange = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)
    width, height = image.size

    def column(fraction: float) -> list:  # the colours down one pixel column
        return [image.getpixel((round(fraction * width), row)) for row in range(height)]

    # group k's bars sit around k + 0.5 thirds of the axis; the axis spans most of the width
    def bar_colours(k: int) -> set:
        found = set()
        for offset in (-0.2, 0.2):
            found |= set(column(0.08 + 0.9 * (k + 0.5 + offset) / 3))
        return found

    assert {blue, orange} <= bar_colours(0) and {blue, orange} <= bar_colours(2)
    assert orange not in bar_colours(1)  # n/a: no bar; the zero line is blue on the axis only
    assert sum(pixel == blue for pixel in column(0.08 + 0.9 * 1.3 / 3)) <= 4
    topmost = next(row for row in range(height) if blue in {image.getpixel((c, row)) for c in range(width)})
    swatch = [c for c in range(width) if image.getpixel((c, topmost)) == blue]  # the legend's, above every bar
    assert max(swatch) < width / 2  # the right corner holds the tallest bar: the legend goes left


def test_lines_once_is_split_with_repeats_held_once(monkeypatch):
    """Split a piece at a time, the lines are ``split("\\n")``'s (seams inside lines, at newlines,
    empty lines, a trailing newline) and a repeated line is one object."""
    import random

    monkeypatch.setattr(text, "LINES_PIECE", 7)
    rng = random.Random(0)
    for _ in range(500):
        joined = "\n".join(rng.choice(["", "a", "no change", "the cube moved", "\n"]) for _ in range(rng.randint(0, 40)))
        lines = text.lines_once(joined)
        assert lines == joined.split("\n")
        assert len({id(line) for line in lines}) == len(set(lines))

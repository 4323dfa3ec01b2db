"""METEOR's statistics in Python (``metrics.meteor_align``) equal the jar's, every field of every
segment: real captions and published predictions, the demo's captions, generated hard segments;
and the comparison finds a difference when one of the jar's rules is broken on purpose."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from idc_toolkit.metrics import meteor_align, meteor_resources, meteor_stats
from idc_toolkit.metrics.meteor import MeteorProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import meteor_python as bench  # the segment sets, shared with the benchmark

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def jvm():
    with MeteorProcess(timeout=900) as process:  # the whole paraphrase table, as pycocoevalcap loads it
        yield process


def differences(jvm, hyps, refs, expected=None) -> list:
    theirs = expected if expected is not None else jvm.statistics(hyps, refs)
    ours = meteor_align.statistics(hyps, refs)
    assert len(ours) == len(theirs) == len(hyps)
    return [(h, r, a, b) for h, r, a, b in zip(hyps, refs, ours, theirs) if a != b]


@pytest.mark.scale
def test_real_captions_and_published_predictions(jvm, shared):
    sets = bench.real_segments(shared, per_source=10 ** 9)  # every segment of every source
    assert {"ddla predictions", "spot-the-diff", "dubai-cc"} <= set(sets)
    counted = 0
    for name, (hyps, refs) in sets.items():
        assert differences(jvm, hyps, refs) == [], name
        counted += len(hyps)
    assert counted > 30_000


def test_demo_captions(jvm):
    hyps, refs = bench.demo_segments(2500)
    assert differences(jvm, hyps, refs) == []


@pytest.mark.scale
def test_generated_hard_segments(jvm):
    hyps, refs = bench.hard_segments(10_000, seed=3)
    stats = jvm.statistics(hyps, refs)
    # the set exercises every stage, function words on both sides and multi-word paraphrases
    rows = [[float(x) for x in line.split()] for line in stats]
    for column in range(4, 20):
        assert sum(row[column] for row in rows) > 0, column
    assert sum(row[20] > 3 for row in rows) > 500
    assert differences(jvm, hyps, refs, stats) == []


def test_one_segment_and_a_batch_agree(jvm):
    hyps, refs = bench.hard_segments(200, seed=11)
    batch = meteor_align.statistics(hyps, refs)
    assert [meteor_align.segment_statistics(h, r) for h, r in zip(hyps, refs)] == batch == jvm.statistics(hyps, refs)
    # a reference holding "|||" is two references to the jar, and here
    assert meteor_align.segment_statistics("a red car", ["a car ||| the red car"]) == jvm.statistics(
        ["a red car"], [["a car ||| the red car"]])[0]
    with pytest.raises(ValueError, match="line break"):
        meteor_align.statistics(["a car\nmoved"], [["a car"]])


def test_blocks_with_a_small_memo_answer_as_one_call_and_stay_within_its_bounds(monkeypatch):
    """A job aligned block by block answers what one call does however little its memo keeps, and
    the memo and the text cache stay within their bounds: distinct captions (COCO's, Spot-the-Diff's)
    would otherwise grow them with every block."""
    hyps, refs = bench.hard_segments(300, seed=5)
    whole = meteor_align.statistics(hyps, refs)
    monkeypatch.setattr(meteor_align, "_CACHE_LIMIT", 50)
    meteor_align._TEXTS.clear()
    memo, block, got = meteor_align.Memo(keep=40, keep_rows=30), 25, []
    for k in range(0, len(hyps), block):
        got += meteor_align.statistics(hyps[k:k + block], refs[k:k + block], memo=memo)
        sentences = len({h for h in hyps[k:k + block]} | {r for rs in refs[k:k + block] for r in rs})
        assert len(memo.sentences) <= 40 + sentences
        assert len(memo.rows) <= 30 + sum(len(rs) for rs in refs[k:k + block])
        assert len(meteor_align._TEXTS) <= 51
    assert got == whole


def test_memo_keeps_one_blocks_sentences_and_those_blocks_share():
    """Between blocks the memo keeps the sentences the last block used and every sentence that more
    than one block met; one met by a single earlier block goes (distinct captions never come back)."""
    memo = meteor_align.Memo()
    shared = "the red cube is gone"
    blocks = [[(f"a car number w{b}{k} moved", [shared, f"the car w{b}{k} has moved"]) for k in range(3)] for b in range(4)]
    for n, block in enumerate(blocks):
        meteor_align.statistics([h for h, _ in block], [r for _, r in block], memo=memo)
        texts = {" ".join(words) for words in memo.sentences}
        used = {h for h, _ in block} | {r for _, rs in block for r in rs}
        assert texts == used, n
    meteor_align.statistics(["another car"], [["a car"]], memo=memo)
    assert {" ".join(words) for words in memo.sentences} == {"another car", "a car", shared}
    # made again after it went: a sentence two blocks met, kept from then on
    again = blocks[0][0][0]
    meteor_align.statistics([again], [["a car"]], memo=memo)
    meteor_align.statistics(["one more car"], [["a car"]], memo=memo)
    assert {" ".join(words) for words in memo.sentences} == {again, "one more car", "a car", shared}


def test_lower_casing_is_javas_sigma_and_newer_capitals_included(jvm, monkeypatch):
    """METEOR lower-cases a line with Java 17's ``toLowerCase`` (:mod:`.java_text`): a capital sigma's
    final form by the JDK's word rules, capitals newer than Unicode 13 kept; words that Python's
    ``str.lower`` would merge or part (``Ꟁ`` vs ``ꟁ``, ``ΑΣ`` vs ``ας``) align as in the jar."""
    import random

    rng = random.Random(3)
    parts = ["ΟΔΟΣ", "ΣΑΣ", "Σ", "aΣ", "ΑΣ.", "ΑΣ-ΒΑΣ",
             "ΑΣ1", "Ⱟ", "ⱟ", "Ꟁ", "ꟁ", "ας", "ασ", "the", "cube", "x.Σ",
             "ΑΣ­", "ΑΣ́"]
    hyps = [" ".join(rng.choice(parts) for _ in range(rng.randint(1, 6))) for _ in range(1500)]
    refs = [[" ".join(rng.choice(parts) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 3))]
            for _ in range(1500)]
    assert differences(jvm, hyps, refs) == []
    assert meteor_align.exact_for("\u039f\u0394\u039f\u03a3 The Caf\u00e9", ["a car", "\u2c2f"])
    monkeypatch.setenv("LC_ALL", "tr_TR.UTF-8")  # Java's default locale would lower-case I to a dotless i
    assert not meteor_align.exact_for("In the car", ["a car"])


@pytest.fixture(scope="module")
def probe(jvm):
    """Generated segments and the jar's statistics for them, for the broken rules below."""
    hyps, refs = bench.hard_segments(1000, seed=5)
    return hyps, refs, jvm.statistics(hyps, refs)


def broken(monkeypatch):
    """Each rule below is computed afresh: the word and text caches start empty."""
    monkeypatch.setattr(meteor_align, "_WORDS", {})
    monkeypatch.setattr(meteor_align, "_TEXTS", {})


def test_the_comparison_catches_a_narrower_beam(jvm, probe):
    hyps, refs, stats = probe
    assert differences(jvm, hyps, refs, stats) == []
    ours = meteor_align.statistics(hyps, refs, beam=1)
    assert sum(a != b for a, b in zip(ours, stats)) >= 1


@pytest.mark.parametrize("rule", ["stage weights", "no distance", "strings not hashes", "first reference", "no prefixes"])
def test_the_comparison_catches_a_broken_rule(jvm, probe, monkeypatch, rule):
    hyps, refs, stats = probe
    broken(monkeypatch)
    if rule == "stage weights":  # every stage weighted 1 in the search, as the exact stage
        monkeypatch.setattr(meteor_align, "HALF_STAGES", (False,) * 4)
    elif rule == "no distance":  # the comparator's last criterion dropped
        step = meteor_align._step
        monkeypatch.setattr(meteor_align, "_step", lambda m: step(m)[:6] + (0,) + step(m)[7:])
    elif rule == "strings not hashes":  # words compared as strings, where the jar compares String.hashCode
        monkeypatch.setattr(meteor_align, "java_hash", lambda text: hash(text))
    elif rule == "first reference":  # no best reference picked: every score equal
        monkeypatch.setattr(meteor_stats, "meteor_score", lambda rows: 0.0 * rows[:, 0])
    elif rule == "no prefixes":  # the normalizer's nonbreaking prefixes forgotten
        monkeypatch.setattr(meteor_resources, "nonbreaking_prefixes", lambda: {})
    found = differences(jvm, hyps, refs, stats)
    assert len(found) >= 1, rule


def test_java_tokens_and_lines_take_their_shortcut_only_where_it_agrees():
    """StringTokenizer's tokens and readLine's lines: the ``str.split`` shortcut and the
    expressions give the same lists on texts with every blank and line break Java and Python
    treat differently."""
    import random
    import re

    from idc_toolkit.metrics.meteor_normalize import java_lines, java_tokens

    rng = random.Random(3)
    pieces = ["a", "bc", " ", "  ", "\t", "\n", "\r", "\r\n", "\f", "\x0b", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert java_tokens(text) == [t for t in re.split("[ \t\n\r\f]+", text) if t], repr(text)
        lines = re.split("\r\n|\r|\n", text)
        assert java_lines(text) == (lines[:-1] if lines and lines[-1] == "" else lines), repr(text)

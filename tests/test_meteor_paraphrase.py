"""METEOR with its paraphrase table cut to the references aligns as with the whole table."""

import random

import pytest

from idc_toolkit.metrics import meteor as meteor_mod
from idc_toolkit.metrics import paraphrase
from idc_toolkit.metrics.meteor import MeteorProcess

pytestmark = pytest.mark.java

#: captions as annotators write them: capitals, punctuation, contractions, quotes, numbers,
#: abbreviations, hyphens (METEOR's normalizer splits, joins and rewrites all of these)
WRITTEN = [
    "The white car in the lot is no longer there.", "A man in a red shirt has appeared near the door!",
    "There's a new sign, reading \"STOP\", on the U.S. highway.", "the person's bag isn't visible anymore",
    "Two people -- a woman and a child -- walked away from the bench.", "3.5 more cars are parked; the truck left.",
    "I can't see the black t-shirt on the left side now", "The group of people at the top has moved to the right side",
    "there is no difference", "the two scenes seem identical", "a few trees were cut down & a road was built",
    "Some buildings have been constructed in the bottom-left corner.", "the man who was standing is now sitting down",
    "A vehicle is present at the far end of the parking lot", "the cars have been removed from the street (left)",
]


def _paraphrased(references, index, rng):
    """Each reference with one span its table can match replaced by that entry's paraphrase:
    hypotheses that METEOR can only match through the paraphrase stage."""
    coverage = paraphrase.coverage_of([r for refs in references for r in refs], index)
    by_first = {}
    for k in paraphrase.kept_entries(index, coverage):
        a, b = index.first_start[k], index.first_start[k + 1]
        by_first.setdefault(index.phrase(index.first[a:b]), []).append(k)
    out = []
    for refs, normal in zip(references, paraphrase.normalized([r[0] for r in references])):
        words = normal.lower().split()
        spans = [(i, n) for n in (3, 2, 1) for i in range(len(words) - n + 1) if " ".join(words[i:i + n]) in by_first]
        if not spans:
            out.append(normal)
            continue
        i, n = rng.choice(spans)
        k = rng.choice(by_first[" ".join(words[i:i + n])])
        second = index.phrase(index.second[index.second_start[k]:index.second_start[k + 1]])
        out.append(" ".join(words[:i] + [second] + words[i + n:]))
    return out


def test_the_cut_table_aligns_every_segment_as_the_whole_table():
    """Written captions and CLEVR-shaped ones, hypotheses made of their paraphrases and of other
    pairs' references: every statistics line equals the whole table's, and the paraphrase stage
    matched in many of them (so a table that lost an entry would show)."""
    from idc_toolkit.demo.captions import synthetic_caption_set

    rng = random.Random(0)
    _, synthetic, _ = synthetic_caption_set(60, n_refs=3, seed=5)
    references = [[w, WRITTEN[(k + 3) % len(WRITTEN)]] for k, w in enumerate(WRITTEN)] + list(synthetic.values())
    index = paraphrase.table_index()
    hypotheses = _paraphrased(references, index, rng) + [rng.choice(references)[0] for _ in references]
    references = references + references
    need = paraphrase.coverage_needed(references)
    assert need is not None
    with MeteorProcess(coverage=need) as cut, MeteorProcess() as whole:
        ours, theirs = cut.statistics(hypotheses, references), whole.statistics(hypotheses, references)
    assert ours == theirs
    with_paraphrases = sum(any(float(x) for x in line.split()[16:20]) for line in theirs)
    assert with_paraphrases >= 50, with_paraphrases  # measured: 78 of 150 segments
    assert len(paraphrase.kept_entries(index, need)) < index.entries / 50  # what makes it load fast


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

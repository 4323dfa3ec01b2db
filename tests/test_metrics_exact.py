"""The scorer gives exactly what pycocoevalcap gives: published numbers, per-group results
identical to separate, unmodified pycocoevalcap runs on each group, and METEOR's cut paraphrase
table aligning as pycocoevalcap's whole-table JVM."""

import json
import random

import numpy as np
import pytest

from idc_toolkit.demo.captions import synthetic_caption_set
from idc_toolkit.metrics import paraphrase, score_groups
from idc_toolkit.metrics.meteor import MeteorProcess
from idc_toolkit.metrics.reference import end_meteor, pycocoevalcap_scores
from idc_toolkit.metrics.tokenizer import ptb_tokenize

pytestmark = pytest.mark.java


def _ddla(shared):
    folder = shared / "paper_predictions/spot-the-diff"
    gt = json.loads((folder / "ddla_rerun_gtfile.json").read_text())
    refs: dict[str, list[str]] = {}
    for a in gt["annotations"]:
        refs.setdefault(str(a["image_id"]), []).append(a["caption"])
    hyps = {str(p["image_id"]): p["caption"] for p in json.loads((folder / "ddla_rerun_predfile.json").read_text())}
    return hyps, refs


def test_reproduces_published_ddla_spot_the_diff_numbers(shared):
    hyps, refs = _ddla(shared)
    result = score_groups(hyps, refs, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"])
    got = {k: round(v, 4) for k, v in result.groups["overall"].scores.items()}
    assert got == {"Bleu_1": 0.2963, "Bleu_2": 0.187, "Bleu_3": 0.1176, "Bleu_4": 0.0757,
                   "METEOR": 0.1091, "ROUGE_L": 0.2797, "CIDEr": 0.3506}
    assert sum(1 for r in refs.values() for c in r if c == "") == 7  # kept, as the published score does


@pytest.fixture(scope="module")
def pycoco_meteor():
    """One unmodified pycocoevalcap ``Meteor`` (its ``compute_score`` is independent per call)
    serves every naive run of this module and the cut table's reference: its JVM loads the whole
    paraphrase table once (~9 s of a core)."""
    from pycocoevalcap.meteor.meteor import Meteor

    meteor = Meteor()
    yield meteor
    end_meteor(meteor)


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


def test_the_cut_table_aligns_every_segment_as_pycocoevalcaps_whole_table(pycoco_meteor):
    """Written captions and CLEVR-shaped ones, hypotheses made of their paraphrases and of other
    pairs' references: every statistics line of METEOR with its paraphrase table cut to the
    references equals what pycocoevalcap's own JVM (the whole table) answers to the same ``SCORE``
    line, and the paraphrase stage matched in many of them (so a table that lost an entry would show)."""
    rng = random.Random(0)
    _, synthetic, _ = synthetic_caption_set(60, n_refs=3, seed=5)
    references = [[w, WRITTEN[(k + 3) % len(WRITTEN)]] for k, w in enumerate(WRITTEN)] + list(synthetic.values())
    index = paraphrase.table_index()
    hypotheses = _paraphrased(references, index, rng) + [rng.choice(references)[0] for _ in references]
    references = references + references
    need = paraphrase.coverage_needed(references)
    assert need is not None
    with MeteorProcess(coverage=need) as cut:
        ours = cut.statistics(hypotheses, references)
    theirs = [pycoco_meteor._stat(h, r) for h, r in zip(hypotheses, references)]
    assert ours == theirs
    with_paraphrases = sum(any(float(x) for x in line.split()[16:20]) for line in theirs)
    assert with_paraphrases >= 50, with_paraphrases  # many match only through the paraphrase stage (figure: benchmarks/README.md)
    assert len(paraphrase.kept_entries(index, need)) < index.entries / 50  # what makes it load fast


def test_per_group_scores_equal_separate_pycocoevalcap_runs(pycoco_meteor):
    hyps, refs, cats = synthetic_caption_set(300, seed=3)
    first = next(iter(hyps))
    hyps[first] = ""  # an empty prediction
    refs[first][2] = ""  # an empty reference
    groups: dict[str, list[str]] = {}
    for pid, c in cats.items():
        groups.setdefault(c, []).append(pid)
    groups["change_only"] = [p for p in refs if cats[p] != "distractor"]
    ours = score_groups(hyps, refs, groups, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"])
    meteor = pycoco_meteor
    worst = 0.0
    for gname in ["overall", *groups]:
        ids = list(refs) if gname == "overall" else groups[gname]
        naive, naive_pairs = pycocoevalcap_scores({i: refs[i] for i in ids}, {i: hyps[i] for i in ids}, meteor)
        for metric, value in naive.items():
            diff = abs(ours.groups[gname].scores[metric] - value)
            worst = max(worst, diff)
            assert diff <= 1e-9, (gname, metric, ours.groups[gname].scores[metric], value)
            if metric == "CIDEr":  # vectorised with pycocoevalcap's operation order: bit for bit
                assert ours.groups[gname].scores[metric] == value, (gname, ours.groups[gname].scores[metric], value)
        if gname == "overall":
            for metric in ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr"):
                values = naive_pairs[metric]
                assert np.max(np.abs(np.asarray(ours.per_pair[metric]) - np.asarray(values))) <= 1e-9, metric
            assert np.array_equal(np.asarray(ours.per_pair["CIDEr"]), np.asarray(naive_pairs["CIDEr"]))
    # BLEU and ROUGE-L run pycocoevalcap's own code; CIDEr and METEOR are restructured
    for gname in ["overall", *groups]:
        assert ours.groups[gname].n == (len(refs) if gname == "overall" else len(groups[gname]))
    print(f"largest difference to the naive per-group runs: {worst:.3g}")


def test_tokenizer_matches_pycocoevalcap():
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    sentences = ["A man (moved) isn't here.", "", "Hello,   world!!", "the ``quoted'' thing; end...", "Émile's café — naïve",
                 "a|||b", "   ", "the cube's color: red-ish?", ""]
    ours = ptb_tokenize(sentences)
    theirs = PTBTokenizer().tokenize({str(i): [{"caption": s}] for i, s in enumerate(sentences)})
    assert ours == [theirs[str(i)][0] for i in range(len(sentences))]


#: lines whose end the tokenizer reads in the light of the next line's start ("I." keeps its
#: period before "the", loses it before "There"), and lines that start such a reading
LAST_LINES = ["I.", "the man in fig.", "a b c.", "See Fig."]
FIRST_LINES = ["A car", "There is a man", "2nd car moved", "It is gone"]


def test_each_block_is_tokenized_as_pycocoevalcap_tokenizes_it_alone(shared, monkeypatch):
    """Real references and predictions (DDLA's Spot-the-Diff files) cut into blocks whose
    neighbours would change how the tokenizer reads a block's last line: one JVM call gives each
    block what pycocoevalcap's own PTBTokenizer gives that block as its whole file (its references
    or its hypotheses), so the tokens of a block can be kept and reused."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from idc_toolkit.metrics.tokenizer import ptb_tokenize_blocks

    monkeypatch.setenv("IDC_TOKENIZER_CACHE", "0")
    hyps, refs = _ddla(shared)
    lines = [c for rs in refs.values() for c in rs] + list(hyps.values())
    blocks = [lines[k::4] for k in range(4)]
    for k, block in enumerate(blocks):
        block.insert(0, FIRST_LINES[k])
        block.append(LAST_LINES[k])
    ours = ptb_tokenize_blocks(blocks)
    for block, tokens in zip(blocks, ours):
        theirs = PTBTokenizer().tokenize({str(i): [{"caption": line}] for i, line in enumerate(block)})
        assert tokens == [theirs[str(i)][0] for i in range(len(block))]
    assert [tokens[-1] for tokens in ours] == ["i.", "the man in fig", "a b c.", "see fig"]
    # as one file, each of the first three last lines is read with the next block's first line
    joined = ptb_tokenize_blocks([[line for block in blocks for line in block]])[0]
    ends = np.cumsum([len(block) for block in blocks]) - 1
    assert [joined[e] for e in ends] == ["i", "the man in fig.", "a b c", "see fig"]


def test_the_scorer_tokenizes_references_and_hypotheses_as_two_files(monkeypatch):
    """pycocoevalcap tokenizes an evaluation's references and its hypotheses in two calls: the
    last reference is read at the end of its file, not before the first hypothesis."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from idc_toolkit.metrics.core import build_cache

    monkeypatch.setenv("IDC_TOKENIZER_CACHE", "0")
    refs = {"1": ["a man walked away", "the cube is gone"], "2": ["I."]}
    hyps = {"1": "There is a man", "2": "It is gone"}
    cache = build_cache(hyps, refs, ["BLEU"])
    cache.close()
    gts = PTBTokenizer().tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
    res = PTBTokenizer().tokenize({k: [{"caption": v}] for k, v in hyps.items()})
    assert cache.references == [gts["1"], gts["2"]] == [["a man walked away", "the cube is gone"], ["i."]]
    assert cache.hypotheses == [res["1"][0], res["2"][0]]


def test_cider_groups_are_bit_for_bit_pycocoevalcaps():
    """The vectorised CIDEr-D against pycocoevalcap's own ``Cider`` on groups of 8,000 pairs of
    random sentences from a small vocabulary (many shared n-grams, captions of 0-18 words, 1-6
    references), no Java needed. This set was chosen because it separates libm's ``pow(v, 2)``
    (pycocoevalcap's norms) from ``v * v``: with ``v * v`` one pair of the second group differs
    in its last bit."""
    import random

    from pycocoevalcap.cider.cider import Cider

    from idc_toolkit.metrics.cider import CiderCache

    rng = random.Random(0)
    words = [f"w{i}" for i in range(60)] + ["the", "a", "is", "moved", "red", "cube"]

    def sentence():
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 18)))

    hyps = [sentence() for _ in range(8000)]
    refs = [[sentence() for _ in range(rng.randint(1, 6))] for _ in range(8000)]
    cache = CiderCache(hyps, refs)
    for group in (list(range(0, 8000, 40)), list(range(1, 8000, 3)), [11]):
        theirs, theirs_pairs = Cider().compute_score({i: refs[i] for i in group}, {i: [hyps[i]] for i in group})
        ours, ours_pairs = cache.score(group)
        assert ours == theirs and np.array_equal(ours_pairs, np.asarray(theirs_pairs))


def test_cider_of_repeated_sentences_is_bit_for_bit_pycocoevalcaps():
    """Captions as template datasets and no-change pairs give them: a few hundred distinct
    sentences, hypotheses repeated across pairs, pairs sharing one reference set, a sentence
    that is both a hypothesis and a reference; the vectors made once per distinct sentence give
    pycocoevalcap's numbers for groups and for a pair drawn several times (a bootstrap multiset)."""
    import random

    from pycocoevalcap.cider.cider import Cider

    from idc_toolkit.metrics.cider import CiderCache

    rng = random.Random(1)
    colours, shapes = ["red", "blue", "green", "gray"], ["cube", "sphere", "cylinder"]
    templates = ["the {} {} has moved", "a {} {} was added", "the {} {} is gone", "there is no change", "{} {}"]
    pool = [t.format(rng.choice(colours), rng.choice(shapes)) for t in templates for _ in range(40)]
    shared = [rng.choice(pool) for _ in range(5)]
    hyps, refs = [], []
    for i in range(3000):
        hyps.append(rng.choice(pool) if i % 4 else shared[0])
        refs.append(list(shared) if i % 4 == 0 else [rng.choice(pool) for _ in range(rng.randint(1, 5))])
    cache = CiderCache(hyps, refs)
    for group in (list(range(3000)), list(range(0, 3000, 4)), list(range(1, 3000, 7)), [3, 3, 3, 8, 0, 0]):
        keys = [f"{i}_{k}" for k, i in enumerate(group)]
        theirs, theirs_pairs = Cider().compute_score({key: refs[i] for key, i in zip(keys, group)},
                                                     {key: [hyps[i]] for key, i in zip(keys, group)})
        ours, ours_pairs = cache.score(group)
        assert ours == theirs and np.array_equal(ours_pairs, np.asarray(theirs_pairs)), group[:6]


@pytest.mark.parametrize("scorer", ["python", "java"])
def test_repeated_segments_are_aligned_once_and_score_as_pycocoevalcap(shared, monkeypatch, pycoco_meteor, scorer):
    """LEVIR-CC's no-change pairs share their five references (the real token files of two of
    them, one train one test, hold the same five), and a model answers most of them alike: such
    a repeated METEOR segment is aligned once, by either scorer. Scores equal an unmodified
    pycocoevalcap run."""
    import idc_toolkit.metrics.meteor as meteor_mod
    import idc_toolkit.metrics.meteor_align as align_mod

    tokens = shared / "real_annotations/levir_cc/LEVIR_MCI/tokens"

    def captions(name):
        return [" ".join(t for t in c if t not in ("<START>", "<END>")) for c in json.loads((tokens / name).read_text())]

    no_change = captions("test_000001.txt")
    assert captions("train_000001.txt") == no_change  # the shared five
    changes = [captions(f"test_0000{k}.txt") for k in ("04", "17", "18")]
    refs = {f"n{k}": no_change for k in range(40)}
    hyps = {f"n{k}": ("there is no difference" if k % 8 else "the two scenes seem identical") for k in range(40)}
    for k, r in enumerate(changes):
        refs[f"c{k}"], hyps[f"c{k}"] = r, "a road is built and many houses appear"
    hyps["c2"] = hyps["c1"]  # the same answer against other references: a segment of its own
    asked = []
    if scorer == "java":
        real = meteor_mod.parallel_statistics
        monkeypatch.setattr(meteor_mod, "parallel_statistics", lambda w, h, r: asked.append(len(h)) or real(w, h, r))
    else:
        real = align_mod.statistics
        monkeypatch.setattr(align_mod, "statistics", lambda h, r: asked.append(len(h)) or real(h, r))
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    ours = score_groups(hyps, refs, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"], scorer=scorer)
    assert ours.scorer == scorer
    assert asked == [2 + 3]  # two distinct no-change segments, three change pairs
    naive, naive_pairs = pycocoevalcap_scores(refs, hyps, pycoco_meteor)
    for metric, value in naive.items():
        assert abs(ours.groups["overall"].scores[metric] - value) <= 1e-12, metric
    assert np.max(np.abs(np.asarray(ours.per_pair["METEOR"]) - np.asarray(naive_pairs["METEOR"]))) <= 1e-12

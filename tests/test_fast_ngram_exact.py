"""ROUGE-L's bit-parallel LCS and BLEU's counts from the shared n-gram layouts give exactly
pycocoevalcap's values: LCS lengths equal to ``my_lcs``, per-pair ROUGE-L floats equal to
``Rouge.calc_score``, each pair's statistics equal to what ``cook_test(h, cook_refs(r))`` and
``_single_reflen`` give, and BLEU scores equal to ``BleuScorer``'s."""

import random

import numpy as np
import pytest
from pycocoevalcap.bleu import bleu_scorer as pycoco_bleu
from pycocoevalcap.rouge.rouge import Rouge, my_lcs
from test_metrics_exact import _ddla

from idc_toolkit.demo.captions import synthetic_caption_set
from idc_toolkit.metrics import ngrams
from idc_toolkit.metrics.bleu import BleuCache
from idc_toolkit.metrics.rouge import lcs_length, rouge_l, rouge_scores


def _long(rng: random.Random, vocabulary: list[str], n: int = 200) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def _edge_pairs() -> list[tuple[str, list[str]]]:
    rng = random.Random(5)
    small, large = ["the", "a", "car", "is", "gone"], [f"w{i}" for i in range(300)]
    return [
        ("", ["the car is gone"]), ("the car is gone", [""]), ("", [""]), ("", ["", "a"]),
        ("car", ["car"]), ("car", ["truck"]), ("car", ["the car", "car car car"]),
        ("the the the the", ["the the", "the cat the the", "a b"]),
        ("a b a b a b a b", ["a b a b", "b a b a b a", "a a b b"]),
        ("the car the car the car", ["the car", "the car the car the car the car"]),
        ("a b c d e", ["e d c b a"]), ("x y z", ["a b c", "d e f"]),
        ("the red car is gone", ["the red car is gone"] * 3), ("the red car", ["the red car is gone"] + [f"r{i} car" for i in range(20)]),
        # split(" ") (ROUGE) and split() (BLEU) tell these apart
        ("a  b", ["a b", "a  b"]), (" a b ", ["a b"]), ("a\tb c", ["a b c", "a\tb"]), ("a\nb", ["a b"]), ("  ", [" "]),
        ("über café 東京 東京 naïve", ["café über 東京", "naïve 東京 東京 café", "Über Café"]),
        ("😀 the 😀 car", ["the 😀 car 😀", "😀"]),
        (_long(rng, small), [_long(rng, small), _long(rng, small, 150), "the car"]),
        (_long(rng, large), [_long(rng, large), _long(rng, large, 20), _long(rng, small, 200)]),
        (_long(rng, small, 7), [_long(rng, small, 200), _long(rng, large, 200)]),
    ]


def _pooled_pairs() -> list[tuple[str, list[str]]]:
    """Pairs drawn from a few sentences, many with repeated words: sentences and reference sets
    recur across pairs, with other hypotheses and beside other references."""
    rng = random.Random(8)
    pool = ["the car the car", "the car", "the the the", "a red car", "a car a car a car", "the red car is gone",
            "", "car", "the car is the car", "is the car gone", "a b a b", "b a b a"]
    return [(rng.choice(pool), rng.sample(pool, rng.randint(1, 5))) for _ in range(600)]


def _pairs(shared) -> list[tuple[str, list[str]]]:
    hyps, refs = _ddla(shared)
    pairs = [(hyps[k], refs[k]) for k in sorted(hyps)]
    h, r, _ = synthetic_caption_set(3000, seed=11)
    return pairs + [(h[k], r[k]) for k in sorted(h)] + _edge_pairs() + _pooled_pairs()


@pytest.fixture(scope="module")
def pairs(shared):
    return _pairs(shared)


def test_lcs_lengths_are_my_lcs(pairs):
    for hypothesis, references in pairs:
        candidate = hypothesis.split(" ")
        for reference in references:
            tokens = reference.split(" ")
            assert lcs_length(candidate, tokens) == lcs_length(tokens, candidate) == my_lcs(tokens, candidate)


def test_lcs_lengths_on_random_sequences():
    rng = random.Random(3)
    for _ in range(3000):
        alphabet = "abcdefgh"[: rng.randint(1, 8)]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        assert lcs_length(a, b) == my_lcs(a, b)


def test_rouge_l_is_calc_score(pairs):
    rouge = Rouge()
    expected = [rouge.calc_score([h], list(r)) for h, r in pairs]
    assert [rouge_l(h, r) for h, r in pairs] == expected
    # the scorer's entry point, which computes each distinct pair once
    assert rouge_scores([h for h, _ in pairs] * 2, [r for _, r in pairs] * 2).tolist() == expected * 2


def test_rouge_l_without_references_fails_as_pycocoevalcap():
    with pytest.raises(AssertionError):
        Rouge().calc_score(["a car"], [])
    with pytest.raises(AssertionError):
        rouge_l("a car", [])


def _cooked(hypothesis: str, references: list[str]) -> list[int]:
    """pycocoevalcap's own cooking of one pair, as the ten statistics compute_score reads."""
    ctest = pycoco_bleu.cook_test(hypothesis, pycoco_bleu.cook_refs(list(references)))
    reflen = min((abs(l - ctest["testlen"]), l) for l in ctest["reflen"])[1]
    return [ctest["testlen"], reflen, *ctest["guess"], *ctest["correct"]]


def test_each_pairs_statistics_are_pycocoevalcaps_cooking(pairs):
    cache = BleuCache([h for h, _ in pairs], [r for _, r in pairs])
    assert cache.stats.tolist() == [_cooked(h, r) for h, r in pairs]


def test_bleu_cache_scores_as_pycocoevalcap(pairs):
    hypotheses = [h for h, _ in pairs] * 2
    references = [r for _, r in pairs] * 2
    cache = BleuCache(hypotheses, references)
    scorer = pycoco_bleu.BleuScorer(n=4)
    for hypothesis, refs in zip(hypotheses, references):
        scorer += (hypothesis, list(refs))  # as pycocoevalcap's Bleu.compute_score cooks
    corpus, per_pair = cache.score(list(range(len(hypotheses))))
    assert (corpus, per_pair.T.tolist()) == scorer.compute_score(option="closest", verbose=0)
    assert cache.sufficient_statistics()[:, :2].sum(axis=0).tolist() == [scorer._testlen, scorer._reflen]
    for group in (list(range(0, len(hypotheses), 7)), [3, 3, 3, 8], [5]):  # a multiset too, as a bootstrap draws
        alone = pycoco_bleu.BleuScorer(n=4)
        for i in group:
            alone += (hypotheses[i], list(references[i]))
        corpus, per_pair = cache.score(group)
        assert (corpus, per_pair.T.tolist()) == alone.compute_score(option="closest", verbose=0)


def test_layout_rows_are_precook_in_its_order_across_blocks(pairs, monkeypatch):
    """Each distinct sentence's row, read back through its ids, is ``precook(sentence)``: the same
    n-grams with the same counts in the same order, and the ids are given in first-seen order
    (sentence, order, position); blocks of 7 sentences put the seams everywhere."""
    monkeypatch.setattr(ngrams.OrderLayouts, "BLOCK", 7)
    layouts = ngrams.NgramLayouts([h for h, _ in pairs], [r for _, r in pairs])
    sentences = list(dict.fromkeys([h for h, _ in pairs] + [s for _, refs in pairs for s in refs]))  # rows: hypotheses first
    seen: dict[tuple[str, ...], int] = {}
    for row, sentence in enumerate(sentences):
        length, counts = pycoco_bleu.precook(sentence)
        ours = []
        for n in range(ngrams.N):
            gid, tf = layouts.rows(n, np.array([row]))
            ours += [(int(g), int(t)) for g, t in zip(gid[0], tf[0]) if t]
        # the same n-grams per order, in precook's order: ids stand for n-grams one-to-one
        order_of = {ngram: k for k, ngram in enumerate(counts)}
        expected = sorted(counts.items(), key=lambda item: (len(item[0]), order_of[item[0]]))
        assert [t for _, t in ours] == [t for _, t in expected], sentence
        for (gid, _), (ngram, _) in zip(ours, expected):
            assert seen.setdefault(ngram, len(seen)) == gid, (sentence, ngram)
        assert layouts.words[row] == length and layouts.length[row] == max(length - 1, 0)
    assert layouts.vocab == len(seen)


def test_more_distinct_ngrams_than_the_ids_hold_is_refused(monkeypatch):
    """Past the ids' range the layouts refuse with OverflowError rather than wrap an id."""
    monkeypatch.setattr(ngrams.OrderLayouts, "MOST_IDS", 10)
    ngrams.NgramLayouts(["a b c"], [["a b"]])  # 6 distinct n-grams
    with pytest.raises(OverflowError, match="distinct n-grams"):
        ngrams.NgramLayouts(["a b c d"], [["a b e"]])  # 12


def test_cider_of_long_short_and_empty_captions_is_pycocoevalcaps(pairs):
    """CIDEr-D over the same pairs (200-word captions beside empty ones, emoji, the DDLA set), the
    whole set and groups that put the long captions in chunks of short ones: pycocoevalcap's
    ``Cider`` bit for bit, whatever width a chunk's rows are read at."""
    from pycocoevalcap.cider.cider import Cider

    from idc_toolkit.metrics.cider import CiderCache

    hyps, refs = [h for h, _ in pairs], [list(r) for _, r in pairs]
    cache = CiderCache(hyps, refs)
    long_ones = [k for k, h in enumerate(hyps) if len(h.split()) >= 100]
    assert long_ones
    for group in (list(range(len(pairs))), long_ones + list(range(0, len(pairs), 9)), long_ones[:1] + [0, 1]):
        theirs, theirs_pairs = Cider().compute_score({k: refs[i] for k, i in enumerate(group)},
                                                     {k: [hyps[i]] for k, i in enumerate(group)})
        ours, ours_pairs = cache.score(group)
        assert ours == theirs and np.array_equal(ours_pairs, np.asarray(theirs_pairs)), group[:3]


def test_the_layouts_hold_each_rows_ngrams_and_no_padding(pairs):
    """A sentence's row holds its own n-grams, not as many as the longest sentence has: per order,
    the layouts hold one entry per distinct n-gram of each distinct sentence (``precook``'s count)
    and one per hypothesis n-gram of each (pair, reference), each row followed by one padding entry. Padded to
    the longest row, one 53-word reference or a 100-word answer among 80,000 distinct pairs
    held 0.4-1.2 GB more (benchmarks/README.md)."""
    widest = " ".join(f"v{i}" for i in range(255))  # the longest sentence: 255 n-grams, counted in one byte
    pairs = [*pairs, (widest, [widest, "v1 v2"])]
    layouts = ngrams.NgramLayouts([h for h, _ in pairs], [r for _, r in pairs])
    sentences = list(dict.fromkeys([h for h, _ in pairs] + [s for _, refs in pairs for s in refs]))
    per_order = np.zeros((len(sentences), ngrams.N), dtype=np.int64)
    for row, sentence in enumerate(sentences):
        for ngram in pycoco_bleu.precook(sentence)[1]:
            per_order[row, len(ngram) - 1] += 1
    row_of = {s: k for k, s in enumerate(sentences)}
    hyp_rows = [row_of[h] for h, refs in pairs for _ in refs]
    for n in range(ngrams.N):
        start, gid, tf = layouts.layout[n]
        assert np.array_equal(np.diff(start), per_order[:, n] + 1)
        assert len(gid) == len(tf) == per_order[:, n].sum() + len(sentences)
        assert len(layouts.columns[n].gid) == per_order[hyp_rows, n].sum() + len(hyp_rows)

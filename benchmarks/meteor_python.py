"""METEOR's statistics in Python (``metrics.meteor_align``) against the jar, segment for segment.

    python benchmarks/meteor_python.py [--generated 100000] [--seed 0] [--shared ../shared]

One METEOR JVM with the whole paraphrase table, as pycocoevalcap starts it, and the Python
aligner score the same segments: the real references and published predictions under
``../shared`` (where present), the demo's captions and seeded generated segments made to be
hard (below). Printed per set: segments, differing statistics lines (must be 0), and each side's
seconds. ``tests/test_meteor_python.py`` runs the same sets, smaller.

Generated segments are built from slots, each with several spellings that METEOR matches at
some stage: a word's WordNet synonyms, a stem's inflections, a paraphrase entry's two phrases
(straight from the table), function words, words whose ``String.hashCode`` collide, numbers
and punctuation; a reference spells each slot one way and the hypothesis another, shuffled,
with slots repeated, dropped and added, so that the beam search has choices to rank. Every
tenth kind is an edge case: empty or blank hypotheses, one-word references, punctuation alone,
``|||`` inside a reference, and long runs of a few repeated words.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# -- real and demo segments -----------------------------------------------------------------


def _rotate(groups: list[list[str]], limit: int, rng: random.Random) -> tuple[list[str], list[list[str]]]:
    """Segments from groups of captions of one pair: one caption as the hypothesis, the others
    as references (a caption alone gets another pair's caption as hypothesis)."""
    hyps, refs = [], []
    groups = [g for g in groups if g]
    for k, group in enumerate(groups[:limit]):
        if len(group) > 1:
            pick = k % len(group)
            hyps.append(group[pick])
            refs.append(group[:pick] + group[pick + 1:])
        else:
            hyps.append(rng.choice(rng.choice(groups)))
            refs.append(list(group))
    return hyps, refs


def real_segments(shared: Path, per_source: int = 2000, seed: int = 0) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Named segment sets from the real files under ``shared`` (sets whose files are absent are
    left out): the published DDLA Spot-the-Diff predictions with their references (and the
    references scored against each other), and captions of Spot-the-Diff, CARD's multi-change
    Spot-the-Diff, IER, Syned and Dubai-CC as hypotheses against their pair's other captions."""
    rng = random.Random(seed)
    sets: dict[str, tuple[list[str], list[list[str]]]] = {}
    pred = shared / "paper_predictions" / "spot-the-diff"
    if (pred / "ddla_rerun_predfile.json").is_file():
        gt = json.loads((pred / "ddla_rerun_gtfile.json").read_text())
        by_id = collections.defaultdict(list)
        for a in gt["annotations"]:
            by_id[a["image_id"]].append(a["caption"])
        predictions = json.loads((pred / "ddla_rerun_predfile.json").read_text())
        sets["ddla predictions"] = ([p["caption"] for p in predictions], [by_id[p["image_id"]] for p in predictions])
        sets["ddla references"] = _rotate([by_id[p["image_id"]] for p in predictions], per_source, rng)
    real = shared / "real_annotations"
    spot = real / "spot_the_diff"
    if (spot / "test.json").is_file():
        by_id = collections.defaultdict(list)
        for split in ("train", "val", "test"):
            for item in json.loads((spot / f"{split}.json").read_text()):
                by_id[item["img_id"]].extend(item["sentences"])
        groups = [by_id[k] for k in sorted(by_id, key=int)]
        rng.shuffle(groups)
        sets["spot-the-diff"] = _rotate(groups, per_source, rng)
    card = spot / "card_multi_change" / "change_multi_captions.json"
    if card.is_file():
        captions = json.loads(card.read_text())
        names = sorted(captions)
        rng.shuffle(names)
        names = names[:per_source // 2]
        sets["card multi-change"] = ([captions[n][0] for n in names],
                                     [captions[names[(k + 1) % len(names)]] + captions[names[(k + 7) % len(names)]]
                                      for k in range(len(names))])
    if (real / "ier" / "test.json").is_file():
        groups = [item["sents"] for split in ("train", "valid", "test")
                  for item in json.loads((real / "ier" / f"{split}.json").read_text())]
        rng.shuffle(groups)
        sets["ier"] = _rotate(groups, per_source, rng)
    if (real / "syned" / "gt_augmented_test_clean.json").is_file():
        items = json.loads((real / "syned" / "gt_augmented_test_clean.json").read_text())
        sets["syned"] = _rotate([items[k] for k in sorted(items)], per_source, rng)
    if (real / "dubai_cc" / "Test_Dubai_CC.json").is_file():
        groups = [[s["raw"] for s in image["sentences"]] for name in ("Train", "Validation", "Test")
                  for image in json.loads((real / "dubai_cc" / f"{name}_Dubai_CC.json").read_text())["images"]]
        sets["dubai-cc"] = _rotate(groups, per_source, rng)
    return sets


def demo_segments(n: int, seed: int = 1) -> tuple[list[str], list[list[str]]]:
    """The demo's synthetic CLEVR-Change captions (5 references; case, punctuation, contractions)."""
    from idc_toolkit.demo.captions import synthetic_caption_set

    hyps, refs, _ = synthetic_caption_set(n, n_refs=5, seed=seed)
    return [hyps[k] for k in refs], [refs[k] for k in refs]


# -- generated hard segments ------------------------------------------------------------------

_PUNCT = [".", ",", "...", "..", "!", "?", ";", ":", "'", "\"", "`", "``", "''", "--", "-", "\u2013", "\u2014",
          "\u2018", "\u2019", "\u201c", "\u201d", "(", ")", "[", "]", "&", "%", "$", "#", "/", "*", "'s", "n't",
          "DOTMULTI", "\u00a0", "\u2003", "\t", "\x0b"]
_SPECIAL = ["Mr.", "U.S.", "U.S.-based", "No.", "No. 5", "pp. 3", "e.g.", "i.e.", "Inc.", "p.m.", "St.", "vs.",
            "x.y.z", "a.-b", "A.", "rock'n'roll", "don't", "it's", "1990's", "'90s", "o'clock", "well-known",
            "cafe\u0301", "caf\u00e9", "na\u00efve", "\u00fcber", "\u041f\u0440\u0438\u0432\u0435\u0442", "\u0161koda",
            "stra\u00dfe", "\u00c9cole", "\u0130stanbul", "\u03b1\u03b2", "\u2116", "\u3000", "\u4e2d\u6587",
            "x\U0001d41ay", "\U0001f600", "\U0001d400\U0001d401"]
_NUMBERS = ["1,000", "3.5", "3.14.", "10", "2nd", "5.", "0", "1,2", "12,345,678", "1-2", "3/4", "100%", "$5", "7am"]
_SUFFIXES = ["", "s", "es", "ed", "ing", "er", "est", "ly", "ness", "ful", "ion", "ation", "ies", "ied", "y", "al",
             "ize", "ive", "ment", "able"]


@lru_cache(maxsize=None)
def _pools(seed: int) -> dict:
    """Spellings to draw slots from, read from the jar and the paraphrase table."""
    from idc_toolkit.metrics import meteor_resources as res
    from idc_toolkit.metrics.meteor_normalize import java_hash

    rng = random.Random(seed)
    synonyms = res.synonyms()
    by_set = collections.defaultdict(list)
    words = sorted(w for w in synonyms.synset_lines if w.isalpha() and w.islower())
    for w in rng.sample(words, 12000):
        for sid in synonyms.synsets(w):
            by_set[sid].append(w)
    groups = sorted(tuple(g) for g in by_set.values() if len(g) > 1)
    families = []
    for base in rng.sample(words, 3000):
        stem = base[:-1] if base.endswith("e") and rng.random() < 0.5 else base
        families.append(tuple(sorted({base} | {stem + s for s in rng.sample(_SUFFIXES, 5)})))
    bases = sorted(synonyms.bases.items())
    for form, found in rng.sample(bases, 1500):
        families.append(tuple(sorted({form, *found})))
    index = res.paraphrase_index()
    phrases = []
    for k in rng.sample(range(index.entries), 6000):
        first = index.phrase(index.first[index.first_start[k]:index.first_start[k + 1]])
        second = index.phrase(index.second[index.second_start[k]:index.second_start[k + 1]])
        phrases.append((first, second))
    # distinct lower-case words the jar takes for one: equal String.hashCode
    letters = "abcdefghijklmnopqrstuvwxyz0123456789" + "".join(chr(c) for c in range(0xDF, 0x100) if c != 0xF7)
    by_hash = collections.defaultdict(list)
    for a in letters:
        for b in letters:
            by_hash[java_hash(a + b)].append(a + b)
    collisions = sorted(tuple(g) for g in by_hash.values() if len(g) > 1)
    return {"groups": groups, "families": families, "phrases": phrases, "collisions": collisions,
            "function": sorted(res.function_words()), "words": words}


def _slot(pools: dict, rng: random.Random) -> tuple[str, ...]:
    kind = rng.random()
    if kind < 0.2:
        return rng.choice(pools["groups"])
    if kind < 0.38:
        return rng.choice(pools["families"])
    if kind < 0.58:
        return rng.choice(pools["phrases"])
    if kind < 0.75:
        return (rng.choice(pools["function"]),)
    if kind < 0.8:
        group = rng.choice(pools["collisions"])
        prefix = rng.choice(pools["words"]) if rng.random() < 0.3 else ""
        return tuple(prefix + w for w in group)  # a common prefix keeps the hashes equal
    if kind < 0.85:
        return (rng.choice(_NUMBERS),)
    if kind < 0.9:
        return (rng.choice(_PUNCT), rng.choice(_SPECIAL))
    return (rng.choice(pools["words"]),)


def _spell(token: str, rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return token.upper()
    if roll < 0.12:
        return token.capitalize()
    return token


def _sentence(slots: list, rng: random.Random, shuffle: float) -> str:
    tokens = [_spell(rng.choice(s), rng) for s in slots if rng.random() > 0.08]
    for _ in range(int(len(tokens) * shuffle)):
        a, b = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        tokens[a], tokens[b] = tokens[b], tokens[a]
    text = ""
    for token in tokens:
        text += rng.choice([" ", " ", " ", "  ", ""]) + token if text else token
    if rng.random() < 0.2:
        text += rng.choice([".", "!", " .", "?", "...", " '"])
    return text


def hard_segments(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``n`` generated segments (module docstring), the same for the same seed."""
    pools = _pools(seed)
    rng = random.Random(seed + 1)
    hyps, refs = [], []
    for k in range(n):
        case = k % 20
        if case == 0:
            slots = [_slot(pools, rng) for _ in range(rng.randint(1, 8))]
            hyps.append(rng.choice(["", " ", "\t", "|||", " ||| "]))
            refs.append([_sentence(slots, rng, 0.2) for _ in range(rng.randint(1, 4))])
            continue
        if case == 1:  # one-word references, some empty
            slots = [_slot(pools, rng) for _ in range(rng.randint(1, 6))]
            hyps.append(_sentence(slots, rng, 0.3))
            refs.append([rng.choice(rng.choice(slots)).split(" ")[0] if rng.random() > 0.1 else ""
                         for _ in range(rng.randint(1, 5))])
            continue
        if case == 2:  # punctuation and abbreviations alone
            pieces = _PUNCT + _SPECIAL + _NUMBERS
            hyps.append(" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))))
            refs.append([" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 3))])
            continue
        if case == 3:  # long runs of a few words: many equal candidates for the beam
            few = [_slot(pools, rng) for _ in range(rng.randint(2, 4))]
            hyps.append(_sentence([rng.choice(few) for _ in range(rng.randint(10, 35))], rng, 0.5))
            refs.append([_sentence([rng.choice(few) for _ in range(rng.randint(10, 35))], rng, 0.5)
                         for _ in range(rng.randint(1, 4))])
            continue
        slots = [_slot(pools, rng) for _ in range(rng.randint(1, 14))]
        for _ in range(rng.randint(0, 4)):  # repeated slots
            slots.insert(rng.randrange(len(slots) + 1), rng.choice(slots))
        references = [_sentence(slots, rng, rng.choice([0, 0.1, 0.3])) for _ in range(rng.randint(1, 5))]
        if case == 4:
            references[rng.randrange(len(references))] += " ||| " + _sentence(slots, rng, 0.2)
        extra = [_slot(pools, rng) for _ in range(rng.randint(0, 3))]
        hyps.append(_sentence(slots + extra, rng, rng.choice([0, 0.2, 0.5])))
        refs.append(references)
    return hyps, refs


# -- comparison -------------------------------------------------------------------------------


def compare(jvm, hyps: list[str], refs: list[list[str]]) -> tuple[list[int], float, float]:
    """Indices of segments whose statistics differ, and the Python and JVM seconds."""
    from idc_toolkit.metrics import meteor_align

    start = time.perf_counter()
    ours = meteor_align.statistics(hyps, refs)
    python = time.perf_counter() - start
    start = time.perf_counter()
    theirs = jvm.statistics(hyps, refs)
    java = time.perf_counter() - start
    return [k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b], python, java


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=100_000)
    parser.add_argument("--demo", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--chunk", type=int, default=20_000, help="segments per comparison")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from idc_toolkit.metrics.meteor import MeteorProcess

    sets = real_segments(args.shared, per_source=100_000, seed=args.seed) if args.shared.is_dir() else {}
    sets["demo"] = demo_segments(args.demo, seed=args.seed + 1)
    hyps, refs = hard_segments(args.generated, seed=args.seed)
    for start in range(0, len(hyps), args.chunk):
        sets[f"generated {start:,}-{min(start + args.chunk, len(hyps)):,}"] = (hyps[start:start + args.chunk],
                                                                              refs[start:start + args.chunk])
    total = differing = 0
    print("| set | segments | differing | Python s | JVM s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with MeteorProcess(timeout=1800) as jvm:
        jvm.statistics(["a"], [["a"]])  # the table loaded before any timing
        for name, (h, r) in sets.items():
            bad, python, java = compare(jvm, h, r)
            total += len(h)
            differing += len(bad)
            print(f"| {name} | {len(h):,} | {len(bad)} | {python:.2f} | {java:.2f} |")
            for k in bad[:3]:
                print(f"    differs: {h[k]!r} against {r[k]!r}")
    print(f"\n{total:,} segments, {differing} differing")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()

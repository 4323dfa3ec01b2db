"""ROUGE-L and BLEU cooking: pycocoevalcap's own code, as the scorer called it per pair, against
the toolkit's exact versions (bit-parallel LCS; BLEU's statistics from the n-gram layouts it
shares with CIDEr-D, here made for BLEU alone: in a scoring CIDEr-D's computation makes them, and
BLEU's own share is the clipped counts).

    python benchmarks/rouge_bleu_speed.py [--pairs 8000] [--repeats 5]

Pairs: ``--pairs`` demo pairs of 5 references (``synthetic_caption_set(pairs, n_refs=5,
seed=1234)``, eval_speed.py's set) and, where ../shared is beside the repository, Spot-the-Diff's
real captions (each against its pair's other captions, meteor_python.py's segments), all
tokenized as the scorer hands them over (``ptb.tokenize_lines``). For each: CPU seconds
(``time.process_time``) of ``rouge_scores`` and of ``BleuCache`` construction, and of the same
pairs through pycocoevalcap's ``Rouge.calc_score`` and ``cook_refs``/``cook_test`` (once per
distinct pair), alternating, best of ``--repeats``; and whether every value agrees (BLEU: each
pair's ten statistics).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"


def pair_sets(n_pairs: int) -> dict[str, tuple[list[str], list[list[str]]]]:
    from idc_toolkit.demo.captions import synthetic_caption_set

    hyps, refs, _ = synthetic_caption_set(n_pairs, n_refs=5, seed=1234)
    ids = sorted(hyps)
    sets = {f"demo {n_pairs} x 5": ([hyps[i] for i in ids], [refs[i] for i in ids])}
    if (SHARED / "real_annotations").is_dir():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import meteor_python

        real = meteor_python.real_segments(SHARED, per_source=n_pairs)
        if "spot-the-diff" in real:
            sets[f"spot-the-diff {len(real['spot-the-diff'][0])}"] = real["spot-the-diff"]
    return sets


def tokenized(hyps: list[str], refs: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    from idc_toolkit.metrics import ptb

    lines = ptb.tokenize_lines(hyps + [r for rs in refs for r in rs])
    out_hyps, rest = lines[:len(hyps)], iter(lines[len(hyps):])
    return out_hyps, [[next(rest) for _ in rs] for rs in refs]


def pycocoevalcap_rouge(hyps, refs):
    from pycocoevalcap.rouge.rouge import Rouge

    from idc_toolkit.metrics.base import once_per_distinct_pair

    rouge = Rouge()
    return once_per_distinct_pair(hyps, refs, lambda h, r: rouge.calc_score([h], list(r)))


def pycocoevalcap_cooking(hyps, refs):
    from pycocoevalcap.bleu.bleu_scorer import cook_refs, cook_test

    from idc_toolkit.metrics.base import once_per_distinct_pair

    def cook(h, r):  # the ten statistics compute_score reads, "closest" reference length
        ctest = cook_test(h, cook_refs(list(r)))
        reflen = min((abs(l - ctest["testlen"]), l) for l in ctest["reflen"])[1]
        return [ctest["testlen"], reflen, *ctest["guess"], *ctest["correct"]]

    return once_per_distinct_pair(hyps, refs, cook)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from idc_toolkit.metrics.bleu import BleuCache
    from idc_toolkit.metrics.rouge import rouge_scores

    runs = {"ROUGE-L, pycocoevalcap": pycocoevalcap_rouge, "ROUGE-L, toolkit": rouge_scores,
            "BLEU cooking, pycocoevalcap": pycocoevalcap_cooking, "BLEU cooking, toolkit": BleuCache}
    for name, (hyps, refs) in pair_sets(args.pairs).items():
        hyps, refs = tokenized(hyps, refs)
        best, out = {}, {}
        for _ in range(args.repeats):
            for run, fn in runs.items():
                start = time.process_time()
                out[run] = fn(hyps, refs)
                best[run] = min(best.get(run, float("inf")), time.process_time() - start)
        cooked = out["BLEU cooking, pycocoevalcap"]
        cache = out["BLEU cooking, toolkit"]
        same = (out["ROUGE-L, toolkit"].tolist() == out["ROUGE-L, pycocoevalcap"]
                and cache.stats.tolist() == cooked)
        print(f"{name} pairs, CPU seconds, best of {args.repeats} (every value equal: {same})")
        for kind in ("ROUGE-L", "BLEU cooking"):
            old, new = best[f"{kind}, pycocoevalcap"], best[f"{kind}, toolkit"]
            print(f"  {kind:13s} pycocoevalcap {old:6.3f}   toolkit {new:6.3f}   x{old / new:.1f}")


if __name__ == "__main__":
    main()

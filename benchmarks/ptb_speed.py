"""The PTB tokenizer: pycocoevalcap's jar (as the scorer runs it) against the pure-Python port.

    python benchmarks/ptb_speed.py [--pairs 8000] [--repeats 3]

Captions: ``--pairs`` CLEVR-shaped pairs of the demo (5 references + 1 prediction each: 48,000
captions at 8,000 pairs, eval_speed.py's set), and, where ../shared is beside the repository,
48,000 real captions (Spot-the-Diff, its multi-change version, IER, Dubai-CC, Syned). For each: the
jar through ``tokenizer._run_tokenizer`` (one JVM, its start included; C1 alone), and
``ptb.tokenize_lines`` in this process, alternating, best of ``--repeats``; wall seconds, the
JVM's CPU seconds, and whether every line's tokens agree. Then references and predictions as the
scorer tokenizes them (``ptb_tokenize_blocks`` with each scorer, cache off).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"


def real_captions(n: int) -> list[str]:
    root = SHARED / "real_annotations"
    out: list[str] = []
    def load(name):
        return json.loads((root / name).read_text())

    for split, ier in (("train", "train"), ("val", "valid"), ("test", "test")):
        out += [s for item in load(f"spot_the_diff/{split}.json") for s in item["sentences"]]
        out += [s for item in load(f"ier/{ier}.json") for s in item["sents"]]
    out += [c for cs in load("spot_the_diff/card_multi_change/change_multi_captions.json").values() for c in cs]
    for name in ("Train", "Validation", "Test"):
        out += [s["raw"] for im in load(f"dubai_cc/{name}_Dubai_CC.json")["images"] for s in im["sentences"]]
    out += [c for cs in load("syned/gt_augmented_test_clean.json").values() for c in cs]
    return (out * (n // len(out) + 1))[:n]


def timed(fn):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), result


def main() -> None:
    from idc_toolkit.demo.captions import synthetic_caption_set
    from idc_toolkit.metrics import ptb, tokenizer

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=8000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    os.environ["IDC_TOKENIZER_CACHE"] = "0"

    hyps, refs, _ = synthetic_caption_set(args.pairs, n_refs=5, seed=1234)
    sets = {f"demo ({args.pairs} pairs)": [c for k in refs for c in refs[k]] + list(hyps.values())}
    if (SHARED / "real_annotations").is_dir():
        sets["real (../shared)"] = real_captions(len(sets[next(iter(sets))]))

    print("| captions | lines | jar: s (JVM CPU-s) | Python: s | same tokens |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, lines in sets.items():
        jar, py = [], []
        for _ in range(args.repeats):
            jar.append(timed(lambda lines=lines: tokenizer._run_tokenizer(lines, 600)))
            py.append(timed(lambda lines=lines: ptb.tokenize_lines(lines)))
        best_jar, best_py = min(jar), min(py)
        same = all(j[2] == q[2] for j, q in zip(jar, py))
        print(f"| {name} | {len(lines)} | {best_jar[0]:.2f} ({best_jar[1]:.2f}) | {best_py[0]:.2f} | {same} |")

    from idc_toolkit.metrics.implementation import using

    blocks = [[c for k in refs for c in refs[k]], list(hyps.values())]

    def scored(scorer):
        with using(scorer):
            return tokenizer.ptb_tokenize_blocks(blocks)

    jar = min(timed(lambda: scored("java")) for _ in range(args.repeats))
    py = min(timed(lambda: scored("python")) for _ in range(args.repeats))
    print(f"| demo, references + predictions as two blocks | {sum(map(len, blocks))} | {jar[0]:.2f} ({jar[1]:.2f}) "
          f"| {py[0]:.2f} | {jar[2] == py[2]} |")


if __name__ == "__main__":
    main()

"""METEOR's JVM with the JIT's quick compiler alone (C1) against C1 + C2, by run length.

    python benchmarks/meteor_jit.py [--sizes 300 1000 2000 4000 8000]

For each size, a fresh METEOR JVM (the table cut to the references, as a scoring loads it) aligns
that many segments of CLEVR-shaped captions (5 references each), once with each compiler setting,
alternating; printed: wall seconds and the JVM's CPU seconds, and whether the statistics agree.
``meteor.C1_ONLY_BELOW`` is where C1 alone stops being as fast.
"""

from __future__ import annotations

import argparse
import resource
import time


def one_run(hyps, refs, quick: bool) -> tuple[float, float, list[str]]:
    from idc_toolkit.metrics import paraphrase
    from idc_toolkit.metrics.meteor import C1_ONLY_BELOW, MeteorProcess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with MeteorProcess(coverage=paraphrase.coverage_needed(refs), segments=1 if quick else C1_ONLY_BELOW) as jvm:
        stats = jvm.statistics(hyps, refs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), stats


def main() -> None:
    from idc_toolkit.demo.captions import synthetic_caption_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 2000, 4000, 8000])
    args = parser.parse_args()
    print("| segments | C1 + C2: s (CPU-s) | C1 alone: s (CPU-s) | same statistics |")
    print("| ---: | ---: | ---: | --- |")
    for n in args.sizes:
        hyps, refs, _ = synthetic_caption_set(n, n_refs=5, seed=1)
        ids = list(refs)
        h, r = [hyps[i] for i in ids], [refs[i] for i in ids]
        full_wall, full_cpu, full_stats = one_run(h, r, quick=False)
        quick_wall, quick_cpu, quick_stats = one_run(h, r, quick=True)
        print(f"| {n:,} | {full_wall:.2f} ({full_cpu:.2f}) | {quick_wall:.2f} ({quick_cpu:.2f}) | {full_stats == quick_stats} |")


if __name__ == "__main__":
    main()

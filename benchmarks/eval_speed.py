"""Scoring speed: one pass with the full per-category breakdown vs what peers do.

Builds 8,000 pairs x 5 references in 6 categories (CLEVR-Change shaped: half distractor) and
prints, in one run:
  (a) one naive pycocoevalcap run over everything (tokenizer, BLEU, METEOR, ROUGE-L, CIDEr);
  (b) the naive per-group loop of the RobustChangeCaptioning family: a fresh pycocoevalcap
      evaluation for overall, each category and change_only;
  (c) idc-toolkit's score_groups with the same full breakdown (a fresh METEOR JVM, a cold
      statistics cache), and (c') the same again with the caches (c) filled;
  (d) ``evaluate`` end to end, as ``idc-eval --predictions`` runs it (files in, metrics.json,
      tables, per-pair CSV and chart out), with the viewpoint-IoU groups too, as a fresh
      command: no warm METEOR JVM, a cold statistics cache;
  (e) the same again in the same process: warm JVM and cache (a second protocol, ``compare``);
  (f) the naive run as a fresh process, and (g) ``idc-eval --predictions`` as the fresh command a
      user types (interpreter start, imports, cold tokenizer and METEOR caches) with the Python
      scorer (the default: no JVM) and (g') with ``--scorer java`` (pycocoevalcap's jars), run as
      ``--fresh-repeats`` alternating triples with their median ratios;
  the largest absolute difference between (b) and (c) over every group and metric, this
  process's peak resident memory, and each (g)'s, alone and with its helper processes (sampled
  from /proc by this process). ``--ours-only`` skips every naive run (for ``--pairs 80000``).
  METEOR's JVMs (``--scorer java``): ``IDC_METEOR_WORKERS`` (default one per 4 cores).

``--bootstrap N``: (g) and (g') with ``--bootstrap N``, 95% intervals for every group (their
peak memory is what the resamples add).

``--distinct-captions``: every caption its own text (COCO's and Spot-the-Diff's references are;
CLEVR-Change's come from templates), so nothing repeats for the caches to share.

``--long-outliers``: one reference 53 words long (Spot-the-Diff's longest) and one prediction of
100 words (a model repeating itself up to its token limit), as real sets have; the memory a
scoring holds must not follow the longest caption.

``--levir-no-change``: the no-change half shaped as LEVIR-CC's is (every no-change pair has the
same five references, and a trained model answers 70% of them with one of those sentences), so
many METEOR segments repeat; the toolkit aligns a repeated segment once, pycocoevalcap every
time. The number of distinct segments is printed either way.

    python benchmarks/eval_speed.py [--pairs 8000] [--skip-naive-groups] [--levir-no-change | --distinct-captions]
        [--long-outliers] [--fresh-repeats 3] [--ours-only] [--bootstrap N]
"""

from __future__ import annotations

import argparse
import time


#: LEVIR-CC's five no-change references, the same for every no-change pair (the release's
#: token files; ../shared/real_annotations/levir_cc)
LEVIR_NO_CHANGE = ["there is no difference", "the two scenes seem identical", "the scene is the same as before",
                   "no change has occurred", "almost nothing has changed"]


def levir_shaped(hyps: dict, refs: dict, cats: dict, seed: int = 0) -> None:
    """The no-change pairs given LEVIR-CC's shared references, 70% of their predictions one of them."""
    import random

    rng = random.Random(seed)
    for pid, cat in cats.items():
        if cat == "distractor":
            refs[pid] = list(LEVIR_NO_CHANGE)
            if rng.random() < 0.7:
                hyps[pid] = rng.choice(LEVIR_NO_CHANGE)


def distinct_shaped(hyps: dict, refs: dict, seed: int = 0, vocabulary: int = 5000) -> None:
    """Every caption made (nearly always) its own text, as COCO's or Spot-the-Diff's are: two words of
    a ``vocabulary``-word list appended to each."""
    import random

    rng = random.Random(seed)

    def own(caption: str) -> str:
        return f"{caption} by the w{rng.randrange(vocabulary)} w{rng.randrange(vocabulary)}"

    for pid in refs:
        refs[pid] = [own(c) for c in refs[pid]]
        hyps[pid] = own(hyps[pid])


def long_outliers(hyps: dict, refs: dict) -> None:
    """The first pair's first reference made 53 words long, the second pair's prediction 100."""
    first, second = list(refs)[:2]
    words = " ".join(f"{refs[first][0]} and then the w{k} moved" for k in range(6)).split()
    refs[first][0] = " ".join(words[:53])
    hyps[second] = " ".join(f"the object w{k} has moved" for k in range(20))


def naive_evaluation(gts_raw: dict, res_raw: dict) -> dict:
    """COCOEvalCap.evaluate() without SPICE, exactly as peers call it (fresh scorers)."""
    from idc_toolkit.metrics.reference import pycocoevalcap_scores

    return pycocoevalcap_scores(gts_raw, res_raw)[0]


NAIVE_SCRIPT = """
import json, sys
from idc_toolkit.metrics.reference import pycocoevalcap_scores
refs = {}
for a in json.load(open(sys.argv[1]))["annotations"]:
    refs.setdefault(a["image_id"], []).append(a["caption"])
hyps = json.load(open(sys.argv[2]))
print(pycocoevalcap_scores(refs, hyps)[0])
"""


#: the (own, with its helper processes) peak memory of each fresh Python-scorer idc-eval, in MiB
FRESH_MEMORY: list[tuple[float, float]] = []


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []


def run_measured(cmd: list[str], env: dict) -> tuple[float, int, int]:
    """``cmd`` as its own process; its seconds, and its peak resident memory alone and with the
    processes it starts (KiB), sampled from /proc every 20 ms by this process, not inside it
    (ru_maxrss carries a parent's over fork, and a sampler inside would share its interpreter)."""
    import subprocess
    import threading

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = {"own": 0, "all": 0}

    def sample() -> None:
        while proc.poll() is None:
            own = _rss_kib(proc.pid)
            total = own + sum(_rss_kib(c) for c in _children(proc.pid))
            peak["own"], peak["all"] = max(peak["own"], own), max(peak["all"], total)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    took = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed: {err.decode(errors='replace')[-2000:]}")
    return took, peak["own"], peak["all"]


def _fresh_processes(tmp_path, metrics, repeats: int, naive_too: bool = True, bootstrap: int = 0) -> list[tuple[float, float, float]]:
    """(f), (g) and (g'), ``repeats`` times, alternately: each a new process, interpreter start and
    imports included, each idc-eval with cold tokenizer and METEOR caches of its own (and
    ``--bootstrap`` resamples where ``bootstrap``). Alternating puts each triple on the same moment
    of a machine whose speed drifts."""
    import os
    import shutil
    import subprocess
    import sys

    runs = []
    for k in range(repeats):
        naive = float("nan")
        if naive_too:
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", NAIVE_SCRIPT, str(tmp_path / "refs.json"), str(tmp_path / "preds.json")],
                           check=True, capture_output=True)
            naive = time.perf_counter() - t
        took = []
        for scorer in ("python", "java"):
            env = {**os.environ, "IDC_METEOR_CACHE": str(tmp_path / f"fresh_meteor_{scorer}_{k}.sqlite"),
                   "IDC_TOKENIZER_CACHE": str(tmp_path / f"fresh_tokens_{scorer}_{k}.sqlite")}
            shutil.rmtree(tmp_path / "out_fresh", ignore_errors=True)
            seconds, own, together = run_measured(
                [sys.executable, "-m", "idc_toolkit.cli.eval", "--predictions", str(tmp_path / "preds.json"),
                 "--references", str(tmp_path / "refs.json"), "--categories", str(tmp_path / "cats.json"),
                 "--iou-file", str(tmp_path / "iou.json"), "--metrics", *metrics, "--layout", "all",
                 "--scorer", scorer, "--bootstrap", str(bootstrap), "--out", str(tmp_path / "out_fresh")], env)
            took.append(seconds)
            if scorer == "python":
                FRESH_MEMORY.append((own / 1024, together / 1024))
        runs.append((naive, *took))
    return runs


def main() -> None:
    import contextlib
    import io

    from idc_toolkit.demo.captions import synthetic_caption_set
    from idc_toolkit.metrics import score_groups
    from idc_toolkit.metrics.meteor_stats import score_line

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=8000)
    p.add_argument("--skip-naive-groups", action="store_true", help="skip (b), the slowest part")
    p.add_argument("--levir-no-change", action="store_true", help="no-change pairs shaped as LEVIR-CC's (shared references)")
    p.add_argument("--fresh-repeats", type=int, default=3, help="alternating (f) / (g) / (g') triples (the machine's speed drifts)")
    p.add_argument("--ours-only", action="store_true", help="no naive run: (c) to (e) and (g), (g') only, and the peak memory")
    p.add_argument("--distinct-captions", action="store_true", help="every caption its own text (COCO-, Spot-the-Diff-shaped)")
    p.add_argument("--long-outliers", action="store_true", help="one 53-word reference and one 100-word prediction")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="(g) and (g') with --bootstrap N (intervals for every group)")
    args = p.parse_args()

    hyps, refs, cats = synthetic_caption_set(args.pairs, n_refs=5, seed=1234)
    if args.levir_no_change:
        levir_shaped(hyps, refs, cats)
    if args.distinct_captions:
        distinct_shaped(hyps, refs)
    if args.long_outliers:
        long_outliers(hyps, refs)
    groups: dict[str, list[str]] = {}
    for pid, c in cats.items():
        groups.setdefault(c, []).append(pid)
    groups["change_only"] = [pid for pid, c in cats.items() if c != "distractor"]
    metrics = ["BLEU", "METEOR", "ROUGE_L", "CIDEr"]
    distinct = len({score_line(hyps[i], refs[i]) for i in hyps})
    texts = len({*hyps.values(), *(c for rs in refs.values() for c in rs)})
    print(f"{args.pairs} pairs x 5 references, groups: overall + {len(groups)} ({', '.join(groups)}); "
          f"{distinct} distinct (prediction, references) pairs, {texts} distinct captions"
          + (" (no-change pairs shaped as LEVIR-CC's)" if args.levir_no_change else "")
          + (f"; longest reference {max(len(c.split()) for rs in refs.values() for c in rs)} words, longest prediction "
             f"{max(len(h.split()) for h in hyps.values())}" if args.long_outliers else ""))

    naive_overall, time_a = {}, float("nan")
    if not args.ours_only:
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            naive_overall = naive_evaluation(refs, hyps)
        time_a = time.perf_counter() - t
        print(f"(a) naive pycocoevalcap, overall only:          {time_a:7.1f} s")

    naive_groups = {"overall": naive_overall} if naive_overall else {}
    time_b = None
    if not args.skip_naive_groups and not args.ours_only:
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            naive_groups["overall"] = naive_evaluation(refs, hyps)
            for g, ids in groups.items():
                naive_groups[g] = naive_evaluation({i: refs[i] for i in ids}, {i: hyps[i] for i in ids})
        time_b = time.perf_counter() - t
        print(f"(b) naive per-group loop ({len(naive_groups)} evaluations):       {time_b:7.1f} s")

    import os
    import tempfile

    with tempfile.TemporaryDirectory() as cold:  # a cold METEOR statistics cache: every segment aligned
        os.environ["IDC_METEOR_CACHE"] = os.path.join(cold, "meteor.sqlite")
        os.environ["IDC_TOKENIZER_CACHE"] = os.path.join(cold, "tokens.sqlite")
        t = time.perf_counter()
        ours = score_groups(hyps, refs, groups, metrics=metrics)
        time_c = time.perf_counter() - t
        t = time.perf_counter()
        score_groups(hyps, refs, groups, metrics=metrics)
        time_c2 = time.perf_counter() - t
    print(f"(c) idc-toolkit, full breakdown in one pass:    {time_c:7.1f} s   ({time_c / time_a:.2f} x (a))")
    print(f"(c') the same again, caches warm (rescoring, no output files): {time_c2:7.2f} s   ({time_c2 / time_a:.2f} x (a))")

    import json
    import random
    from pathlib import Path

    from idc_toolkit.evaluators.scoring import evaluate
    from idc_toolkit.metrics.meteor import close_idle_processes, meteor_workers

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["IDC_METEOR_CACHE"] = str(tmp_path / "meteor.sqlite")
        os.environ["IDC_TOKENIZER_CACHE"] = str(tmp_path / "tokens.sqlite")
        ids = list(refs)
        (tmp_path / "refs.json").write_text(json.dumps({"annotations": [{"image_id": i, "caption": c} for i in ids for c in refs[i]]}))
        (tmp_path / "preds.json").write_text(json.dumps(hyps))
        (tmp_path / "cats.json").write_text(json.dumps(cats))
        rng = random.Random(0)
        (tmp_path / "iou.json").write_text(json.dumps({i: rng.random() for i in ids}))
        options = dict(references=str(tmp_path / "refs.json"), categories=str(tmp_path / "cats.json"),
                       iou_file=str(tmp_path / "iou.json"), metrics=metrics, layouts=["all"])
        times = []
        close_idle_processes()  # (d) starts as a fresh command would: no warm JVM from (c)
        for run in ("cold", "warm"):
            t = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()):
                ev = evaluate(str(tmp_path / "preds.json"), out=tmp_path / f"out_{run}", **options)
            times.append(time.perf_counter() - t)
        n_groups = len(ev.result.groups)
        fresh = _fresh_processes(tmp_path, metrics, args.fresh_repeats, naive_too=not args.ours_only, bootstrap=args.bootstrap)
    print(f"(d) idc-eval end to end, {n_groups} groups, caches cold: {times[0]:7.1f} s   ({times[0] / time_a:.2f} x (a))")
    print(f"(e) the same again (rescoring the same references: compare, leaderboard, each validation): "
          f"{times[1]:7.1f} s   ({times[1] / time_a:.2f} x (a))")
    import resource
    import statistics

    for naive, python, java in fresh:
        print(f"(f) naive pycocoevalcap as a fresh process (files in, overall only):  {naive:7.1f} s")
        print(f"(g) idc-eval --predictions as the fresh command a user types ({n_groups} groups, every output, cold caches"
              + (f", --bootstrap {args.bootstrap}" if args.bootstrap else "") + "): "
              f"{python:7.1f} s   ({python / naive:.2f} x (f); {python / java:.2f} x (g'))")
        print(f"(g') the same with --scorer java ({meteor_workers()} METEOR JVM(s) on {os.cpu_count()} cores): {java:7.1f} s")
    if len(fresh) > 1:
        for what, k in (("(g) / (f)", 1), ("(g) / (g')", 2)):
            ratios = [run[1] / run[0 if k == 1 else 2] for run in fresh]
            print(f"{what} over {len(fresh)} alternating runs: median {statistics.median(ratios):.2f}, "
                  f"range {min(ratios):.2f}-{max(ratios):.2f}")

    worst = 0.0
    for g, naive in naive_groups.items():
        for m, v in naive.items():
            worst = max(worst, abs(ours.groups[g].scores[m] - v))
    if naive_groups:
        print(f"largest |(b) - (c)| over {len(naive_groups)} groups x {len(naive_overall)} metrics: {worst:.3g}")
    if time_b is not None:
        print(f"speed-up of (c) over (b): {time_b / time_c:.1f} x")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process ((c) to (e)): {peak:.0f} MiB at {args.pairs:,} pairs")
    for own, together in FRESH_MEMORY:
        print(f"(g) peak resident memory: {own:.0f} MiB, {together:.0f} MiB with its helper processes, at {args.pairs:,} pairs")


if __name__ == "__main__":
    main()

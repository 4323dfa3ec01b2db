"""The scorer's numbers carry the same bits whichever vector path the CPU gives numpy and OpenBLAS.

The same captions are scored in two fresh processes: one as this CPU runs numpy (its dispatched
AVX2 / AVX-512 loops, where it has them) and BLAS on every core, and one as a CPU without them
would (:mod:`vector_paths`). Each tokenizes, aligns and scores from the captions (caches off):
every group score, per-pair score and bootstrap bound must be equal bit for bit.

Where the order of floating-point steps could follow the machine, and why it does not:

* sums of whole counts (BLEU's n-gram counts, METEOR's statistics, a resample's ``weights @``
  them): exact below 2**53 in any order, BLAS kernel and thread count;
* ``+ - * /`` and ``sqrt`` elementwise: IEEE-exact, so every SIMD width gives the scalar bits;
* METEOR's ``Math.pow``: :mod:`~idc_toolkit.metrics.java_pow`, integer and IEEE steps only;
* sums of float scores (a group's mean, a resample's weighted mean of ROUGE-L, CIDEr-D, SPICE
  or a judge column): numpy's pairwise sum along a contiguous row, whose order is fixed
  (:func:`~idc_toolkit.metrics.base.weighted_sums`), never a BLAS product, whose order is not.

Where the bits follow the machine as pycocoevalcap's own do, so that the toolkit stays equal to
it on each machine:

* CIDEr-D's ``log`` of its document frequencies and group size is numpy's, as pycocoevalcap's
  is; numpy's AVX-512 loop (numpy 1.22 on) rounds some whole numbers to the neighbouring double
  (4 of the first 200,000 in numpy 2.4, a fifth of them in 1.24), and pycocoevalcap's CIDEr-D
  moves with it. Where the two paths' logs of the whole numbers met here differ, CIDEr-D's
  numbers are left out of the comparison, with a warning; CI holds them equal to pycocoevalcap's
  on the baseline path too (``pytest -m scale`` with :mod:`vector_paths`' environment);
* BLEU's and CIDEr-D's ``exp`` and ``pow`` are the C library's, called as pycocoevalcap calls
  them; glibc picks an FMA variant or a plain one by CPU, and they round about 5 inputs in
  10,000 differently, for pycocoevalcap as for the toolkit (this test varies numpy's paths only;
  CI's run against the references varies glibc's too).
"""

import json
import os
import subprocess
import sys
import warnings

import pytest

from conftest import SHARED
from vector_paths import baseline_environment

#: scores a categorized generated set and, where ../shared has them, real published predictions;
#: prints every number as hex
SCORE = r"""
import json, os, sys

import numpy as np

from idc_toolkit.demo.captions import synthetic_caption_set
from idc_toolkit.metrics import score_groups
from idc_toolkit.metrics.judge_columns import JudgeScores

synth_h, synth_r, cats = synthetic_caption_set(9000, seed=5)  # past one block of the summing (ngrams.CHUNK)
synth_r["000004"] = []  # a pair the caption metrics leave out (scored on the others: OnSubset)
groups = {}
for pid, cat in cats.items():
    groups.setdefault(cat, []).append(pid)
judged = np.where(np.arange(9000) % 7 == 0, np.nan, np.random.default_rng(0).random(9000))  # a judge's column, some undefined
sets = [("generated", synth_h, synth_r, groups, [JudgeScores({"Judge_recall": judged})])]
folder = sys.argv[1]
if os.path.isdir(folder):
    gt = json.load(open(folder + "/ddla_rerun_gtfile.json"))
    refs = {}
    for a in gt["annotations"]:
        refs.setdefault(str(a["image_id"]), []).append(a["caption"])
    hyps = {str(p["image_id"]): p["caption"] for p in json.load(open(folder + "/ddla_rerun_predfile.json"))}
    sets.append(("ddla", hyps, refs, None, []))
hexed = lambda v: None if v is None else float(v).hex()
out = {"logs": np.log(np.arange(1.0, 9001.0)).tobytes().hex()}  # every group size and document frequency here
for name, h, r, g, extra in sets:
    result = score_groups(h, r, g, metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"], bootstrap=40, seed=1, extra=extra)
    out[name] = {
        "groups": {k: {m: hexed(v) for m, v in s.scores.items()} for k, s in result.groups.items()},
        "per_pair": {m: [hexed(v) for v in values] for m, values in result.per_pair.items()},
        "ci": {k: {m: [hexed(v) for v in bounds] for m, bounds in c.items()} for k, c in result.ci.items()},
        "scorer": result.scorer,
    }
print(json.dumps(out))
"""


def _scores(**env) -> dict:
    environment = {**os.environ, "IDC_METEOR_CACHE": "0", "IDC_TOKENIZER_CACHE": "0", **env}
    done = subprocess.run([sys.executable, "-c", SCORE, str(SHARED / "paper_predictions/spot-the-diff")],
                          capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _numbers(tree, where=()):
    """Every number of the scores (hex) with its place: (set, part, group or metric, ...)."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _numbers(value, (*where, key))
    elif isinstance(tree, list):
        for k, value in enumerate(tree):
            yield from _numbers(value, (*where, k))
    else:
        yield where, tree


def test_scores_are_the_same_bits_on_the_baseline_vector_path():
    baseline = baseline_environment()
    if not baseline:
        pytest.skip("this CPU runs numpy's baseline loops only: there is no second vector path to compare")
    check = "from vector_paths import dispatched_vector_paths as d; print(len(d()))"
    off = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         env={**os.environ, **baseline, "PYTHONPATH": os.path.dirname(__file__)})
    assert off.stdout.strip() == "0", f"numpy kept a vector path on: {off.stdout}{off.stderr[-500:]}"
    cores = str(os.cpu_count() or 1)
    native = _scores(OPENBLAS_NUM_THREADS=cores, OMP_NUM_THREADS=cores)
    plain = _scores(**baseline)
    assert native["generated"]["scorer"] == "python"
    assert len(native["generated"]["per_pair"]["CIDEr"]) == 9000 and len(native["generated"]["ci"]) == 7
    assert "Judge_recall" in native["generated"]["ci"]["overall"]
    numpys_logs_differ = native.pop("logs") != plain.pop("logs")
    mine, theirs = dict(_numbers(native)), dict(_numbers(plain))
    assert mine.keys() == theirs.keys()
    differ = [(where, mine[where], theirs[where]) for where in mine if mine[where] != theirs[where]]
    if numpys_logs_differ:
        cider = [d for d in differ if "CIDEr" in d[0]]
        differ = [d for d in differ if "CIDEr" not in d[0]]
        warnings.warn(f"this numpy's log rounds whole numbers differently on its two vector paths: {len(cider)} "
                      "CIDEr-D numbers differ between them, as pycocoevalcap's CIDEr-D does; they are not compared")
    assert not differ, f"{len(differ)} of {len(mine)} numbers differ between the vector paths: {differ[:5]}"

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
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import SHARED
from vector_paths import baseline_environment

#: scores a categorized generated set and, where ../shared has them, real published predictions;
#: prints every number as hex
SCORE = r"""
import json, os, sys
from idc_toolkit.demo.captions import synthetic_caption_set
from idc_toolkit.metrics import score_groups

import numpy as np
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
out = {}
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
    check = ("from vector_paths import dispatched_vector_paths as d; print(len(d()))")
    off = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         env={**os.environ, **baseline, "PYTHONPATH": os.path.dirname(__file__)})
    assert off.stdout.strip() == "0", f"numpy kept a vector path on: {off.stdout}{off.stderr[-500:]}"
    cores = str(os.cpu_count() or 1)
    native = _scores(OPENBLAS_NUM_THREADS=cores, OMP_NUM_THREADS=cores)
    plain = _scores(**baseline)
    assert native["generated"]["scorer"] == "python"
    assert len(native["generated"]["per_pair"]["CIDEr"]) == 9000 and len(native["generated"]["ci"]) == 7
    assert "Judge_recall" in native["generated"]["ci"]["overall"]
    mine, theirs = dict(_numbers(native)), dict(_numbers(plain))
    assert mine.keys() == theirs.keys()
    differ = [(where, mine[where], theirs[where]) for where in mine if mine[where] != theirs[where]]
    assert not differ, f"{len(differ)} of {len(mine)} numbers differ between the vector paths: {differ[:5]}"

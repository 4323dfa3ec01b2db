"""``idc_toolkit.metrics.coco``: pycocoevalcap's interface on the Java-free scorer, compared with
pycocoevalcap's own classes (which start their jars) on the same inputs: the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from idc_toolkit.metrics import coco


from test_metrics_exact import WRITTEN, _ddla
from idc_toolkit.demo.captions import synthetic_caption_set

pytestmark = pytest.mark.java


class Coco:
    """What COCOEvalCap reads of a pycocotools COCO object."""

    def __init__(self, anns: dict):
        self.imgToAnns = {k: [{"image_id": k, "caption": c} for c in v] for k, v in anns.items()}

    def getImgIds(self):  # noqa: N802
        return list(self.imgToAnns)


def _captions(shared):
    hyps, refs = _ddla(shared)
    ids = sorted(hyps)[:300]
    gts = {i: refs[i] for i in ids}
    res = {i: [hyps[i]] for i in ids}
    synth_h, synth_r, _ = synthetic_caption_set(80, seed=11)
    for k, pid in enumerate(synth_r):
        gts[f"s{pid}"] = list(synth_r[pid]) + [WRITTEN[k % len(WRITTEN)]]
        res[f"s{pid}"] = [synth_h[pid] if k % 3 else WRITTEN[(k + 1) % len(WRITTEN)]]
    res[f"s{next(iter(synth_r))}"] = [""]  # an empty prediction
    return gts, res


def test_cocoevalcap_equals_pycocoevalcaps(shared, monkeypatch, capsys):
    import pycocoevalcap.eval as theirs_mod

    class NoSpice:  # pycocoevalcap's SPICE downloads CoreNLP 3.6.0 at first use: left out of both
        def compute_score(self, gts, res):
            return 0.0, [0.0] * len(gts)

        def method(self):
            return "SPICE"

    monkeypatch.setattr(theirs_mod, "Spice", NoSpice)
    monkeypatch.delenv("IDC_SPICE_JARS", raising=False)
    gts, res = _captions(shared)
    theirs = theirs_mod.COCOEvalCap(Coco(gts), Coco(res))
    theirs.evaluate()
    ours = coco.COCOEvalCap(Coco(gts), Coco(res))
    ours.evaluate()
    printed = capsys.readouterr().out
    assert "SPICE unavailable" in printed  # said in one line; the rest scored
    assert {k: v for k, v in theirs.eval.items() if k != "SPICE"} == ours.eval
    for img, row in theirs.imgToEval.items():
        assert {k: v for k, v in row.items() if k != "SPICE"} == ours.imgToEval[img], img
    assert [e["image_id"] for e in ours.evalImgs] == [e["image_id"] for e in theirs.evalImgs]


def test_each_scorer_equals_pycocoevalcaps(shared):
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    gts, res = _captions(shared)
    raw_gts = {k: [{"caption": c} for c in v] for k, v in gts.items()}
    raw_res = {k: [{"caption": c} for c in v] for k, v in res.items()}
    for raw in (raw_gts, raw_res, {"a": [{"caption": "The man in fig."}, {"caption": "nice :)"}]}):
        assert coco.PTBTokenizer().tokenize(raw) == PTBTokenizer().tokenize(raw)
    tok_gts, tok_res = PTBTokenizer().tokenize(raw_gts), PTBTokenizer().tokenize(raw_res)
    meteor = Meteor()
    try:
        theirs = meteor.compute_score(tok_gts, tok_res)
    finally:
        with meteor.lock:
            meteor.meteor_p.stdin.close()
            meteor.meteor_p.kill()
            meteor.meteor_p.wait()
    ours = coco.Meteor().compute_score(tok_gts, tok_res)
    assert ours[0] == theirs[0] and np.array_equal(ours[1], theirs[1])

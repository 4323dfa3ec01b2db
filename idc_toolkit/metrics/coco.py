"""pycocoevalcap's interface on the toolkit's Java-free scorer: a captioning project switches by
changing one import, and gets the same numbers with no JVM.

    # from pycocoevalcap.eval import COCOEvalCap
    from idc_toolkit.metrics.coco import COCOEvalCap

    coco_eval = COCOEvalCap(coco, coco_result)   # pycocotools COCO objects, as before
    coco_eval.evaluate()
    coco_eval.eval["CIDEr"], coco_eval.imgToEval[image_id]["METEOR"]

Each scorer keeps pycocoevalcap's ``compute_score(gts, res)``: :class:`PTBTokenizer` and
:class:`Meteor` are the toolkit's Python equal of the jars (:mod:`.ptb`, :mod:`.meteor_align`,
:mod:`.meteor_stats`); BLEU, ROUGE-L and CIDEr are pycocoevalcap's own Python classes. SPICE
still needs Java and Stanford CoreNLP 3.6.0's jars: :class:`COCOEvalCap` scores it where they are
configured (``IDC_SPICE_JARS``, a Java runtime) and otherwise says in one line why it does not.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge

from .meteor_stats import aggregate_statistics, meteor_score

__all__ = ["COCOEvalCap", "PTBTokenizer", "Bleu", "Meteor", "Rouge", "Cider", "Spice"]


class PTBTokenizer:
    """``pycocoevalcap.tokenizer.ptbtokenizer.PTBTokenizer`` without Java: one call is one file."""

    def tokenize(self, captions_for_image: dict) -> dict:
        from .ptb import PUNCTUATIONS, jar_output

        image_id = [k for k, v in captions_for_image.items() for _ in range(len(v))]
        sentences = "\n".join(c["caption"].replace("\n", " ") for v in captions_for_image.values() for c in v)
        tokenized: dict[Any, list[str]] = {}
        for k, line in zip(image_id, jar_output(sentences).split("\n")):  # pycocoevalcap's pairing, shifts included
            tokenized.setdefault(k, []).append(" ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS))
        return tokenized


class Meteor:
    """``pycocoevalcap.meteor.meteor.Meteor`` without Java: METEOR 1.5's ``-l en -norm``."""

    def compute_score(self, gts: dict, res: dict) -> tuple[float, list[float]]:
        from .meteor_align import statistics

        assert gts.keys() == res.keys()
        ids = list(gts.keys())
        for i in ids:
            assert len(res[i]) == 1
        lines = statistics([res[i][0] for i in ids], [gts[i] for i in ids])
        stats = np.array([[float(x) for x in line.split()] for line in lines]).reshape(len(ids), -1)
        segments = meteor_score(stats).tolist() if ids else []
        corpus = float(meteor_score(aggregate_statistics(stats))[0]) if ids else 0.0
        return corpus, segments

    def method(self) -> str:
        return "METEOR"


class Spice:
    """SPICE 1.0 (Java, Stanford CoreNLP 3.6.0) through the toolkit's runner: its jars from
    ``IDC_SPICE_JARS``, a Java runtime from PATH or the ``java`` extra."""

    def __init__(self, spice_jars: Optional[str] = None):
        self.spice_jars = spice_jars

    def compute_score(self, gts: dict, res: dict) -> tuple[float, list[dict]]:
        from ..errors import EvaluationError
        from .spice import run_spice, spice_jar_dir

        ids = list(gts.keys())
        outcome = run_spice([res[i][0] for i in ids], [gts[i] for i in ids], spice_jar_dir(self.spice_jars))
        if outcome.scores is None:
            raise EvaluationError(outcome.status)
        scores = outcome.scores
        return float(np.nanmean(scores)), [{"All": {"f": float(s)}} for s in scores]

    def method(self) -> str:
        return "SPICE"


class COCOEvalCap:
    """``pycocoevalcap.eval.COCOEvalCap``: the same attributes, the same printed lines, the same numbers."""

    def __init__(self, coco: Any, cocoRes: Any):  # noqa: N803 (pycocoevalcap's names)
        self.evalImgs: list[dict] = []
        self.eval: dict[str, float] = {}
        self.imgToEval: dict[Any, dict] = {}
        self.coco, self.cocoRes = coco, cocoRes
        self.params = {"image_id": coco.getImgIds()}

    def evaluate(self) -> None:
        from .spice import spice_jar_dir, spice_unavailable_reason

        gts = {i: self.coco.imgToAnns[i] for i in self.params["image_id"]}
        res = {i: self.cocoRes.imgToAnns[i] for i in self.params["image_id"]}
        print("tokenization...")
        tokenizer = PTBTokenizer()
        gts, res = tokenizer.tokenize(gts), tokenizer.tokenize(res)
        print("setting up scorers...")
        scorers: list[tuple[Any, Any]] = [(Bleu(4), ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]), (Meteor(), "METEOR"),
                                          (Rouge(), "ROUGE_L"), (Cider(), "CIDEr")]
        why_not = spice_unavailable_reason(spice_jar_dir())
        if why_not is None:
            scorers.append((Spice(), "SPICE"))
        else:
            print(f"{why_not} (the other metrics are unaffected)")
        for scorer, method in scorers:
            print(f"computing {scorer.method()} score...")
            score, scores = scorer.compute_score(gts, res)
            if isinstance(method, list):
                for sc, scs, m in zip(score, scores, method):
                    self.setEval(sc, m)
                    self.setImgToEvalImgs(scs, gts.keys(), m)
                    print("%s: %0.3f" % (m, sc))
            else:
                self.setEval(score, method)
                self.setImgToEvalImgs(scores, gts.keys(), method)
                print("%s: %0.3f" % (method, score))
        self.setEvalImgs()

    def setEval(self, score: float, method: str) -> None:  # noqa: N802
        self.eval[method] = score

    def setImgToEvalImgs(self, scores, imgIds, method: str) -> None:  # noqa: N802, N803
        for img_id, score in zip(imgIds, scores):
            self.imgToEval.setdefault(img_id, {"image_id": img_id})[method] = score

    def setEvalImgs(self) -> None:  # noqa: N802
        self.evalImgs = list(self.imgToEval.values())

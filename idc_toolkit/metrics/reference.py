"""The unmodified coco-caption pipeline, as peers run it once per group.

This is the yardstick the tests and ``benchmarks/eval_speed.py`` compare :func:`score_groups`
against: pycocoevalcap's PTBTokenizer, Bleu(4), Meteor, Rouge and Cider called exactly as
``COCOEvalCap.evaluate`` calls them (SPICE left out), nothing restructured.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence


def pycocoevalcap_scores(
    references: Mapping[str, Sequence[str]], hypotheses: Mapping[str, str], meteor: Optional[Any] = None
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Corpus scores and per-pair scores of one unmodified pycocoevalcap evaluation.

    ``meteor`` may be a ``pycocoevalcap.meteor.meteor.Meteor`` to reuse (its ``compute_score``
    is independent per call); by default a fresh one is started and ended, as peers do.
    """
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    tok = PTBTokenizer()
    gts = tok.tokenize({k: [{"caption": c} for c in v] for k, v in references.items()})
    res = tok.tokenize({k: [{"caption": v}] for k, v in hypotheses.items()})
    scores: dict[str, float] = {}
    bleu, bleu_pairs = Bleu(4).compute_score(gts, res, verbose=0)
    scores.update({f"Bleu_{k + 1}": bleu[k] for k in range(4)})
    own_meteor = meteor is None
    meteor = meteor or Meteor()
    try:
        scores["METEOR"], meteor_pairs = meteor.compute_score(gts, res)
    finally:
        if own_meteor:
            end_meteor(meteor)
    scores["ROUGE_L"], rouge_pairs = Rouge().compute_score(gts, res)
    scores["CIDEr"], cider_pairs = Cider().compute_score(gts, res)
    per_pair = {f"Bleu_{k + 1}": list(bleu_pairs[k]) for k in range(4)}
    per_pair.update({"METEOR": list(meteor_pairs), "ROUGE_L": list(rouge_pairs), "CIDEr": list(cider_pairs)})
    return scores, per_pair


def end_meteor(meteor: Any) -> None:
    """End a pycocoevalcap ``Meteor``'s JVM and close its pipes (``Meteor.__del__`` can
    deadlock after an error, and a killed process's pipes stay open until collected)."""
    proc = meteor.meteor_p
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()

"""The judge's options: one dataclass, the same fields on ``idc-eval --predictions``,
``idc-eval --model`` and ``idc-eval compare`` and in the evaluation's record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import checks
from ..options import option

DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass
class JudgeArgs:
    """Which model judges the captions (``judge=None``: no judge columns) and how it runs. A run
    records the judge as it resolves it (:func:`~idc_toolkit.judge.run.judge_fields`), not these fields."""

    judge: Optional[str] = option(None, "a causal or chat LM (Hub name or folder) that judges each caption against the "
                                        "pair's annotated differences: adds the Judge_* columns (docs/scoring.md)",
                                  metavar="MODEL", record=False)
    judge_revision: Optional[str] = option(None, "with --judge: a Hub revision of the judge", record=False)
    judge_dtype: str = option("auto", "with --judge: weights' dtype (auto: bfloat16 on CUDA, float32 on CPU)",
                              choices=DTYPES, record=False)
    judge_device: str = option("auto", "with --judge: auto, cpu, cuda, cuda:N", record=False)
    judge_batch_size: int = option(16, "with --judge: questions per forward pass (or concurrent endpoint requests)",
                                   check=checks.positive_int, metavar="N", record=False)
    judge_endpoint: Optional[str] = option(None, "with --judge: an OpenAI-compatible base URL (…/v1) serving the "
                                                 "judge; nothing is loaded here (key: IDC_JUDGE_API_KEY)", metavar="URL",
                                                 record=False)
    judge_max_tokens: int = option(16, "with --judge-endpoint: the most tokens of a reply (a reasoning judge needs "
                                       "room for its reasoning before the answer)", check=checks.positive_int, metavar="N",
                                       record=False)
    judge_retries: int = option(4, "with --judge-endpoint: tries again after a connection error, a cut reply, 429 "
                                   "or 5xx, with doubling waits", check=checks.non_negative_int, metavar="N",
                                   record=False)
    judge_max_unanswered: float = option(0.02, "with --judge: the largest share of questions left unparsed or failed "
                                               "that a judged evaluation accepts (above: it fails, naming the counts)",
                                         check=checks.unit_interval, metavar="SHARE", record=False)
    differences_column: Optional[str] = option(None, "with --judge and --dataset: a column listing each pair's "
                                                     "differences (default: the sentences of its longest reference)",
                                                     record=False)

"""What ``idc-eval --predictions`` and ``idc-eval compare`` are given: one dataclass per command,
which is its command line (options, defaults, checks and help derived from the fields), the
argument of :func:`~.scoring.evaluate` / :func:`~.compare.compare_systems` and the ``arguments``
record in ``metrics.json``. ``idc-eval --model`` scores with :class:`EvalArgs` too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from idc_toolkit import checks
from idc_toolkit.judge.args import JudgeArgs
from idc_toolkit.metrics.implementation import CHOICES as SCORERS
from idc_toolkit.options import check_fields, option
from idc_toolkit.stores import STORE_DATASET, STORE_OUT


def _metrics_help() -> str:
    from idc_toolkit.metrics.registry import METRICS

    return (f"subset of {' '.join(METRICS)} MC, any case or alias (default: all this machine computes; MC, multiple-choice "
            "accuracy, where the dataset's items ask questions: docs/scoring.md)")


def _protocol_names() -> list[str]:
    from .protocols import PROTOCOLS

    return PROTOCOLS.names()


def _protocol_help() -> str:
    from .protocols import protocol_help

    return protocol_help()


def _layout_names() -> list[str]:
    from .paper_tables import LAYOUTS

    return [*LAYOUTS, "all"]


class _Checked:
    """Range-checks every field that names a check, where it is set, when the object is made."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class ReferenceArgs(_Checked):
    """Where the references and their groups come from."""

    dataset: Optional[str] = option(None, "an idc-build folder or a Hub dataset id; references = its captions" + STORE_DATASET)
    split: str = option("test", "dataset split")
    references: Optional[str] = option(None, "a coco-caption annotation file")
    categories: Optional[str] = option(None, "with --references: {pair_id: category} or {category: [pair_id, ...]}")
    id_column: str = option("pair_id", "dataset column holding the prediction ids")
    groups: Optional[str] = option(None, "groups replacing the categories, any reference source: {pair_id: group} or {group: [ids]}")
    group_by: Optional[str] = option(None, "with --dataset: a column whose values are the groups")
    iou_file: Optional[str] = option(None, "RCC's change_captions_by_IOU.json: adds the viewpoint-difficulty groups")
    iou_column: Optional[str] = option(None, "with --dataset: a column of viewpoint IoUs (clevr_change's viewpoint_iou)")


# the options both commands take, written once (each call makes a field of its own)
def _metrics() -> Optional[list[str]]:
    return option(None, _metrics_help, nargs="+")


def _allow_missing() -> bool:
    return option(False, "score the pairs that have a prediction")


def _drop_empty_references() -> bool:
    return option(False, "drop empty reference strings")


def _seed() -> int:
    return option(0, "bootstrap seed", check=checks.non_negative_int)


def _spice_jars() -> Optional[str]:
    return option(None, "folder with Stanford CoreNLP 3.6.0 jars (or IDC_SPICE_JARS)")


def _scorer() -> Optional[str]:
    return option(None, "who runs coco-caption's PTB tokenizer and METEOR: the toolkit's Python (no Java needed) or "
                        "pycocoevalcap's jars (a Java runtime), the same tokens and scores (default: IDC_SCORER, "
                        "else python)", choices=SCORERS)


def _allow_mixed_presentations() -> bool:
    return option(False, "score together runs whose models were shown the pairs differently (--presentation, as each "
                         "run's model.json records it); refused otherwise")


@dataclass
class EvalArgs(JudgeArgs, ReferenceArgs):
    """``idc-eval --predictions`` (and the scoring half of ``--model``); the judge's options are
    :class:`~idc_toolkit.judge.args.JudgeArgs`'."""

    out: Optional[str] = option(None, "output folder" + STORE_OUT)
    metrics: Optional[list[str]] = _metrics()
    allow_missing: bool = _allow_missing()
    drop_empty_references: bool = _drop_empty_references()
    breakdown: bool = option(True, "score only the whole set")
    bootstrap: int = option(0, "95%% bootstrap intervals from N resamples", check=checks.non_negative_int, metavar="N")
    seed: int = _seed()
    spice_jars: Optional[str] = _spice_jars()
    scorer: Optional[str] = _scorer()
    overwrite: bool = option(False, "replace --out when it holds a run with other settings")
    protocol: str = option("rcc", _protocol_help, choices=_protocol_names)
    drop_last_batch: int = option(0, "with --protocol blip2idc: drop the last partial batch of N, as its drop_last loaders do",
                                  check=checks.non_negative_int, metavar="N")
    layouts: list[str] = option((), "also write the papers' table shapes (markdown + LaTeX); by_category.csv is always written",
                                choices=_layout_names, nargs="+", flag="--layout")
    group_names: Optional[str] = option(None, "JSON {group: name shown} for the layouts (default: the papers' names)")
    name: str = option("this run", "the run's row label in the layout tables")
    strict: bool = option(False, "refuse what is otherwise a warning: a protocol applied to data it was not written for")
    reversed: Optional[str] = option(None, "captions of the same pairs with before and after swapped (what --model --reverse "
                                           "writes): adds reversibility, Judge_reversibility with --judge (docs/scoring.md)",
                                     metavar="PREDICTIONS")


@dataclass
class CompareArgs(JudgeArgs, ReferenceArgs):
    """``idc-eval compare``: the paired bootstrap test of two systems."""

    out: Optional[str] = option(None, "folder for compare.json")
    metrics: Optional[list[str]] = _metrics()
    allow_missing: bool = _allow_missing()
    drop_empty_references: bool = _drop_empty_references()
    bootstrap: int = option(1000, "resamples", check=checks.positive_int, metavar="N")
    seed: int = _seed()
    spice_jars: Optional[str] = _spice_jars()
    scorer: Optional[str] = _scorer()
    overwrite: bool = option(False, "replace an existing compare.json")
    allow_mixed_presentations: bool = _allow_mixed_presentations()

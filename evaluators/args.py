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


def metrics_help() -> str:
    from idc_toolkit.metrics.registry import METRICS

    return (f"subset of {' '.join(METRICS)} MC, any case or alias (default: all this machine computes; MC, multiple-choice "
            "accuracy, where the dataset's items ask questions: docs/scoring.md)")


def protocol_names() -> list[str]:
    from .protocols import PROTOCOLS

    return PROTOCOLS.names()


def protocol_help() -> str:
    from .protocols import protocol_help

    return protocol_help()


def layout_names() -> list[str]:
    from .paper_tables import LAYOUTS

    return [*LAYOUTS, "all"]


class Checked:
    """Range-checks every field that names a check, where it is set, when the object is made."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class ReferenceArgs(Checked):
    """Where the references and their groups come from (the source itself is recorded by its
    content, ``References.fingerprint``: those fields are not recorded)."""

    dataset: Optional[str] = option(None, "an idc-build folder or a Hub dataset id; references = its captions" + STORE_DATASET,
                                    record=False)
    split: str = option("test", "dataset split", record=False)
    references: Optional[str] = option(None, "a coco-caption annotation file", record=False)
    categories: Optional[str] = option(None, "with --references: {pair_id: category} or {category: [pair_id, ...]}",
                                       record=False)
    id_column: str = option("pair_id", "dataset column holding the prediction ids", record=False)
    groups: Optional[str] = option(None, "groups replacing the categories, any reference source: {pair_id: group} or {group: [ids]}",
                                   record="content")
    group_by: Optional[str] = option(None, "with --dataset: a column whose values are the groups")
    iou_file: Optional[str] = option(None, "RCC's change_captions_by_IOU.json: adds the viewpoint-difficulty groups",
                                     record="content")
    iou_column: Optional[str] = option(None, "with --dataset: a column of viewpoint IoUs (clevr_change's viewpoint_iou)")


# the options more than one command takes, each written once (each call makes a field of its own)
def seed_option() -> int:
    return option(0, "bootstrap seed", check=checks.non_negative_int)


def spice_jars_option() -> Optional[str]:
    # whether SPICE ran is what the scores depend on, not where its jars are
    return option(None, "folder with Stanford CoreNLP 3.6.0 jars (or IDC_SPICE_JARS)", record=bool)


def scorer_option() -> Optional[str]:
    return option(None, "who runs coco-caption's PTB tokenizer and METEOR: the toolkit's Python (no Java needed) or "
                        "pycocoevalcap's jars (a Java runtime), the same tokens and scores (default: IDC_SCORER, "
                        "else python)", choices=SCORERS)


def protocol_option() -> str:
    return option("rcc", protocol_help, choices=protocol_names)


def allow_mixed_presentations_option() -> bool:
    return option(False, "score together runs whose models were shown the pairs differently (--presentation, as each "
                         "run's model.json records it); refused otherwise")


@dataclass
class ScoringArgs(Checked):
    """What ``idc-eval --predictions``, ``compare`` and ``leaderboard`` share: where the results go,
    which metrics, and which pairs are scored."""

    out: Optional[str] = option(None, "output folder" + STORE_OUT, record=False)
    metrics: Optional[list[str]] = option(None, metrics_help, nargs="+")
    allow_missing: bool = option(False, "score the pairs that have a prediction")
    drop_empty_references: bool = option(False, "drop empty reference strings")


@dataclass
class EvalArgs(ScoringArgs, JudgeArgs, ReferenceArgs):
    """``idc-eval --predictions`` (and the scoring half of ``--model``); the judge's options are
    :class:`~idc_toolkit.judge.args.JudgeArgs`'. Every field enters the evaluation's fingerprint
    as its ``record`` metadata says (:func:`~.scoring.run_record`)."""

    breakdown: bool = option(True, "score only the whole set")
    bootstrap: int = option(0, "95%% bootstrap intervals from N resamples", check=checks.non_negative_int, metavar="N")
    seed: int = seed_option()
    spice_jars: Optional[str] = spice_jars_option()
    scorer: Optional[str] = scorer_option()
    overwrite: bool = option(False, "replace --out when it holds a run with other settings", record=False)
    protocol: str = protocol_option()
    drop_last_batch: int = option(0, "with --protocol blip2idc: drop the last partial batch of N, as its drop_last loaders do",
                                  check=checks.non_negative_int, metavar="N")
    layouts: list[str] = option((), "also write the papers' table shapes (markdown + LaTeX); by_category.csv is always written",
                                choices=layout_names, nargs="+", flag="--layout", record=sorted)
    group_names: Optional[str] = option(None, "JSON {group: name shown} for the layouts (default: the papers' names)",
                                        record="content")
    name: str = option("this run", "the run's row label in the layout tables")
    strict: bool = option(False, "refuse what is otherwise a warning: a protocol applied to data it was not written for",
                          record=False)
    # recorded by the content of its captions (the scoring reads the file)
    reversed: Optional[str] = option(None, "captions of the same pairs with before and after swapped (what --model --reverse "
                                           "writes): adds reversibility, Judge_reversibility with --judge (docs/scoring.md)",
                                     metavar="PREDICTIONS", record=False)


@dataclass
class CompareArgs(ScoringArgs, JudgeArgs, ReferenceArgs):
    """``idc-eval compare``: the paired bootstrap test of two systems."""

    out: Optional[str] = option(None, "folder for compare.json", record=False)
    bootstrap: int = option(1000, "resamples", check=checks.positive_int, metavar="N")
    seed: int = seed_option()
    spice_jars: Optional[str] = spice_jars_option()
    scorer: Optional[str] = scorer_option()
    overwrite: bool = option(False, "replace an existing compare.json", record=False)
    allow_mixed_presentations: bool = allow_mixed_presentations_option()

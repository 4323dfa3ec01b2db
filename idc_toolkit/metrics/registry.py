"""The metric registry: a family name -> the :class:`~.base.Metric` class computing it.

Entries are ``"module:Class"`` strings (lm-evaluation-harness style), resolved on first use.
A new metric is one module in this folder and one line here.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import EvaluationError
from ..registry import Registry

METRICS = Registry("metric", {
    "BLEU": "idc_toolkit.metrics.bleu:Bleu",
    "METEOR": "idc_toolkit.metrics.meteor:Meteor",
    "ROUGE_L": "idc_toolkit.metrics.rouge:RougeL",
    "CIDEr": "idc_toolkit.metrics.cider:CiderD",
    "SPICE": "idc_toolkit.metrics.spice:Spice",
}, base_cls="idc_toolkit.metrics.base:Metric")


def metric_class(family: str):
    return METRICS.get(family)


def default_families(spice_jars: Optional[str] = None) -> tuple[str, ...]:
    """What runs when no ``--metrics`` is given: every metric whose requirements this machine has.
    An optional one that cannot run here (:meth:`~.base.Metric.unavailable`) runs, and warns,
    only when asked for by name."""
    return tuple(f for f in METRICS if not metric_class(f).optional or metric_class(f).unavailable(spice_jars=spice_jars) is None)


def resolve_families(names: Optional[Sequence[str]]) -> tuple[str, ...]:
    """``--metrics`` names (any case, or an alias) -> registry families, in the given order.
    ``MC`` (multiple-choice accuracy, :mod:`.mc_accuracy`) is a name too, but no family: the
    scorer adds it from the dataset's questions, so it is passed over here (``["MC"]``: none)."""
    from .mc_accuracy import is_name

    if not names:
        return tuple(METRICS)
    lookup = {}
    for family in METRICS:
        cls = metric_class(family)
        for alias in (family, *cls.aliases):
            lookup[alias.lower()] = family
    out = []
    for name in names:
        family = lookup.get(name.lower())
        if family is None and not is_name(name):
            raise EvaluationError(f"unknown metric {name!r}; choose from {', '.join([*METRICS, 'MC'])}")
        if family is not None:
            out.append(family)
    return tuple(dict.fromkeys(out))


def names_multiple_choice(names: Optional[Sequence[str]]) -> Optional[bool]:
    """Whether ``--metrics`` asks for ``MC_accuracy``: ``None`` where no ``--metrics`` was given
    (then it is scored wherever the dataset asks questions)."""
    from .mc_accuracy import is_name

    return None if not names else any(is_name(n) for n in names)


def columns(families: Sequence[str]) -> tuple[str, ...]:
    """The score columns of ``families`` in table order."""
    return tuple(c for f in families for c in metric_class(f).columns)


def chart_columns(families: Sequence[str]) -> tuple[str, ...]:
    return tuple(metric_class(f).chart_column for f in families)


def required_families() -> tuple[str, ...]:
    """The families every machine computes (no optional requirement such as SPICE's jars)."""
    return tuple(f for f in METRICS if not metric_class(f).optional)


def paper_columns() -> dict[str, str]:
    """``{column: short name}`` of the columns the papers' tables print (B4 M R C S), in table order."""
    return {column: short for f in METRICS for column, short in metric_class(f).paper_columns.items()}


def table_columns() -> dict[str, str]:
    """``{column: short name}`` of every column a paper-shaped table shows where a run has it: the
    papers' (B4 M R C S), then the judge's, reversibility's and multiple-choice accuracy's (made
    outside the registry)."""
    from .judge_columns import JudgeScores
    from .mc_accuracy import ChoiceAccuracy
    from .reverse import ReverseOverlap

    return {**paper_columns(), **JudgeScores.paper_columns, **ReverseOverlap.paper_columns, **ChoiceAccuracy.paper_columns}


def all_columns() -> tuple[str, ...]:
    """Every column the registry's metrics produce, in table order."""
    return columns(tuple(METRICS))

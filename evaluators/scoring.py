"""Scoring as functions: what ``idc-eval --predictions`` and ``idc-eval compare`` do, callable
from Python with the same numbers and the same files.

:func:`evaluate` is a sequence of named steps, each a public function that ``compare`` and
``leaderboard`` reuse: :func:`load_inputs` (references and predictions, each file parsed once),
:func:`apply_protocol`, :func:`prepare_scoring` (the pairs scored, the metrics, the tables asked
for), :func:`run_record` (the fingerprint ``--out`` is held to), :func:`judge_step`,
:func:`score` and :func:`write`."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from idc_toolkit.errors import EvaluationError
from idc_toolkit.stores import input_folder, output_folder, shown_uri

from .args import EvalArgs, ReferenceArgs
from .predictions import (Predictions, Prepared, References, load_references_coco, load_references_dataset, prepare,
                          read_predictions, source_name)
from .protocols import Protocol

log = logging.getLogger(__name__)


def load_references(args: Optional[ReferenceArgs] = None, **fields: Any) -> References:
    """References from a dataset (its ``captions``/``category``) or a coco-caption file, with the
    groups of :mod:`.groups` (``groups`` file, ``group_by`` column, viewpoint IoU); ``fields``
    make the :class:`~.args.ReferenceArgs` when ``args`` is not given."""
    from .groups import apply_group_file, read_iou_file

    a = args if args is not None else ReferenceArgs(**fields)
    if (a.dataset is None) == (a.references is None):
        raise EvaluationError("give exactly one of dataset= and references=")
    if a.references is not None and (a.group_by or a.iou_column or getattr(a, "differences_column", None)):
        raise EvaluationError("group_by / iou_column / differences_column name dataset columns; with a coco file use "
                              "groups= / iou_file= (the judge then lists each pair's longest reference's sentences)")
    if a.categories and a.groups:
        raise EvaluationError("give the groups once: categories= (coco files) or groups=")
    if a.dataset is not None:
        dataset = input_folder(a.dataset, EvaluationError)  # a store's dataset: its local copy
        from idc_toolkit.runs.rows import check_built

        check_built(dataset)
        if a.categories:
            raise EvaluationError("categories= goes with references=; on a dataset use groups= or group_by=")
        extra = [a.differences_column] if getattr(a, "differences_column", None) else []  # the judge's, where asked
        from idc_toolkit.multiple_choice import COLUMNS as QUESTION_COLUMNS

        refs = load_references_dataset(dataset, a.split, a.id_column, a.group_by, a.iou_column, extra, QUESTION_COLUMNS)
    else:
        refs = load_references_coco(a.references, a.categories)
    if a.groups:
        refs = apply_group_file(refs, a.groups)
    if a.iou_file:
        own = {pid: pid for pid in refs.captions}  # the references' own id strings: one string per pair, not two
        refs.ious = {own.get(k, k): v for k, v in read_iou_file(a.iou_file).items()}
    return refs


def add_derived(result: Any, derived: Mapping[str, tuple[str, ...]]) -> None:
    """Each derived column (a protocol's, e.g. rsicc's S*m) as the mean of its columns, in every
    group where all of them were computed; after the metrics in the tables."""
    for name, parts in derived.items():
        if not all(c in result.metrics for c in parts):
            continue
        for group in result.groups.values():
            values = [group.scores.get(c) for c in parts]
            group.scores[name] = None if None in values else sum(values) / len(values)
        result.metrics = (*result.metrics, name)


@dataclass
class Evaluation:
    metrics: dict[str, Any]  # what metrics.json holds
    result: Any  # the ScoreResult (per-pair arrays, groups), for tables and charts


@dataclass
class Scoring:
    """What the steps of :func:`evaluate` hand on: the options, the protocol, the references and
    the prepared pairs, and what scoring them needs."""

    args: EvalArgs
    protocol: Protocol
    refs: References
    prep: Prepared
    source: str  # how the predictions are named in the outputs
    captions: dict[str, str]  # the model's own: what the judge and reversibility read, whatever the protocol scores
    metrics: list[str]  # the metrics computed (MC stands for multiple-choice accuracy)
    scorer: str  # python or java: the same numbers; which one scored is recorded
    choice: Any = None  # MC_accuracy, where the references' items ask questions
    layouts: list[str] = field(default_factory=list)
    presentation: Optional[str] = None  # how the model was shown the pairs (its model.json), if known
    backward: Optional[dict[str, str]] = None  # the captions of the swapped pairs (--reversed)

    def label(self) -> Any:
        from .paper_tables import RunLabel

        return RunLabel(self.args.name, self.protocol.name, self.protocol.comparable_with_rcc, self.presentation)


def evaluate_predictions(predictions: Predictions, args: Optional[EvalArgs] = None, **fields: Any) -> dict[str, Any]:
    """Score ``predictions`` (a file or ``{pair_id: caption}``); returns what ``metrics.json``
    holds and, with ``out=``, writes the same files as ``idc-eval --predictions``. The options
    are :class:`~.args.EvalArgs`, given as one or field by field."""
    return evaluate(predictions, args, **fields).metrics


def evaluate(predictions: Predictions, args: Optional[EvalArgs] = None, *,
             progress: Optional[Callable[[str], None]] = None, refs: Optional[References] = None,
             engine: Any = None, **fields: Any) -> Optional[Evaluation]:
    """Score ``predictions`` against a dataset split or a coco reference file; ``args`` is an
    :class:`~.args.EvalArgs` (``fields`` replace its values, or make one). ``refs``: those
    references already loaded (:func:`load_references`), e.g. narrowed to the pairs a validation scores.

    ``metrics.json`` records every resolved argument, the protocol, seed, date and versions (as
    lmms-eval does). With ``out``, a folder holding the results of another run (other
    predictions, references or options) is refused unless ``overwrite``, as every other job's
    output is. ``progress`` receives a line per stage (tokenizing, METEOR, bootstrap).

    With ``judge``, the judge's columns are added (:mod:`idc_toolkit.judge`); its judging runs on
    the run engine (``engine``: ``--shard``, Ray; every torchrun rank calls this), and a job
    that does not end holding every judgement (another shard's, a rank other than 0) returns
    ``None`` without scoring."""
    from idc_toolkit.options import with_fields
    from idc_toolkit.runs.ranks import dist_info

    from .outputs import open_evaluation_folder

    a = with_fields(EvalArgs, args, **fields)
    out = None if a.out is None else output_folder(a.out, EvaluationError)
    proto = choose_protocol(a)
    refs, preds = load_inputs(predictions, a, refs)
    refs, preds = apply_protocol(proto, refs, preds, a, source_name(predictions))
    s = prepare_scoring(predictions, preds, refs, proto, a, checked_tables=out is not None)
    del preds  # the file's mapping: the scored pairs' captions are in s, keyed by the references' ids
    run = run_record(s)
    main = dist_info()[0] == 0  # under torchrun every rank judges; rank 0 alone writes the evaluation
    folder = open_evaluation_folder(Path(out), run, a.overwrite, progress is not None) if out is not None and main else None
    judge = judge_step(s, out, engine, progress)
    if (a.judge and judge is None) or not main:
        return None
    result = score(s, [judge] if judge is not None else [], progress)
    return write(s, result, run, out, folder, judge)


def choose_protocol(a: EvalArgs) -> Protocol:
    """The protocol of ``--protocol`` (step "protocol", checked before anything is read)."""
    from .protocols import get_protocol

    proto = get_protocol(a.protocol, a.drop_last_batch)
    if proto.own_groups and (a.groups or a.group_by or a.iou_file or a.iou_column):
        raise EvaluationError(f"--protocol {proto.name} forms its own {proto.own_groups} and would drop --groups / "
                              "--group-by / IoU groups: run those with --protocol rcc")
    return proto


def load_inputs(predictions: Predictions, a: ReferenceArgs,
                refs: Optional[References] = None) -> tuple[References, dict[str, str]]:
    """Step "load": the references (``refs`` where already loaded) and the predictions, each file
    parsed once and refused with every problem ``idc-eval check-references`` lists."""
    return (refs if refs is not None else load_references(a)), read_predictions(predictions)


def apply_protocol(proto: Protocol, refs: References, preds: dict[str, str], a: Any,
                   source: str) -> tuple[References, dict[str, str]]:
    """Step "protocol": references and predictions as ``proto`` reads them (its ids, its groups,
    the pairs it keeps)."""
    refs = proto.references(refs)
    preds = proto.predictions(preds, source)
    proto.misfit_check(getattr(a, "strict", False))
    kept = proto.kept_ids(list(refs.captions))
    if len(kept) < len(refs.captions):
        refs.captions = {pid: refs.captions[pid] for pid in kept}
        preds = {pid: c for pid, c in preds.items() if pid in refs.captions}
    return refs, preds


def prepare_scoring(predictions: Predictions, preds: dict[str, str], refs: References, proto: Protocol, a: EvalArgs,
                    checked_tables: bool = False) -> Scoring:
    """Step "prepare": the pairs scored (:func:`~.predictions.prepare`), the metrics computed on
    them, the hypotheses the protocol scores, the reversed captions; with ``checked_tables``,
    every check of the tables asked for that needs no score."""
    from idc_toolkit.metrics.implementation import resolve
    from idc_toolkit.metrics.registry import default_families
    from idc_toolkit.presentation import recorded_presentation

    from .paper_tables import applicable_layouts, group_names

    prep = prepare(preds, refs, allow_missing=a.allow_missing, drop_empty_references=a.drop_empty_references,
                   breakdown=a.breakdown)
    captions = prep.hypotheses  # never changed: a protocol that scores other hypotheses makes its own mapping
    choice = choice_metric(captions, prep, refs, a.metrics)
    named = list(a.metrics) if a.metrics else list(default_families(a.spice_jars))  # no SPICE warning nobody can act on
    s = Scoring(a, proto, refs, prep, source_name(predictions), captions, caption_metrics(named, a.metrics, prep, choice,
                                                                                        predictions),
                resolve(a.scorer), choice, list(a.layouts), recorded_presentation(predictions))
    prep.hypotheses = proto.prepare(prep.hypotheses, prep.references, prep.categories, a.seed)
    if checked_tables:
        s.layouts = applicable_layouts(s.layouts, prep.groups)
        group_names(a.group_names)
    prep.warnings += proto.notes
    if a.reversed:
        s.backward = reversed_captions(a.reversed, captions)
    if a.judge:
        uncaptioned = [pid for pid, r in prep.references.items() if not r]
        if uncaptioned:
            raise EvaluationError(f"--judge reads each pair's references, and {len(uncaptioned)} scored pair(s) have none "
                                  f"(multiple-choice items without a caption, e.g. {uncaptioned[0]!r}); score their "
                                  "answers without --judge")
    return s


def reversed_captions(path: str, captions: dict[str, str]) -> dict[str, str]:
    """``--reversed``'s captions of the pairs scored; each one needs its own."""
    backward = read_predictions(path)
    lacking = [pid for pid in captions if pid not in backward]
    if lacking:
        raise EvaluationError(f"--reversed {path}: no caption for {len(lacking)} pair(s) scored: "
                              f"{', '.join(map(repr, lacking[:5]))}")
    return {pid: backward[pid] for pid in captions}


#: fields recorded under the name evaluation folders have always used (the first one set holds)
RECORDED_AS = {"spice_jars": "spice", "iou_file": "iou", "iou_column": "iou"}
#: the order of metrics.json's ``run`` block; a field not named here follows them
RUN_ORDER = ("protocol", "drop_last_batch", "groups", "group_by", "iou", "predictions", "references", "metrics",
             "allow_missing", "drop_empty_references", "breakdown", "bootstrap", "seed", "spice", "scorer", "layouts",
             "group_names", "name", "toolkit_version")


def recorded_fields(a: EvalArgs) -> dict[str, Any]:
    """The options' part of the fingerprint: every field of ``a`` as its ``record`` metadata says
    (:func:`~idc_toolkit.runs.fingerprint.recorded`), in field order, under :data:`RECORDED_AS`'s names."""
    from idc_toolkit.runs.fingerprint import recorded

    values = recorded(a)
    out: dict[str, Any] = {}
    for f in fields(a):
        if f.name in values:
            name = RECORDED_AS.get(f.name, f.name)
            if out.get(name) is None:
                out[name] = values[f.name]
    return out


def run_record(s: Scoring) -> dict[str, Any]:
    """What the evaluation depends on (the fingerprint ``--out`` is held to, ``meta.run``): the
    predictions and references by content, the options as resolved (the metrics computed, the
    scorer, the tables written), the toolkit's version, and what only some runs have."""
    from idc_toolkit import __version__
    from idc_toolkit.runs.fingerprint import digest

    resolved = replace(s.args, metrics=list(s.metrics), scorer=s.scorer, layouts=s.layouts)
    run = {"predictions": digest(s.prep.hypotheses), "references": s.refs.fingerprint, **recorded_fields(resolved),
           "toolkit_version": __version__}
    run = {**{k: run.pop(k) for k in RUN_ORDER if k in run}, **run}
    if s.presentation:
        run["presentation"] = s.presentation
    if s.choice is not None:
        from idc_toolkit.multiple_choice import fingerprint_fields

        run["multiple_choice"] = {**fingerprint_fields(), "items": digest({i: it and [it.question, it.choices, it.correct]
                                                                          for i, it in zip(s.prep.references, s.choice.items)})}
    if s.backward is not None:
        run["reversed"] = digest(s.backward)
    if s.args.judge:
        from idc_toolkit.judge.run import judge_fields

        run["judge"] = judge_fields(s.args)
    return run


def judge_step(s: Scoring, out: Optional[Path], engine: Any, progress: Optional[Callable[[str], None]]) -> Any:
    """Step "judge": the judge's columns (``None`` without ``--judge``, or where this job does not
    hold every judgement); judged in ``OUT/judge``."""
    if not s.args.judge:
        return None
    from idc_toolkit.judge import JUDGE_DIR

    return judge_metric(s.captions, s.prep, s.refs, s.args, None if out is None else Path(out) / JUDGE_DIR, engine,
                        progress, s.backward)


def score(s: Scoring, extra: list[Any], progress: Optional[Callable[[str], None]] = None) -> Any:
    """Step "score": every metric on every group (``extra``: metrics made outside the registry, the
    judge's), after what a metric cannot score is named and the warnings are given."""
    from idc_toolkit.metrics.core import score_groups
    from idc_toolkit.metrics.registry import metric_class, resolve_families

    prep = s.prep
    ids = [i for i in prep.hypotheses if prep.references[i]]
    for family in resolve_families(s.metrics):  # what a family cannot score, named before any work
        metric_class(family).check_inputs(ids, [prep.hypotheses[i] for i in ids], [prep.references[i] for i in ids])
    for w in prep.warnings:
        log.warning("warning: %s", w)
    extra = [*extra, *([s.choice] if s.choice is not None else [])]
    if s.backward is not None:
        from idc_toolkit.metrics.reverse import ReverseOverlap

        extra.append(ReverseOverlap(list(prep.references), s.captions, s.backward))
    a = s.args
    result = score_groups(prep.hypotheses, prep.references, prep.groups, s.metrics, a.spice_jars, a.bootstrap, a.seed,
                          scorer=s.scorer, progress=progress, tokenize=s.protocol.tokenize, extra=extra)
    add_derived(result, s.protocol.derived)
    if result.spice_status not in ("ok", "not requested"):
        log.warning("warning: %s", result.spice_status)
    return result


def arguments_record(s: Scoring) -> dict[str, Any]:
    """``meta.arguments``: every argument as given (secrets masked), the metrics as computed."""
    from idc_toolkit.metrics.registry import resolve_families
    from idc_toolkit.options import masked

    a = s.args
    arguments = {"predictions": s.source, **asdict(a), "out": None if a.out is None else shown_uri(str(a.out)),
                 "metrics": [*resolve_families(s.metrics), *(["MC"] if s.choice is not None else [])],
                 "layouts": list(a.layouts)}
    if a.judge_endpoint:
        from idc_toolkit.urls import mask_url

        arguments["judge_endpoint"] = mask_url(a.judge_endpoint)
    return masked(arguments)


def write(s: Scoring, result: Any, run: dict[str, Any], out: Optional[Path], folder: Any, judge: Any) -> Evaluation:
    """Step "write": ``metrics.json``'s content, and with ``out`` every file of the evaluation."""
    from idc_toolkit.metrics.implementation import describe
    from idc_toolkit.runs.fingerprint import digest

    from .outputs import build_meta, metrics_dict, write_outputs

    a, prep, proto = s.args, s.prep, s.protocol
    meta = build_meta(result, s.refs.source, s.refs.fingerprint,
                      {"predictions": s.source, "n_missing": prep.n_missing, "bootstrap": a.bootstrap,
                       "seed": a.seed, "arguments": arguments_record(s),
                       "protocol": {"name": proto.name, "description": proto.description,
                                    "comparable_with_rcc": proto.comparable_with_rcc},
                       "run": run, "run_fingerprint": digest(run), "scorer": describe(s.scorer),
                       **({"presentation": s.presentation} if s.presentation else {}),
                       **({"judge_answers": judge.answers} if judge is not None else {}),
                       **({"multiple_choice": s.choice.summary()} if s.choice is not None else {})})
    meta["protocol"].update(proto.summary(prep.hypotheses, prep.categories))
    if out is None:
        return Evaluation(metrics_dict(result, meta, prep.warnings), result)
    data = write_outputs(Path(out), result, prep.hypotheses, prep.references, prep.categories, meta, prep.warnings,
                         s.layouts, a.group_names, s.label())
    folder.finalise(lambda final: None)  # every file is written (atomically): the record says the run is complete
    return Evaluation(data, result)


def asked_questions(predictions: Any) -> bool:
    """Whether a predictions file holds a model's answers to the dataset's questions: its run's
    ``model.json`` (beside it) records ``multiple_choice`` (``idc-eval --model vlm`` on such a dataset)."""
    import json

    if isinstance(predictions, Mapping) or not isinstance(predictions, (str, Path)):
        return False
    try:
        record = json.loads((Path(predictions).parent / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(record, dict) and bool(record.get("multiple_choice"))


def choice_metric(answers: dict[str, str], prep: Any, refs: References, named: Optional[list[str]]) -> Any:
    """``MC_accuracy`` of ``answers`` (the raw predictions) on the prepared pairs that ask a
    question (:class:`~idc_toolkit.metrics.mc_accuracy.ChoiceAccuracy`), or ``None``: where the
    references hold no question, or ``--metrics`` (``named``) leaves ``MC`` out."""
    from idc_toolkit.metrics.mc_accuracy import ChoiceAccuracy, items_of
    from idc_toolkit.metrics.registry import names_multiple_choice
    from idc_toolkit.multiple_choice import COLUMNS

    wanted = names_multiple_choice(named)
    if wanted is False:
        return None
    if not all(c in refs.columns for c in COLUMNS):
        if wanted:
            raise EvaluationError(f"--metrics MC: {refs.source} has no {' / '.join(COLUMNS)} columns; MC_accuracy scores "
                                  "a dataset whose items ask multiple-choice questions (idc-build vlm_subtlebench)")
        return None
    try:
        items = items_of(list(prep.references), refs.columns)
    except ValueError as exc:
        raise EvaluationError(f"{refs.source}: {exc}") from None
    if not any(items.values()):
        if wanted:
            raise EvaluationError(f"--metrics MC: no pair scored from {refs.source} asks a question")
        return None
    return ChoiceAccuracy(list(prep.references), answers, items)


def caption_metrics(metrics: list[str], named: Optional[list[str]], prep: Any, choice: Any, predictions: Any) -> list[str]:
    """The caption metrics to compute: none where the predictions are a model's answers to the
    dataset's questions and no ``--metrics`` was given (:func:`asked_questions`), or where no
    scored pair has a reference (a warning when they were named); ``metrics`` otherwise."""
    from idc_toolkit.metrics.registry import resolve_families

    families = resolve_families(metrics)
    if not families:
        return metrics
    if not named and choice is not None and asked_questions(predictions):
        return ["MC"]
    if not any(prep.references.values()):
        if choice is None:
            raise EvaluationError("no scored pair has a reference, and none asks a question scored here (--metrics MC)")
        if named:
            prep.warnings.append(f"no scored pair has a reference: {', '.join(families)} not computed")
        return ["MC"]
    return metrics


def judge_metric(captions: dict[str, str], prep: Any, refs: References, a: Any, folder: Optional[Path], engine: Any,
                 progress: Optional[Callable[[str], None]], backward: Optional[dict[str, str]] = None) -> Any:
    """The judge's :class:`~idc_toolkit.metrics.judge_columns.JudgeScores` of ``captions`` on the prepared
    pairs (``None`` where this job does not hold every judgement); judged in ``folder`` (kept) or
    a temporary one."""
    from idc_toolkit.judge.run import judge_pairs, pair_rows
    from idc_toolkit.metrics.judge_columns import from_records
    from idc_toolkit.schema import NO_CHANGE_CATEGORIES

    differences = None
    if a.differences_column:
        column = refs.columns[a.differences_column]
        differences = {pid: _difference_list(column.get(pid), a.differences_column, pid) for pid in prep.references}
    no_change = {pid: prep.categories.get(pid) in NO_CHANGE_CATEGORIES for pid in prep.references}
    rows = pair_rows(captions, prep.references, no_change, differences, backward)
    if progress:
        progress(f"judging {len(rows):,} pairs with {a.judge}")
    records = judge_pairs(rows, a, folder, engine=engine, overwrite=a.overwrite, progress=progress is not None)
    if records is None:
        return None
    metric = from_records(list(prep.references), records)
    total = metric.answers["overall"]
    if total["failure_rate"] > a.judge_max_unanswered:
        raise EvaluationError(f"the judge left {total['unparsed']:,} of {total['asked']:,} questions unparsed and "
                              f"{total['failed']:,} failed ({total['failure_rate']:.1%} > --judge-max-unanswered "
                              f"{a.judge_max_unanswered:g}); its judgements are kept"
                              + (f" in {folder}: a rerun asks again only what failed" if folder else ""))
    return metric


def _difference_list(value: Any, column: str, pid: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise EvaluationError(f"--differences-column {column!r}, pair {pid!r}: {value!r} is not a string or a list of strings")

"""Scoring as functions: what ``idc-eval --predictions`` and ``idc-eval compare`` do, callable
from Python with the same numbers and the same files."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from idc_toolkit.errors import EvaluationError
from idc_toolkit.stores import input_folder, output_folder, shown_uri

from .args import EvalArgs, ReferenceArgs
from .check_references import refuse_bad_file
from .predictions import References, load_predictions, load_references_coco, load_references_dataset, prepare

log = logging.getLogger(__name__)
Predictions = Union[str, Path, Mapping[str, str]]


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
        refuse_bad_file(a.references)
        refs = load_references_coco(a.references, a.categories)
    if a.groups:
        refs = apply_group_file(refs, a.groups)
    if a.iou_file:
        refs.ious = read_iou_file(a.iou_file)
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


def _source(predictions: Predictions) -> str:
    """How a predictions argument is named in the outputs."""
    return "<in memory>" if isinstance(predictions, Mapping) else str(predictions)


def _predictions(predictions: Predictions) -> dict[str, str]:
    if isinstance(predictions, Mapping):
        return {str(k): v for k, v in predictions.items()}
    refuse_bad_file(predictions)
    return load_predictions(predictions)


@dataclass
class Evaluation:
    metrics: dict[str, Any]  # what metrics.json holds
    result: Any  # the ScoreResult (per-pair arrays, groups), for tables and charts


def evaluate_predictions(predictions: Predictions, args: Optional[EvalArgs] = None, **fields: Any) -> dict[str, Any]:
    """Score ``predictions`` (a file or ``{pair_id: caption}``); returns what ``metrics.json``
    holds and, with ``out=``, writes the same files as ``idc-eval --predictions``. The options
    are :class:`~.args.EvalArgs`, given as one or field by field."""
    return evaluate(predictions, args, **fields).metrics


def evaluate(predictions: Predictions, args: Optional[EvalArgs] = None, *,
             progress: Optional[Callable[[str], None]] = None, refs: Optional[References] = None,
             engine: Any = None, **fields: Any) -> Optional[Evaluation]:
    """Score ``predictions`` against a dataset split or a coco reference file; ``args`` is an
    :class:`~.args.EvalArgs` (or ``fields`` make one). ``refs``: those references already loaded
    (:func:`load_references`), e.g. narrowed to the pairs a validation scores.

    ``metrics.json`` records every resolved argument, the protocol, seed, date and versions (as
    lmms-eval does). With ``out``, a folder holding the results of another run (other
    predictions, references or options) is refused unless ``overwrite``, as every other job's
    output is. ``progress`` receives a line per stage (tokenizing, METEOR, bootstrap).

    With ``judge``, the judge's columns are added (:mod:`idc_toolkit.judge`); its judging runs on
    the run engine (``engine``: ``--shard``, Ray; every torchrun rank calls this), and a job
    that does not end holding every judgement (another shard's, a rank other than 0) returns
    ``None`` without scoring."""
    from idc_toolkit import __version__
    from idc_toolkit.metrics.core import score_groups
    from idc_toolkit.metrics.registry import default_families, resolve_families
    from idc_toolkit.runs.fingerprint import digest, path_content
    from idc_toolkit.runs.ranks import dist_info

    from .outputs import build_meta, metrics_dict, open_evaluation_folder, preload_chart_libraries, write_outputs
    from .protocols import get_protocol

    a = args if args is not None else EvalArgs(**fields)
    metrics = list(a.metrics) if a.metrics else list(default_families(a.spice_jars))  # no SPICE warning nobody can act on
    named_out = None if a.out is None else shown_uri(str(a.out))  # as named (a URI's staging folder is ours), no secret
    out = None if a.out is None else output_folder(a.out, EvaluationError)
    arguments = {"predictions": _source(predictions), **asdict(a), "out": named_out, "metrics": list(resolve_families(metrics)),
                 "layouts": list(a.layouts)}
    if a.judge_endpoint:
        from idc_toolkit.urls import mask_url

        arguments["judge_endpoint"] = mask_url(a.judge_endpoint)
    from idc_toolkit.options import masked

    arguments = masked(arguments)
    from idc_toolkit.metrics.implementation import describe, resolve

    scorer = resolve(a.scorer)  # python or java: the same numbers; which one scored is recorded
    proto = get_protocol(a.protocol, a.drop_last_batch)
    if proto.own_groups and (a.groups or a.group_by or a.iou_file or a.iou_column):
        raise EvaluationError(f"--protocol {proto.name} forms its own {proto.own_groups} and would drop --groups / "
                              "--group-by / IoU groups: run those with --protocol rcc")
    refs = proto.references(refs if refs is not None else load_references(a))
    preds = proto.predictions(_predictions(predictions), _source(predictions))
    if a.strict and proto.misfit:
        raise EvaluationError(f"{proto.misfit}; refused under --strict")
    kept = proto.kept_ids(list(refs.captions))
    if len(kept) < len(refs.captions):
        refs.captions = {pid: refs.captions[pid] for pid in kept}
        preds = {pid: c for pid, c in preds.items() if pid in refs.captions}
    prep = prepare(preds, refs, allow_missing=a.allow_missing, drop_empty_references=a.drop_empty_references,
                   breakdown=a.breakdown)
    captions = dict(prep.hypotheses)  # the model's own: what the judge and reversibility read, whatever the protocol scores
    choice = choice_metric(captions, prep, refs, a.metrics)  # MC_accuracy, where items ask questions
    metrics = caption_metrics(metrics, a.metrics, prep, choice, predictions)
    arguments["metrics"] = [*resolve_families(metrics), *(["MC"] if choice is not None else [])]
    prep.hypotheses = proto.prepare(prep.hypotheses, prep.references, prep.categories, a.seed)
    from .paper_tables import RunLabel, applicable_layouts, group_names as read_group_names

    layouts = list(a.layouts)
    if out is not None:  # every check that needs no score is made before scoring
        layouts = applicable_layouts(layouts, prep.groups)
        read_group_names(a.group_names)
    from idc_toolkit.presentation import recorded_presentation

    presentation = recorded_presentation(predictions)  # how the model was shown the pairs (its model.json), if known
    label = RunLabel(a.name, proto.name, proto.comparable_with_rcc, presentation)
    prep.warnings += proto.notes
    run = {"protocol": proto.name, "drop_last_batch": a.drop_last_batch, "groups": path_content(a.groups),
           "group_by": a.group_by, "iou": path_content(a.iou_file) or a.iou_column, "predictions": digest(prep.hypotheses),
           "references": refs.fingerprint, "metrics": list(metrics or []), "allow_missing": a.allow_missing,
           "drop_empty_references": a.drop_empty_references, "breakdown": a.breakdown, "bootstrap": a.bootstrap,
           "seed": a.seed, "spice": bool(a.spice_jars), "scorer": scorer, "layouts": sorted(layouts),
           "group_names": path_content(a.group_names),
           "name": a.name, "toolkit_version": __version__, **({"presentation": presentation} if presentation else {})}
    if choice is not None:
        from idc_toolkit.multiple_choice import fingerprint_fields

        run["multiple_choice"] = {**fingerprint_fields(), "items": digest({i: it and [it.question, it.choices, it.correct]
                                                                          for i, it in zip(prep.references, choice.items)})}
    backward = None
    if a.reversed:
        backward = _predictions(a.reversed)
        lacking = [pid for pid in captions if pid not in backward]
        if lacking:
            raise EvaluationError(f"--reversed {a.reversed}: no caption for {len(lacking)} pair(s) scored: "
                                  f"{', '.join(map(repr, lacking[:5]))}")
        backward = {pid: backward[pid] for pid in captions}
        run["reversed"] = digest(backward)
    if a.judge:
        from idc_toolkit.judge.run import judge_fields

        uncaptioned = [pid for pid, r in prep.references.items() if not r]
        if uncaptioned:
            raise EvaluationError(f"--judge reads each pair's references, and {len(uncaptioned)} scored pair(s) have none "
                                  f"(multiple-choice items without a caption, e.g. {uncaptioned[0]!r}); score their "
                                  "answers without --judge")
        run["judge"] = judge_fields(a)
    main = dist_info()[0] == 0  # under torchrun every rank judges; rank 0 alone writes the evaluation
    folder = open_evaluation_folder(Path(out), run, a.overwrite, progress is not None) if out is not None and main else None
    judge = None
    if a.judge:
        from idc_toolkit.judge import JUDGE_DIR

        judge = judge_metric(captions, prep, refs, a, None if out is None else Path(out) / JUDGE_DIR, engine, progress,
                             backward)
        if judge is None:
            return None
    if not main:
        return None
    from idc_toolkit.metrics.registry import metric_class

    ids = [i for i in prep.hypotheses if prep.references[i]]
    for family in resolve_families(metrics):  # what a family cannot score, named before any work
        metric_class(family).check_inputs(ids, [prep.hypotheses[i] for i in ids], [prep.references[i] for i in ids])
    for w in prep.warnings:
        log.warning("warning: %s", w)
    if out is not None:
        preload_chart_libraries()
    extra = [m for m in (judge, choice) if m]
    if backward is not None:
        from idc_toolkit.metrics.reverse import ReverseOverlap

        extra.append(ReverseOverlap(list(prep.references), captions, backward))
    result = score_groups(prep.hypotheses, prep.references, prep.groups, metrics, a.spice_jars, a.bootstrap, a.seed, scorer=scorer,
                          progress=progress, tokenize=proto.tokenize, extra=extra)
    add_derived(result, proto.derived)
    if result.spice_status not in ("ok", "not requested"):
        log.warning("warning: %s", result.spice_status)
    meta = build_meta(result, refs.source, refs.fingerprint,
                      {"predictions": _source(predictions), "n_missing": prep.n_missing, "bootstrap": a.bootstrap,
                       "seed": a.seed, "arguments": arguments,
                       "protocol": {"name": proto.name, "description": proto.description,
                                    "comparable_with_rcc": proto.comparable_with_rcc},
                       "run": run, "run_fingerprint": digest(run), "scorer": describe(scorer),
                       **({"presentation": presentation} if presentation else {}),
                       **({"judge_answers": judge.answers} if judge is not None else {}),
                       **({"multiple_choice": choice.summary()} if choice is not None else {})})
    meta["protocol"].update(proto.summary(prep.hypotheses, prep.categories))
    if out is None:
        return Evaluation(metrics_dict(result, meta, prep.warnings), result)
    data = write_outputs(Path(out), result, prep.hypotheses, prep.references, prep.categories, meta, prep.warnings,
                         layouts, a.group_names, label)
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

"""Scoring as functions: what ``idc-eval --predictions`` and ``idc-eval compare`` do, callable
from Python with the same numbers and the same files."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from idc_toolkit.errors import EvaluationError
from idc_toolkit.stores import input_folder, output_folder, shown_uri

from .predictions import References, load_predictions, load_references_coco, load_references_dataset, prepare

log = logging.getLogger(__name__)
Predictions = Union[str, Path, Mapping[str, str]]


def load_references(dataset: Optional[str] = None, split: str = "test", references: Optional[str] = None,
                    categories: Optional[str] = None, id_column: str = "pair_id", groups: Optional[str] = None,
                    group_by: Optional[str] = None, iou_file: Optional[str] = None,
                    iou_column: Optional[str] = None) -> References:
    """References from a dataset (its ``captions``/``category``) or a coco-caption file, with the
    groups of :mod:`.groups` (``groups`` file, ``group_by`` column, viewpoint IoU)."""
    from .groups import apply_group_file, read_iou_file

    if (dataset is None) == (references is None):
        raise EvaluationError("give exactly one of dataset= and references=")
    if references is not None and (group_by or iou_column):
        raise EvaluationError("group_by / iou_column name dataset columns; with a coco file use groups= / iou_file=")
    if categories and groups:
        raise EvaluationError("give the groups once: categories= (coco files) or groups=")
    if dataset is not None:
        dataset = input_folder(dataset, EvaluationError)  # a store's dataset: its local copy
        if categories:
            raise EvaluationError("categories= goes with references=; on a dataset use groups= or group_by=")
        refs = load_references_dataset(dataset, split, id_column, group_by, iou_column)
    else:
        refs = load_references_coco(references, categories)
    if groups:
        refs = apply_group_file(refs, groups)
    if iou_file:
        refs.ious = read_iou_file(iou_file)
    return refs


def _source(predictions: Predictions) -> str:
    """How a predictions argument is named in the outputs."""
    return "<in memory>" if isinstance(predictions, Mapping) else str(predictions)


def _predictions(predictions: Predictions) -> dict[str, str]:
    if isinstance(predictions, Mapping):
        return {str(k): v for k, v in predictions.items()}
    return load_predictions(predictions)


@dataclass
class Evaluation:
    metrics: dict[str, Any]  # what metrics.json holds
    result: Any  # the ScoreResult (per-pair arrays, groups), for tables and charts


def evaluate_predictions(predictions: Predictions, **options: Any) -> dict[str, Any]:
    """Score ``predictions`` (a file or ``{pair_id: caption}``); returns what ``metrics.json``
    holds and, with ``out=``, writes the same files as ``idc-eval --predictions``. Options
    are those of :func:`evaluate`."""
    return evaluate(predictions, **options).metrics


def evaluate(predictions: Predictions, *, dataset: Optional[str] = None, split: str = "test",
             references: Optional[str] = None, categories: Optional[str] = None, id_column: str = "pair_id",
             groups: Optional[str] = None, group_by: Optional[str] = None, iou_file: Optional[str] = None,
             iou_column: Optional[str] = None, out: Optional[str | Path] = None,
             metrics: Optional[Sequence[str]] = None, allow_missing: bool = False,
             drop_empty_references: bool = False, breakdown: bool = True, bootstrap: int = 0, seed: int = 0,
             spice_jars: Optional[str] = None, overwrite: bool = False, protocol: str = "rcc",
             drop_last_batch: int = 0, layouts: Sequence[str] = (), group_names: Optional[str] = None, name: str = "this run",
             strict: bool = False,
             progress: Optional[Callable[[str], None]] = None) -> Evaluation:
    """Score ``predictions`` against a dataset split or a coco reference file.

    ``metrics.json`` records every resolved argument, the protocol, seed, date and versions (as
    lmms-eval does). With ``out``, a folder holding the results of another run (other
    predictions, references or options) is refused unless ``overwrite``, as every other job's
    output is. ``progress`` receives a line per stage (tokenizing, METEOR, bootstrap)."""
    from idc_toolkit import __version__
    from idc_toolkit.metrics.core import score_groups
    from idc_toolkit.metrics.registry import default_families, resolve_families
    from idc_toolkit.runs.fingerprint import digest, path_content

    from .outputs import build_meta, metrics_dict, open_evaluation_folder, preload_chart_libraries, write_outputs
    from .protocols import get_protocol

    metrics = list(metrics) if metrics else list(default_families(spice_jars))  # no SPICE warning nobody can act on

    named_out = None if out is None else shown_uri(str(out))  # as named (a URI's staging folder is ours), no secret
    out = None if out is None else output_folder(out, EvaluationError)
    arguments = {"predictions": _source(predictions), "dataset": dataset, "split": split, "references": references,
                 "categories": categories, "id_column": id_column, "groups": groups, "group_by": group_by,
                 "iou_file": iou_file, "iou_column": iou_column, "out": named_out,
                 "metrics": list(resolve_families(metrics)), "allow_missing": allow_missing,
                 "drop_empty_references": drop_empty_references, "breakdown": breakdown, "bootstrap": bootstrap,
                 "seed": seed, "spice_jars": spice_jars, "overwrite": overwrite, "protocol": protocol,
                 "drop_last_batch": drop_last_batch, "layouts": list(layouts), "group_names": group_names, "name": name, "strict": strict}
    from idc_toolkit.checks import non_negative_int

    bootstrap = non_negative_int("--bootstrap", bootstrap)
    drop_last_batch = non_negative_int("--drop-last-batch", drop_last_batch)
    proto = get_protocol(protocol, drop_last_batch)
    if proto.own_groups and (groups or group_by or iou_file or iou_column):
        raise EvaluationError(f"--protocol {proto.name} forms its own {proto.own_groups} and would drop --groups / "
                              "--group-by / IoU groups: run those with --protocol rcc")
    refs = proto.references(load_references(dataset, split, references, categories, id_column, groups, group_by,
                                            iou_file, iou_column))
    preds = proto.predictions(_predictions(predictions), _source(predictions))
    if strict and proto.misfit:
        raise EvaluationError(f"{proto.misfit}; refused under --strict")
    kept = proto.kept_ids(list(refs.captions))
    if len(kept) < len(refs.captions):
        refs.captions = {pid: refs.captions[pid] for pid in kept}
        preds = {pid: c for pid, c in preds.items() if pid in refs.captions}
    prep = prepare(preds, refs, allow_missing=allow_missing, drop_empty_references=drop_empty_references,
                   breakdown=breakdown)
    prep.hypotheses = proto.prepare(prep.hypotheses, prep.references, prep.categories, seed)
    from .layouts import RunLabel, applicable_layouts, group_names as read_group_names

    if out is not None:  # every check that needs no score is made before scoring
        layouts = applicable_layouts(layouts, prep.groups)
        read_group_names(group_names)
    label = RunLabel(name, proto.name, proto.comparable_with_rcc)
    prep.warnings += proto.notes
    run = {"protocol": proto.name, "drop_last_batch": drop_last_batch, "groups": path_content(groups),
           "group_by": group_by, "iou": path_content(iou_file) or iou_column, "predictions": digest(prep.hypotheses),
           "references": refs.fingerprint, "metrics": list(metrics or []), "allow_missing": allow_missing,
           "drop_empty_references": drop_empty_references, "breakdown": breakdown, "bootstrap": bootstrap,
           "seed": seed, "spice": bool(spice_jars), "layouts": sorted(layouts), "group_names": path_content(group_names),
           "name": name, "toolkit_version": __version__}
    folder = open_evaluation_folder(Path(out), run, overwrite, progress is not None) if out is not None else None
    if "METEOR" in resolve_families(metrics):
        from idc_toolkit.metrics.meteor import check_lengths

        ids = list(prep.hypotheses)
        check_lengths(ids, [prep.hypotheses[i] for i in ids], [prep.references[i] for i in ids])
    for w in prep.warnings:
        log.warning("warning: %s", w)
    if out is not None:
        preload_chart_libraries()
    result = score_groups(prep.hypotheses, prep.references, prep.groups, metrics, spice_jars, bootstrap, seed,
                          progress=progress, tokenize=proto.tokenize)
    if result.spice_status not in ("ok", "not requested"):
        log.warning("warning: %s", result.spice_status)
    meta = build_meta(result, refs.source, refs.fingerprint,
                      {"predictions": _source(predictions), "n_missing": prep.n_missing, "bootstrap": bootstrap,
                       "seed": seed, "arguments": arguments,
                       "protocol": {"name": proto.name, "description": proto.description,
                                    "comparable_with_rcc": proto.comparable_with_rcc},
                       "run": run, "run_fingerprint": digest(run)})
    meta["protocol"].update(proto.summary(prep.hypotheses, prep.categories))
    if out is None:
        return Evaluation(metrics_dict(result, meta, prep.warnings), result)
    data = write_outputs(Path(out), result, prep.hypotheses, prep.references, prep.categories, meta, prep.warnings,
                         layouts, group_names, label)
    folder.finalise(lambda final: None)  # every file is written (atomically): the record says the run is complete
    return Evaluation(data, result)


def compare_systems(a: Predictions, b: Predictions, *, dataset: Optional[str] = None, split: str = "test",
                    references: Optional[str] = None, categories: Optional[str] = None, id_column: str = "pair_id",
                    groups: Optional[str] = None, group_by: Optional[str] = None, iou_file: Optional[str] = None,
                    iou_column: Optional[str] = None,
                    out: Optional[str | Path] = None, metrics: Optional[Sequence[str]] = None,
                    allow_missing: bool = False, drop_empty_references: bool = False, bootstrap: int = 1000,
                    seed: int = 0, spice_jars: Optional[str] = None, overwrite: bool = False) -> dict[str, Any]:
    """The paired bootstrap test of two systems on the same pairs (Koehn 2004). ``out`` gets
    ``compare.json`` under the run engine's rule (:func:`~.outputs.open_compare_folder`)."""
    from idc_toolkit.metrics.bootstrap import paired_test
    from idc_toolkit.metrics.core import build_cache
    from idc_toolkit.metrics.meteor import one_jvm_set
    from idc_toolkit.metrics.registry import metric_class, resolve_families

    from .protocols import get_protocol

    from idc_toolkit import __version__
    from idc_toolkit.runs.fingerprint import digest

    from .outputs import COMPARE_FILE, open_compare_folder

    out = None if out is None else output_folder(out, EvaluationError)
    proto = get_protocol("rcc")
    refs = proto.references(load_references(dataset, split, references, categories, id_column, groups, group_by,
                                            iou_file, iou_column))
    preps = [prepare(proto.predictions(_predictions(p), _source(p)), refs, allow_missing=allow_missing, drop_empty_references=drop_empty_references,
                     breakdown=False) for p in (a, b)]
    if list(preps[0].references) != list(preps[1].references):
        raise EvaluationError("A and B do not cover the same pairs; a paired test needs the same pairs")
    folder = None
    if out is not None:  # checked before the bootstrap runs
        run = {"a": digest(preps[0].hypotheses), "b": digest(preps[1].hypotheses), "references": refs.fingerprint,
               "metrics": list(metrics or []), "bootstrap": bootstrap, "seed": seed, "spice": bool(spice_jars),
               "allow_missing": allow_missing, "drop_empty_references": drop_empty_references, "toolkit_version": __version__}
        folder = open_compare_folder(Path(out), run, overwrite)
    # a metric that needs what not every machine has (SPICE's jars) is only run when asked
    families = tuple(f for f in resolve_families(metrics) if not metric_class(f).optional or spice_jars)
    caches = []
    with one_jvm_set():  # A and B are scored one after the other: one METEOR JVM serves both
        try:
            for prep in preps:
                caches.append(build_cache(prep.hypotheses, prep.references, families, spice_jars))
            idx = list(range(len(caches[0].ids)))
            result = paired_test(caches[0], caches[1], idx, bootstrap, seed)
        finally:
            for cache in caches:
                cache.close()
    report = {"a": _source(a), "b": _source(b), "n_pairs": len(caches[0].ids), "resamples": bootstrap, "seed": seed, "metrics": result}
    if folder is not None:
        from idc_toolkit.runs.folder import write_json_atomic

        write_json_atomic(Path(out) / COMPARE_FILE, report)
        folder.finalise(lambda final: None)
    return report

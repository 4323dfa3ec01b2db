"""``idc-eval compare``: the paired bootstrap test of two systems on the same pairs (Koehn 2004),
where each side is one run or a group of runs of one system (seeds).

A side is a predictions file, ``{pair_id: caption}``, a comma-separated list of files, a list,
or a folder whose runs each hold a ``predictions.jsonl`` (``eval/seed_0/``, ``eval/seed_1/``,
...). A group's score in a resample is the mean of its runs' scores on the same resampled
pairs (:func:`~idc_toolkit.metrics.bootstrap.paired_group_test`); with one run a side, the test
is the two-system test exactly. Every run is also reported alone, with its own bootstrap
interval, and each side's mean and standard deviation across its runs (ddof 1), as papers that
report seeds print them (``compare.md`` / ``compare.tex``).
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from idc_toolkit.errors import EvaluationError
from idc_toolkit.stores import output_folder

from .args import CompareArgs
from .leaderboard import check_presentations, mean_sd, refuse_repeated_files, spread
from .predictions import Predictions, Prepared, References, prepare, read_predictions, source_name
from .scoring import asked_questions, choice_metric, judge_metric, load_references

Side = Union[Predictions, Sequence[Predictions]]
SIDES = ("a", "b")


def runs_of(side: Side, name: str) -> list[Predictions]:
    """The runs one side names (module docstring)."""
    if isinstance(side, Mapping):
        return [side]
    if isinstance(side, (list, tuple)):
        runs = [r for s in side for r in runs_of(s, name)]
    elif "," in str(side):
        runs = [p.strip() for p in str(side).split(",") if p.strip()]
    elif Path(side).is_dir():
        runs = [str(p) for p in sorted(Path(side).rglob("predictions.jsonl"))]
        if not runs:
            raise EvaluationError(f"{name} {side}: a folder of runs holds a predictions.jsonl in each run's folder; none found")
    else:
        runs = [str(side)]
    if not runs:
        raise EvaluationError(f"{name}: no predictions given")
    return runs


def compare_systems(a: Side, b: Side, args: Optional[CompareArgs] = None, **fields: Any) -> dict[str, Any]:
    """The paired test of ``a`` and ``b`` (module docstring); ``args`` is a :class:`~.args.CompareArgs`
    (``fields`` replace its values, or make one). ``out`` gets ``compare.json``, ``compare.md`` and
    ``compare.tex`` under the run engine's rule (:func:`~.outputs.open_compare_folder`). The steps
    are :func:`~.scoring.evaluate`'s, each run of a side loaded, prepared and judged on its own."""
    from idc_toolkit.options import with_fields

    from .outputs import open_compare_folder

    c = with_fields(CompareArgs, args, **fields)
    out = None if c.out is None else output_folder(c.out, EvaluationError)
    sides = {"a": runs_of(a, "A"), "b": runs_of(b, "B")}
    every = [*sides["a"], *sides["b"]]
    refuse_repeated_files(every, "compare: ")
    stated = check_presentations(every, c.allow_mixed_presentations, "compare: ")
    presentations = {"a": stated[:len(sides["a"])], "b": stated[len(sides["a"]):]}
    refs, preps = prepare_runs(sides, c)
    # MC_accuracy of each run's answers, where the dataset's items ask questions (and --metrics does not leave it out)
    choices = {s: [choice_metric(prep.hypotheses, prep, refs, c.metrics) for prep in p] for s, p in preps.items()}
    folder = None  # checked before the bootstrap runs
    if out is not None:
        folder = open_compare_folder(Path(out), compare_record(c, refs, preps, presentations, choices), c.overwrite)
    judges = judge_runs(c, refs, preps, out)
    result, alone, n_pairs = paired_scores(c, sides, preps, choices, judges)
    report = compare_report(c, sides, result, alone, n_pairs, choices, presentations)
    if folder is not None:
        write_compare(Path(out), report)
        folder.finalise(lambda final: None)
    return report


def prepare_runs(sides: dict[str, list[Predictions]], c: CompareArgs) -> tuple[References, dict[str, list[Prepared]]]:
    """The references (loaded once) and every run's prepared pairs, all of them the same pairs."""
    from .protocols import get_protocol

    proto = get_protocol("rcc")
    refs = proto.references(load_references(c))
    preps = {s: [prepare(proto.predictions(read_predictions(p), source_name(p)), refs, allow_missing=c.allow_missing,
                         drop_empty_references=c.drop_empty_references, breakdown=False) for p in runs]
             for s, runs in sides.items()}
    every = [p for s in preps.values() for p in s]
    if any(list(p.references) != list(every[0].references) for p in every):
        raise EvaluationError("the runs compared do not all cover the same pairs; a paired test needs the same pairs")
    return refs, preps


def compare_record(c: CompareArgs, refs: References, preps: dict[str, list[Prepared]],
                   presentations: dict[str, list[Optional[str]]], choices: dict[str, list[Any]]) -> dict[str, Any]:
    """What the comparison depends on (the fingerprint ``--out`` is held to)."""
    from idc_toolkit import __version__
    from idc_toolkit.runs.fingerprint import digest

    from idc_toolkit.metrics.implementation import resolve

    from .scoring import recorded_fields

    # the options' part derived from their fields, as an evaluation's is (a field added is recorded)
    resolved = replace(c, metrics=list(c.metrics or []), scorer=resolve(c.scorer))
    run = {**{s: (digest(p[0].hypotheses) if len(p) == 1 else [digest(r.hypotheses) for r in p]) for s, p in preps.items()},
           "references": refs.fingerprint, **recorded_fields(resolved),
           "toolkit_version": __version__}
    if any(p for ps in presentations.values() for p in ps):
        run["presentation"] = presentations
    if any(x is not None for xs in choices.values() for x in xs):
        from idc_toolkit.multiple_choice import fingerprint_fields

        run["multiple_choice"] = fingerprint_fields()
    if c.judge:
        from idc_toolkit.judge.run import judge_fields

        run["judge"] = judge_fields(c)
    return run


def judge_runs(c: CompareArgs, refs: References, preps: dict[str, list[Prepared]],
               out: Optional[Path]) -> dict[str, list[Any]]:
    """Each run's captions judged on their own (kept in ``OUT/judges/<a|b><k>``); ``None`` each without ``--judge``."""
    if not c.judge:
        return {s: [None] * len(p) for s, p in preps.items()}
    from idc_toolkit.judge import JUDGES_DIR

    return {s: [judge_metric(prep.hypotheses, prep, refs, c, None if out is None else Path(out) / JUDGES_DIR / f"{s}{k}",
                             None, None) for k, prep in enumerate(p)] for s, p in preps.items()}


def paired_scores(c: CompareArgs, sides: dict[str, list[Predictions]], preps: dict[str, list[Prepared]],
                  choices: dict[str, list[Any]], judges: dict[str, list[Any]]) -> tuple[dict[str, Any], list[Any], int]:
    """Every run scored (one session of each metric serves them all) and the paired test: the test's
    result, each run's own report (A's runs, then B's) and the number of pairs."""
    from idc_toolkit.metrics.bootstrap import paired_group_test
    from idc_toolkit.metrics.core import build_cache
    from idc_toolkit.metrics.implementation import using
    from idc_toolkit.metrics.registry import metric_class

    families = compared_families(c, sides, preps, choices)
    caches: dict[str, list[Any]] = {s: [] for s in SIDES}
    with contextlib.ExitStack() as sessions, using(c.scorer):
        for family in families:  # the runs are scored one after the other: what a family starts serves them all
            sessions.enter_context(metric_class(family).session())
        try:
            for s, p in preps.items():
                for prep, judge, choice in zip(p, judges[s], choices[s]):
                    cache = build_cache(prep.hypotheses, prep.references, families, c.spice_jars,
                                        extra=[m for m in (judge, choice) if m])
                    cache.release_tokens()  # every run's cache is kept for the test: their metrics' results, not tokens
                    caches[s].append(cache)
            idx = list(range(len(caches["a"][0].ids)))
            result, alone = paired_group_test(caches["a"], caches["b"], idx, c.bootstrap, c.seed)
        finally:
            for cache in (*caches["a"], *caches["b"]):
                cache.close()
    return result, alone, len(idx)


def compared_families(c: CompareArgs, sides: dict[str, list[Predictions]], preps: dict[str, list[Prepared]],
                      choices: dict[str, list[Any]]) -> tuple[str, ...]:
    """The metric families computed: those named (SPICE, which needs its jars, only with them);
    none where no pair has a reference, or where every run answers the dataset's questions."""
    from idc_toolkit.metrics.registry import metric_class, resolve_families

    first = next(iter(preps.values()))[0]
    answers_only = not c.metrics and all(x is not None and asked_questions(src)
                                         for s in sides for x, src in zip(choices[s], sides[s]))
    if not any(first.references.values()) or answers_only:
        return ()  # accuracy alone
    return tuple(f for f in resolve_families(c.metrics) if not metric_class(f).optional or c.spice_jars)


def compare_report(c: CompareArgs, sides: dict[str, list[Predictions]], result: dict[str, Any], alone: list[Any],
                   n_pairs: int, choices: dict[str, list[Any]],
                   presentations: dict[str, list[Optional[str]]]) -> dict[str, Any]:
    """``compare.json``: the test per metric, every run alone, each side's mean and sd across its runs."""
    reports = iter(alone)  # A's runs, then B's, in the order given
    runs = {s: [{"source": source_name(src), **next(reports),
                 **({"multiple_choice": choice.summary()} if choice is not None else {})}
                for src, choice in zip(sources, choices[s])] for s, sources in sides.items()}
    groups = {s: {"runs": len(r), "mean": {m: statistics.fmean(x["scores"][m] for x in r) for m in result},
                  "sd": {m: spread([x["scores"][m] for x in r]) for m in result}} for s, r in runs.items()}
    shown = {s: source_name(sides[s][0]) if len(sides[s]) == 1 else [source_name(x) for x in sides[s]] for s in sides}
    report = {**shown, "n_pairs": n_pairs, "resamples": c.bootstrap, "seed": c.seed, "metrics": result,
              "runs": runs, "groups": groups}
    if any(p for ps in presentations.values() for p in ps):  # how each side's models were shown the pairs, where known
        report["presentation"] = {s: _one_or_list(ps) for s, ps in presentations.items()}
    return report


def write_compare(out: Path, report: dict[str, Any]) -> None:
    """``compare.json``, ``compare.md`` and ``compare.tex``."""
    from idc_toolkit.files import write_text_atomic
    from idc_toolkit.runs.folder import write_json_atomic

    from .outputs import COMPARE_FILE

    md, tex = tables(report)
    write_json_atomic(out / COMPARE_FILE, report)
    write_text_atomic(out / "compare.md", md)
    write_text_atomic(out / "compare.tex", tex)


def _one_or_list(values: list[Any]) -> Any:
    return values[0] if len(set(values)) == 1 else values


def presentation_line(presentation: dict[str, Any]) -> str:
    """How each side's models were shown the pairs (``none stated``: predictions without a model run's record)."""
    def side(value: Any) -> str:
        return ", ".join(v or "none stated" for v in value) if isinstance(value, list) else value or "none stated"

    return f"Presentation: A {side(presentation['a'])}; B {side(presentation['b'])}."


def unparsed_line(report: dict[str, Any]) -> str:
    """The unparsed answers behind each run's MC_accuracy (empty where no run answered questions)."""
    counts = [f"{s.upper()}{k} {r['multiple_choice']['unparsed']} of {r['multiple_choice']['items']}"
              for s in ("a", "b") for k, r in enumerate(report["runs"][s]) if r.get("multiple_choice")]
    return f"Unparsed answers (counted as not correct in MC_accuracy): {', '.join(counts)}." if counts else ""


def signed(value: float, digits: int = 2) -> str:
    """A difference with its sign, ``0.00`` where it rounds to zero (never ``-0.00``: no direction)."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def tables(report: dict[str, Any]) -> tuple[str, str]:
    """One row per run (score [95% interval]) and per side (mean (sd) across its runs), x100,
    and the paired test's p-value per metric."""
    from .paper_tables import SHORT, RunLabel, markdown_and_latex

    metrics = list(report["metrics"])
    header = ["run", *(SHORT.get(m, m) for m in metrics)]
    rows = []
    for s in ("a", "b"):
        for k, r in enumerate(report["runs"][s]):
            rows.append([f"{s.upper()}{k} {Path(r['source']).parent.name or r['source']}",
                         *(f"{100 * r['scores'][m]:.1f} [{100 * r['ci'][m][0]:.1f}, {100 * r['ci'][m][1]:.1f}]"
                           if m in r["ci"] else f"{100 * r['scores'][m]:.1f}" for m in metrics)])
        g = report["groups"][s]
        rows.append([f"{s.upper()} (mean (sd) of {g['runs']})", *(mean_sd(g["mean"][m], g["sd"][m]) for m in metrics)])
    rows.append(["p (A = B)", *(f"{report['metrics'][m]['p_value']:.3f}" for m in metrics)])
    caption = (f"A against B on the same {report['n_pairs']} pairs, x100: each run with its 95% bootstrap interval, "
               f"each side's mean (sd) across runs, and the paired bootstrap p-value ({report['resamples']} resamples).")
    unparsed = unparsed_line(report)
    if unparsed:
        caption += " " + unparsed
    if report.get("presentation"):
        caption += " " + presentation_line(report["presentation"])
    return markdown_and_latex(header, rows, caption, RunLabel(), "compare")

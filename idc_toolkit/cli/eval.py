"""``idc-eval``: score predictions exactly as coco-caption does, with per-category breakdowns.

    idc-eval --predictions P (--dataset DS [--split test] | --references R [--categories C]) --out DIR
    idc-eval --model blip2idc|davir|vlm --base-model NAME_OR_PATH [--adapter PATH] --dataset DS --out DIR
    idc-eval compare A B (--dataset DS | --references R) [--out DIR] [--bootstrap N]   (A, B: a run or a group of seeds)
    idc-eval lmms-tasks [--dataset TASK=PATH ...] [--out DIR]   (the lmms-eval task pack)
    idc-eval check-references FILE [--dataset DS [--split S]]   (every problem of a file, one line each)
    idc-eval masks --dataset DS --reference COLUMN|FOLDER [--column C | --predicted FOLDER]   (masks against ground truth)
    idc-eval leaderboard FILE... (--dataset DS | --references R) [--names ...] [--protocol P] [--out DIR]   (one table)
    idc-eval agreement EVAL... [--out DIR]   (agreement between judges of the same captions)

Starts fast: nothing imports torch or transformers unless ``--model`` asks for a model.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import IDCError
from ..options import option
from ..stores import shown_uri
from . import common

log = logging.getLogger("idc_toolkit.eval")


def _add_args(p: argparse.ArgumentParser, args_cls: type, required: tuple[str, ...] = ()) -> None:
    """The options of ``args_cls`` (:mod:`idc_toolkit.evaluators.args`); --dataset and
    --references exclude each other and one of them is required; the judge's have their group."""
    from ..judge.args import JudgeArgs
    from ..options import add_options, cli_fields

    judge = cli_fields(JudgeArgs) if issubclass(args_cls, JudgeArgs) else []
    add_options(p.add_mutually_exclusive_group(required=True), args_cls, ["dataset", "references"])
    add_options(p, args_cls, [n for n in cli_fields(args_cls) if n not in ("dataset", "references", *judge)], required=required)
    if judge:
        add_options(p.add_argument_group("LLM judge (docs/scoring.md)"), args_cls, judge)


def _model_names() -> list[str]:
    from ..models.registry import MODELS

    return MODELS.names()


@dataclass
class ScoreWhat:
    """What ``idc-eval`` scores (one of the two) and how it reports."""

    predictions: Optional[str] = option(None, "JSON {id: caption}, coco results list, or JSONL")
    model: Optional[str] = option(None, "run a checkpoint first (`--model NAME --help` shows its options)",
                                  choices=_model_names)
    progress: bool = option(True, "hide progress bars")


def make_parser(model: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``model``, that runner's own options are added (and shown by --help)."""
    from ..models.args import GenerateArgs
    from ..models.registry import MODELS
    from ..options import add_options, cli_fields

    def describe() -> str:  # each subcommand's parser imports its module: only for --help
        subcommands = "; ".join(f"`idc-eval {name}`: {make().description.split(': ')[0].rstrip('.')}"
                                for name, (make, _) in SUBCOMMANDS.items())
        return ("Score image-difference captions (coco-caption metrics), or run a checkpoint and "
                f"score it. Subcommands (each with --help): {subcommands}.")

    p = common.parser("idc-eval", describe)
    add_options(p.add_mutually_exclusive_group(required=True), ScoreWhat, ["predictions", "model"])
    m = p.add_argument_group("checkpoint runs (--model)")
    add_options(m, GenerateArgs, cli_fields(GenerateArgs))
    common.add_engine_options(p.add_argument_group("run engine (--model's captions, --judge's judgements)"))
    if model in MODELS:
        from ..models.registry import get_runner_class

        cls = get_runner_class(model)
        cls.add_arguments(p.add_argument_group(f"{model} options", cls.summary))
    from ..evaluators.args import EvalArgs

    _add_args(p, EvalArgs, required=("out",))
    add_options(p, ScoreWhat, ["progress"])
    return p


def make_compare_parser() -> argparse.ArgumentParser:
    p = common.parser("idc-eval compare", "Paired bootstrap test of two systems, each one run or a group of runs (seeds).")
    side = ("predictions of system {}: a file, comma-separated files (its seeds), or a folder whose runs each hold a "
            "predictions.jsonl")
    p.add_argument("a", help=side.format("A"))
    p.add_argument("b", help=side.format("B"))
    from ..evaluators.args import CompareArgs

    _add_args(p, CompareArgs)
    return p


#: bytes a predicted pair takes at least in any predictions format (an id, a short caption, JSON's marks)
BYTES_PER_PAIR = 48


def likely_pairs(predictions: str | None) -> int:
    """About how many pairs a predictions file holds, from its size alone (a file not there: 0):
    what the scoring's helper processes are started for before the file is read."""
    try:
        return os.path.getsize(predictions) // BYTES_PER_PAIR if predictions else 0
    except OSError:
        return 0


def scoring_process() -> None:
    """A process that scores captions and runs no model: glibc's thresholds fixed, so the arrays
    come from a heap that gives back what it frees (measured on scoring alone: a model's tensors
    are left to glibc's own thresholds)."""
    from ..malloc import fix_thresholds

    fix_thresholds()


def run_score(args) -> dict:
    from ..metrics.registry import resolve_families

    from ..metrics.implementation import using
    from ..metrics.registry import metric_class

    scoring_process()
    pairs = likely_pairs(args.predictions)
    with using(args.scorer):  # what a family needs loads while everything below imports, reads, tokenizes
        for family in resolve_families(args.metrics):
            metric_class(family).prewarm(pairs)
    from ..evaluators.outputs import markdown_table
    from ..evaluators.scoring import evaluate

    def progress(line: str) -> None:
        if args.progress:
            print(f"[idc-eval] {line}", file=sys.stderr, flush=True)

    from ..evaluators.args import EvalArgs
    from ..options import from_namespace

    ev = evaluate(args.predictions, from_namespace(EvalArgs, args), progress=progress if args.progress else None,
                  engine=common.engine_args(args))
    if ev is None:  # a --shard job or a torchrun rank other than 0 of a judged run
        print(f"{shown_uri(str(args.out))}: this job's judgements are written; the job that completes the set scores")
        return {}
    from ..evaluators.outputs import protocol_line

    print(protocol_line(ev.metrics["meta"]))  # metrics.md's first line
    print(markdown_table(ev.result))
    if ev.metrics["meta"].get("judge_answers"):
        from ..metrics.judge_columns import answers_line

        print(answers_line(ev.metrics["meta"]["judge_answers"]))
    if ev.metrics["meta"].get("multiple_choice"):
        from ..metrics.mc_accuracy import counts_line

        print(counts_line(ev.metrics["meta"]["multiple_choice"]))
    print(f"(scores x100; written to {shown_uri(str(args.out))})")
    return ev.metrics


def make_lmms_parser() -> argparse.ArgumentParser:
    from ..evaluators.lmms_tasks import LmmsTasksArgs
    from ..options import add_options, cli_fields

    p = common.parser("idc-eval lmms-tasks", "Write the lmms-eval task pack (idc_spot_the_diff, idc_clevr_change, "
                                             "idc_clevr_dc, idc_ier, idc_levir_cc, idc_emu_edit), scored by this "
                                             "toolkit's scorer, and print the --include_path to pass to lmms-eval.")
    add_options(p, LmmsTasksArgs, cli_fields(LmmsTasksArgs))
    return p


def run_lmms_tasks(args) -> None:
    from ..cache import cache_dir
    from ..evaluators.lmms_tasks import LmmsTasksArgs, write_task_pack
    from ..options import from_namespace

    a = from_namespace(LmmsTasksArgs, args)
    out = Path(a.out) if a.out else cache_dir("lmms_tasks")
    # the default folder is the toolkit's own cache: a pack with other datasets simply replaces ours there
    files = write_task_pack(out, a.datasets(), split=a.split, max_new_tokens=a.max_new_tokens,
                            overwrite=a.overwrite or not a.out)
    for task, path in files.items():
        print(f"{task}: {path}")
    print(f"--include_path {out.resolve()}")
    print(f"e.g. lmms-eval --model qwen2_vl --model_args pretrained=Qwen/Qwen2-VL-2B-Instruct --tasks idc_clevr_change "
          f"--include_path {out.resolve()}")


def make_check_parser() -> argparse.ArgumentParser:
    from ..evaluators.check_references import CheckReferencesArgs
    from ..options import add_options, cli_fields

    p = common.parser("idc-eval check-references", "Check a reference or predictions file before scoring: JSON that "
                                                   "does not parse, ids given twice, non-string captions, ids the "
                                                   "dataset does not have; one line each, exit 1 on any (empty captions: "
                                                   "a warning).")
    p.add_argument("file", help="a coco-caption annotation file, {id: caption(s)}, a coco results list or JSON lines")
    add_options(p, CheckReferencesArgs, cli_fields(CheckReferencesArgs))
    return p


def make_masks_parser() -> argparse.ArgumentParser:
    from ..evaluators.mask_scores import MaskEvalArgs
    from ..options import add_options, cli_fields

    p = common.parser("idc-eval masks", "Score change masks against ground truth: per-class IoU, mIoU, precision, "
                                        "recall and F1, per category, as the change-detection papers do.")
    add_options(p, MaskEvalArgs, cli_fields(MaskEvalArgs))
    return p


def run_masks(args) -> None:
    from ..evaluators.mask_scores import MaskEvalArgs, evaluate_masks, markdown
    from ..options import from_namespace

    out = evaluate_masks(from_namespace(MaskEvalArgs, args))
    for note in out["notes"]:
        log.warning("warning: %s", note)
    print(markdown(out))


def _inputs_parser(prog: str, description: str, name: str, nargs: str, help: str, args_cls: type) -> argparse.ArgumentParser:
    """A subcommand taking a list of inputs (``name``) and the fields of ``args_cls`` as options."""
    from ..options import add_options, cli_fields

    p = common.parser(prog, description)
    p.add_argument(name, nargs=nargs, help=help)
    add_options(p, args_cls, cli_fields(args_cls))
    return p


def make_leaderboard_parser() -> argparse.ArgumentParser:
    from ..evaluators.leaderboard import LeaderboardArgs

    # "*", not "+": files that --names swallowed are named in run_leaderboard's error, not as "files" missing
    return _inputs_parser("idc-eval leaderboard", "Re-score several predictions files under one protocol and one "
                                                  "tokenization into one table (markdown, LaTeX, CSV).",
                          "files", "*", "predictions files (any format idc-eval reads)", LeaderboardArgs)


def run_leaderboard(args) -> None:
    from ..evaluators.leaderboard import LeaderboardArgs, leaderboard, tables
    from ..options import from_namespace

    scoring_process()

    if not args.files:
        taken = [n for n in args.names or [] if Path(n).is_file()]
        if taken:
            raise IDCError(f"no predictions file given: --names took {', '.join(taken)} as labels; put the files first "
                           "(idc-eval leaderboard FILE... --names LABEL...) or end the labels with --")
        raise IDCError("no predictions file given: idc-eval leaderboard FILE... (--dataset DS | --references R)")

    out = leaderboard(args.files, from_namespace(LeaderboardArgs, args))
    print(tables(out)[0], end="")


def make_agreement_parser() -> argparse.ArgumentParser:
    from ..evaluators.agreement import AgreementArgs

    return _inputs_parser("idc-eval agreement", "Agreement between judges: Cohen's kappa per question and Kendall's tau "
                                                "of the systems' rankings, from judged evaluations of the same captions.",
                          "evaluations", "+", "evaluation folders written by idc-eval --judge MODEL --out DIR", AgreementArgs)


def run_agreement(args) -> None:
    from ..evaluators.agreement import AgreementArgs, judge_agreement, markdown
    from ..options import from_namespace

    print(markdown(judge_agreement(args.evaluations, from_namespace(AgreementArgs, args))), end="")


def run_check(args) -> int:
    from ..evaluators.check_references import CheckReferencesArgs, check_file
    from ..options import from_namespace

    a = from_namespace(CheckReferencesArgs, args)
    problems, warnings, counts = check_file(args.file, a.dataset, a.split)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{args.file}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{args.file}: ok ({counts['ids']} ids, {counts['captions']} captions)")
    return 0


def run_compare(args) -> dict:
    from ..evaluators.compare import compare_systems

    from ..evaluators.args import CompareArgs
    from ..options import from_namespace

    scoring_process()

    report = compare_systems(args.a, args.b, from_namespace(CompareArgs, args))
    if any(g["runs"] > 1 for g in report["groups"].values()):
        from ..evaluators.compare import tables

        print(tables(report)[0])
    elif report.get("presentation"):
        from ..evaluators.compare import presentation_line

        print(presentation_line(report["presentation"]))
    print("| metric | A (x100) | B (x100) | A-B (x100) | 95% bootstrap interval of A-B | p-value |\n"
          "| --- | ---: | ---: | ---: | --- | ---: |")
    from ..evaluators.compare import signed

    for m, v in report["metrics"].items():
        print(f"| {m} | {100 * v['a']:.2f} | {100 * v['b']:.2f} | {signed(100 * v['difference'])} "
              f"| [{signed(100 * v['ci_low'])}, {signed(100 * v['ci_high'])}] | {format_p_value(v['p_value'], args.bootstrap)} |")
    from ..evaluators.compare import unparsed_line

    if unparsed_line(report):
        print(unparsed_line(report))
    return report


def format_p_value(p: float, resamples: int) -> str:
    """A bootstrap p-value as far as the resamples resolve it: ``< 0.001`` rather than ``0.0000``
    (with N resamples nothing below 1/N is measured)."""
    floor = max(0.001, 1.0 / max(1, resamples))
    return f"< {floor:g}" if p < floor else f"{p:.3f}"


def run_model(args) -> None:
    """Generate with a checkpoint (resumable, fingerprinted), then score like --predictions."""
    from ..devices import resolve_device
    from ..models.args import GenerateArgs
    from ..models.generation import generate_predictions
    from ..models.registry import get_runner_class
    from ..options import from_namespace
    from ..runs.ranks import dist_info
    from ..runs.rows import check_hub_repo

    if not args.dataset:
        raise IDCError("--model needs --dataset (the pairs to caption and their references)")
    if not args.base_model:
        raise IDCError("--model needs --base-model (a Hub name or a local folder)")
    cls = get_runner_class(args.model)
    cls.check_base_model(args.base_model)
    check_hub_repo(args.base_model, "model", "--base-model", args.revision)
    rank, world, local_rank = dist_info()
    run = from_namespace(GenerateArgs, args)
    run.device = resolve_device(run.device)
    if world > 1 and run.device == "cuda":
        run.device = f"cuda:{local_rank}"
    path = generate_predictions(cls, run, dataset=args.dataset, split=args.split, out_dir=Path(args.out),
                                options=cls.options(args), overwrite=args.overwrite, progress=args.progress,
                                engine=common.engine_args(args))
    back = None
    if args.reverse:  # the same pairs, before and after swapped: what reversibility is scored on
        from ..models.generation import REVERSED_DIR

        back = generate_predictions(cls, run, dataset=args.dataset, split=args.split, out_dir=Path(args.out) / REVERSED_DIR,
                                    options=cls.options(args), overwrite=args.overwrite, progress=args.progress,
                                    engine=common.engine_args(args), swap=True)
    if rank != 0 and not args.judge:  # rank 0 scores what every rank generated (every rank judges it)
        return
    if path is None or (args.reverse and back is None):  # one --shard job of several: the one completing the set scores
        print(f"{args.out}: this --shard job is done; the predictions are written, and scored, by the job that completes the set")
        return
    log.info("predictions: %s", path)
    if args.reverse:
        args.reversed = str(back)
    if args.predict_only:
        return
    args.predictions = str(path)
    args.shard = "0/1"  # the job that completes a --shard set judges all of it (the other jobs have ended)
    if args.limit is not None:
        args.allow_missing = True
    run_score(args)


#: ``idc-eval NAME ...`` -> (its parser, what runs it: an exit code, or anything else for 0)
SUBCOMMANDS = {"compare": (make_compare_parser, run_compare), "check-references": (make_check_parser, run_check),
               "masks": (make_masks_parser, run_masks), "leaderboard": (make_leaderboard_parser, run_leaderboard),
               "lmms-tasks": (make_lmms_parser, run_lmms_tasks), "agreement": (make_agreement_parser, run_agreement)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def work() -> int:
        if argv and argv[0] in SUBCOMMANDS:
            make, run = SUBCOMMANDS[argv[0]]
            args = make().parse_args(argv[1:])
            common.setup_logging(args)
            code = run(args)
            return code if isinstance(code, int) else 0
        args = make_parser(common.model_name(argv)).parse_args(argv)
        common.setup_logging(args)
        if args.model:
            run_model(args)
        else:
            run_score(args)
        return 0

    return common.run("idc-eval", work)


if __name__ == "__main__":
    sys.exit(main())

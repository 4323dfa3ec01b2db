"""Judging a run's captions on the run engine: batched, resumable, sharded, on ranks or Ray.

The judgements of an evaluation written to ``--out`` live in ``OUT/judge/`` (their own run:
the judge's name, revision, weights' hash and dtype, the prompts' hash and the judged pairs are
its fingerprint), so rescoring the same captions with other options (``--bootstrap``,
``--layout``) judges nothing again, and a killed run resumes after its last finished part.
Without ``--out`` the judgements are made in a temporary folder and not kept.

Every answer the judge gives (yes, no, unparsed) is also kept in a cache outside ``--out``
(``$IDC_CACHE/judge_answers.sqlite``; ``IDC_JUDGE_CACHE=0`` turns it off, ``=PATH`` moves it),
keyed by the judge's identity and the prompt: ``compare``, ``leaderboard`` and reruns into other
folders ask no question twice. A judge named only by a Hub id with no ``--judge-revision`` is
not pinned, so its answers are not cached. A failed question is never cached: a rerun of a
judged evaluation whose judgements hold failures asks those again, and only those.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..errors import EvaluationError, RunError
from ..files import write_text_atomic
from ..runs import EngineArgs, PartOutput, RunFolder, digest, path_content, run_job
from ..runs.parquet import write_parts_jsonl
from ..runs.ranks import barrier
from ..runs.rows import ListRows
from ..urls import mask_url
from . import JUDGE_DIR
from .answers import FAILED, FINAL, NO, YES
from .args import JudgeArgs
from .prompts import PROMPT_SHA
from .questions import ask, default_differences, record

JUDGEMENTS = "judgements.jsonl"
PAIRS_PER_PART = 64  # a killed run loses at most this many pairs' judgements
CACHE_ENV = "IDC_JUDGE_CACHE"


def answer_cache(identity: dict[str, Any]):
    """The judge's answer cache (``None`` where the judge is not pinned or the cache is off)."""
    if not (identity.get("sha256") or identity.get("revision") or identity.get("endpoint")):
        return None
    from ..metrics.text_cache import TextCache

    cache = TextCache(CACHE_ENV, "judge_answers.sqlite", "answers", digest({k: v for k, v in identity.items()}))
    return cache if cache.db is not None else None


class JudgeTask:
    """The engine's per-batch function: every question of a batch of pairs, each distinct
    prompt asked once (LEVIR-CC's no-change pairs share their captions and references)."""

    def __init__(self, args: JudgeArgs, progress: bool = True, known: Optional[dict[str, str]] = None):
        from datasets import Features, Sequence as Seq, Value

        self.args, self.batch_size, self.progress = args, args.judge_batch_size, progress
        counts = {kind: Value("int32") for kind in ("stated", "supported", "no_change", "inverse")}
        self.features = Features({"pair_id": Value("string"), "differences": Seq(Value("string")),
                                  "stated": Seq(Value("bool")), "claims": Seq(Value("string")),
                                  "supported": Seq(Value("bool")), "no_change": Value("bool"),
                                  "says_no_change": Value("bool"), "reversed": Value("string"), "inverse": Value("bool"),
                                  "asked": counts, "unparsed": Seq(Value("string")), "failed": Seq(Value("string"))})
        self.judge = None
        self.cache = None
        self.answers: dict[str, str] = dict(known or {})

    def setup(self, device: str) -> None:
        if self.judge is None:
            from .backends import make_judge

            if not self.progress:
                from ..devices import quiet_model_loading

                quiet_model_loading()
            self.judge = make_judge(self.args, device)
            self.cache = answer_cache(judge_fields(self.args))

    def __call__(self, split: str, rows: list[dict[str, Any]], start: int) -> PartOutput:
        asked = [ask(r["pair_id"], r["caption"], r["references"], r["differences"], r["no_change"], r.get("reversed"))
                 for r in rows]
        new = list(dict.fromkeys(p for q in asked for p in q.prompts() if p not in self.answers))
        if self.cache is not None:
            cached = self.cache.get(new)
            self.answers.update((new[i], value) for i, value in cached.items() if value in FINAL)
            new = [p for p in new if p not in self.answers]
        replies = self.judge.answer(new)
        self.answers.update(zip(new, replies))
        done = [(p, a) for p, a in zip(new, replies) if a in FINAL]
        if self.cache is not None and done:
            self.cache.put([p for p, _ in done], [a for _, a in done])
        return PartOutput([record(q, self.answers) for q in asked], {"questions": len(new)})


def judge_device(args: JudgeArgs) -> str:
    """Where this process's judge runs (under torchrun, each rank on its own GPU)."""
    from ..devices import resolve_device
    from ..runs.ranks import dist_info

    device = "cpu" if args.judge_endpoint else resolve_device(args.judge_device)
    _, world, local_rank = dist_info()
    return f"cuda:{local_rank}" if world > 1 and device == "cuda" else device


def judge_fields(args: JudgeArgs) -> dict[str, Any]:
    """What the judgements depend on besides the pairs (the dtype as this machine resolves it)."""
    from ..devices import resolve_dtype

    device = judge_device(args)
    endpoint = args.judge_endpoint
    dtype = "served" if endpoint else str(resolve_dtype(args.judge_dtype, device)).removeprefix("torch.")
    decoding = f"temperature 0, at most {args.judge_max_tokens} tokens" if endpoint else "greedy yes/no"
    return {"judge": args.judge, "revision": args.judge_revision, "sha256": None if endpoint else path_content(args.judge),
            "endpoint": mask_url(endpoint) if endpoint else None, "dtype": dtype, "prompts": PROMPT_SHA, "decoding": decoding}


def known_answers(rows: list[dict[str, Any]], records: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The yes / no answers of earlier judgements of ``rows``, by prompt (what a rerun need not ask again)."""
    known: dict[str, str] = {}
    for row in rows:
        rec = records.get(row["pair_id"])
        if rec is None:
            continue
        q = ask(row["pair_id"], row["caption"], row["references"], row["differences"], row["no_change"], row.get("reversed"))
        pairs = [*zip(q.stated, rec["stated"]), *zip(q.supported, rec["supported"]),
                 (q.says_no_change, rec["says_no_change"]), (q.inverse, rec["inverse"])]
        known.update((p, YES if value else NO) for p, value in pairs if p and value is not None)
    return known


def pair_rows(hypotheses: Mapping[str, str], references: Mapping[str, Sequence[str]], no_change: Mapping[str, bool],
              differences: Optional[Mapping[str, Sequence[str]]] = None,
              reversed_captions: Optional[Mapping[str, str]] = None) -> list[dict[str, Any]]:
    """The engine's source rows: one per pair, in the references' order (``reversed_captions``:
    the pairs' captions with before and after swapped, where reversibility is judged too)."""
    rows = [{"pair_id": pid, "caption": hypotheses[pid], "references": list(refs),
             "differences": list(differences[pid]) if differences is not None else default_differences(refs),
             "no_change": bool(no_change.get(pid))} for pid, refs in references.items()]
    if reversed_captions is not None:  # (a key only then: the judgements of a run without it keep their fingerprint)
        for row in rows:
            row["reversed"] = reversed_captions[row["pair_id"]]
    return rows


def judge_pairs(rows: list[dict[str, Any]], args: JudgeArgs, out: Optional[Path], *, engine: Optional[EngineArgs] = None,
                overwrite: bool = False, progress: bool = True) -> Optional[dict[str, dict[str, Any]]]:
    """Every pair's judgement record (:func:`~.questions.record`), by pair id; ``None`` when this
    job (a ``--shard`` of several, a rank other than 0) does not hold them all."""
    from ..runs.ranks import dist_info

    if not args.judge:
        raise EvaluationError("no judge named (--judge MODEL)")
    rank = dist_info()[0]
    if out is None:
        with tempfile.TemporaryDirectory(prefix="idc-judge-") as tmp:
            return judge_pairs(rows, args, Path(tmp) / JUDGE_DIR, engine=engine, progress=progress)
    fields = {**judge_fields(args), "pairs": digest({"rows": rows})}
    folder = RunFolder(out, "judgement", fields, owned=(JUDGEMENTS,), card_record=False, progress=progress)
    if dist_info()[1] > 1:  # every rank opens together (one barrier each): no second attempt
        folder.open(overwrite)
    else:
        try:  # the same judgements are kept under --overwrite too: rescoring with other options judges nothing again
            folder.open(False)
        except RunError:
            if not overwrite:
                raise
            folder.open(True)
    final = Path(out) / JUDGEMENTS
    if folder.complete and rank == 0 and dist_info()[1] == 1 and final.is_file():
        return _ask_failed_again(rows, args, final, progress)
    if not folder.complete:
        outcome = run_job(folder, {"test": ListRows(rows)}, JudgeTask(args, progress), rows_per_part=PAIRS_PER_PART, engine=engine,
                          device=judge_device(args), progress=progress, desc=f"judge {args.judge}")
        if outcome.complete and outcome.is_main:
            folder.finalise(lambda stage_dir: write_parts_jsonl(folder, "test", stage_dir / JUDGEMENTS), order=(JUDGEMENTS,))
        barrier()
        if not outcome.complete or rank != 0:
            return None
    elif rank != 0:
        return None
    return _read(final)


def _ask_failed_again(rows: list[dict[str, Any]], args: JudgeArgs, final: Path, progress: bool) -> dict[str, dict[str, Any]]:
    """Finished judgements, with the pairs where a question failed judged again (only their failed
    questions are asked: the others' answers are known) and the file rewritten atomically."""
    earlier = _read(final)
    again = [row for row in rows if earlier.get(row["pair_id"], {}).get(FAILED)]
    if not again:
        return earlier
    task = JudgeTask(args, progress, known_answers(again, earlier))
    task.setup(judge_device(args))
    try:
        redone = {rec["pair_id"]: rec for rec in task("test", again, 0).rows}
    finally:
        task.judge.close()
    merged = {pid: redone.get(pid, rec) for pid, rec in earlier.items()}
    write_text_atomic(final, "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in merged.values()))
    return merged


def _read(path: Path) -> dict[str, dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return {rec["pair_id"]: rec for rec in map(json.loads, fh)}

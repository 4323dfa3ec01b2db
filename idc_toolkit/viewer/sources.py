"""What ``idc-view`` shows, read from the folders the toolkit wrote.

An evaluation folder (``idc-eval --predictions`` or ``--model``) gives its run's name, split,
protocol, tables (``metrics.json``) and, per pair, the caption and the scores exactly as its
``per_pair.csv`` holds them: the viewer never recomputes a score, so what it sorts by is what
the evaluation reported. A dataset split gives the pairs' images and every other column
(entities, phrases, augmentation provenance) as stored.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import IDCError
from ..escape import csv_text_read
from ..files import read_json

#: per_pair.csv columns that are not scores (the last three: a multiple-choice item's letter read, correct letter, outcome)
PER_PAIR_TEXT = ("pair_id", "category", "prediction", "references", "groups", "judgement", "mc_letter", "mc_correct_letter",
                 "mc_result")
#: the ``name`` an evaluation gets when ``--name`` was not given
DEFAULT_RUN_NAME = "this run"


@dataclass(frozen=True)
class PairResult:
    """One pair of one evaluation, as its ``per_pair.csv`` row holds it (scores as written, 0-1 scale; CIDEr 0-10)."""

    caption: str
    references: tuple[str, ...]
    category: str
    scores: dict[str, float]
    groups: tuple[str, ...] = ()
    judgement: str = ""  #: what ``--judge`` said of the pair (per_pair.csv's judgement column)
    choice: str = ""  #: a multiple-choice item's answer as read: the letter, the correct letter, the outcome


@dataclass(frozen=True)
class Evaluation:
    """One ``idc-eval`` output folder."""

    name: str
    folder: Path
    split: Optional[str]
    protocol: str
    comparable_with_rcc: bool
    metrics: dict[str, Any]  # metrics.json as written
    pairs: dict[str, PairResult]
    score_names: tuple[str, ...]
    attention_dir: Optional[Path]
    content_hash: str = field(default="")
    #: how the model was shown the pairs (``--presentation``), where its run records it
    presentation: Optional[str] = None

    def table(self) -> dict[str, Any]:
        """The evaluation's overall, change-only and per-group rows and bootstrap intervals, for the page's header."""
        rows = {"overall": self.metrics.get("overall") or {}}
        if self.metrics.get("change_only"):
            rows["change_only"] = self.metrics["change_only"]
        rows.update(self.metrics.get("by_category") or {})
        answers = (self.metrics.get("meta") or {}).get("judge_answers")
        if answers:
            from ..metrics.judge_columns import answers_line

            answers = answers_line(answers)
        choices = (self.metrics.get("meta") or {}).get("multiple_choice")
        if choices:
            from ..metrics.mc_accuracy import counts_line

            choices = counts_line(choices)
        return {"name": self.name, "split": self.split, "protocol": self.protocol, "presentation": self.presentation,
                "comparable_with_rcc": self.comparable_with_rcc, "rows": rows, "ci": self.metrics.get("ci") or {},
                "metrics": [m for m in self.score_names], "judge_answers": answers or "", "choice_answers": choices or ""}


def read_evaluation(folder: Path | str) -> Evaluation:
    """An evaluation folder; one-line errors naming the file for anything missing or malformed."""
    folder = Path(folder)
    metrics_file, per_pair_file = folder / "metrics.json", folder / "per_pair.csv"
    for f in (metrics_file, per_pair_file):
        if not f.is_file():
            raise IDCError(f"{folder}: no {f.name}; pass a folder written by idc-eval --predictions or --model")
    metrics = read_json(metrics_file, IDCError, "metrics.json")
    if not isinstance(metrics, dict) or not isinstance(metrics.get("meta"), dict):
        raise IDCError(f"{metrics_file}: not an idc-eval metrics.json (no meta)")
    meta = metrics["meta"]
    arguments = meta.get("arguments") or {}
    protocol = meta.get("protocol") or {"name": "rcc", "comparable_with_rcc": True}
    name = arguments.get("name") or DEFAULT_RUN_NAME
    if name == DEFAULT_RUN_NAME:
        name = folder.resolve().name
    raw = per_pair_file.read_bytes()
    pairs, score_names = _read_per_pair(per_pair_file, raw)
    attention = folder / "attention"
    return Evaluation(name=name, folder=folder, split=arguments.get("split") if arguments.get("dataset") else None,
                      protocol=str(protocol.get("name", "rcc")), comparable_with_rcc=bool(protocol.get("comparable_with_rcc", True)),
                      metrics=metrics, pairs=pairs, score_names=score_names,
                      attention_dir=attention if attention.is_dir() else None,
                      content_hash=hashlib.sha256(raw + metrics_file.read_bytes()).hexdigest()[:16],
                      presentation=meta.get("presentation") if isinstance(meta.get("presentation"), str) else None)


def _read_per_pair(path: Path, raw: bytes) -> tuple[dict[str, PairResult], tuple[str, ...]]:
    text = raw.decode("utf-8")
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = reader.fieldnames or []
    if "pair_id" not in header or "prediction" not in header:
        raise IDCError(f"{path}: expected the columns pair_id, prediction, references and one per metric; found {header}")
    score_names = tuple(c for c in header if c not in PER_PAIR_TEXT)
    pairs: dict[str, PairResult] = {}
    for line, row in enumerate(reader, start=2):
        row = {k: csv_text_read(v) if k in PER_PAIR_TEXT and isinstance(v, str) else v for k, v in row.items()}
        try:
            references = tuple(json.loads(row.get("references") or "[]"))
            scores = {m: float(row[m]) for m in score_names if row.get(m) not in (None, "")}
        except ValueError as exc:
            raise IDCError(f"{path}, line {line} (pair {row.get('pair_id')!r}): {exc}") from None
        groups = tuple(g for g in (row.get("groups") or "").split(";") if g)
        choice = ""
        if row.get("mc_result"):
            choice = (f"read {row.get('mc_letter') or 'no letter'}, correct {row.get('mc_correct_letter')}: "
                      f"{row['mc_result']}")
        pairs[row["pair_id"]] = PairResult(caption=row["prediction"], references=references, category=row.get("category") or "",
                                           scores=scores, groups=groups, judgement=row.get("judgement") or "", choice=choice)
    return pairs, score_names


def check_card(dataset: Path | str) -> None:
    """A local dataset's card, read before anything else (:func:`~idc_toolkit.card_data.read_card_data`
    refuses YAML that does not parse or holds a tag that would build a Python object, in one line
    naming its file and line)."""
    from ..card_data import read_card_data

    read_card_data(dataset)


def unique_names(evaluations: list[Evaluation]) -> list[Evaluation]:
    """Two runs may share a name (``--name``, or two folders called ``eval``): the page needs distinct ones."""
    from dataclasses import replace

    seen: dict[str, int] = {}
    out = []
    for ev in evaluations:
        seen[ev.name] = seen.get(ev.name, 0) + 1
        out.append(ev if seen[ev.name] == 1 else replace(ev, name=f"{ev.name} ({seen[ev.name]})"))
    return out


def read_leaderboard(folder: Path | str) -> dict[str, Any]:
    """The table ``idc-eval leaderboard --out FOLDER`` wrote (``leaderboard.json``), checked."""
    path = Path(folder) / "leaderboard.json"
    data = read_json(path, IDCError, "leaderboard")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or not isinstance(data.get("columns"), list):
        raise IDCError(f"{path}: not an idc-eval leaderboard (no rows / columns)")
    return data

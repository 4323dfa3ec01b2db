"""``idc-eval check-references FILE``: every problem of a reference or predictions file, one line
each, before any scoring: JSON that does not parse (with its byte offset and what the file starts
with: CARD's reference file circulated with stray bytes before its first ``{``), ids given twice,
non-string captions, and, with a dataset, ids the dataset does not have. Empty captions are a
warning, not an error: real releases keep them (Spot-the-Diff's and CARD's reference files) and
the scorer scores them as given unless ``--drop-empty-references``.

The formats are those the scorer reads (:mod:`.predictions`): a coco-caption annotation file
(``{"annotations": [{"image_id", "caption"}, ...]}``), a ``{id: caption}`` or ``{id: [captions]}``
mapping, a coco results list (``[{"image_id", "caption"}]``) and JSON Lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.files import UnreadableJSON, parse_json
from idc_toolkit.options import option
from idc_toolkit.stores import STORE_DATASET

from .groups import listed_ids


@dataclass
class CheckReferencesArgs:
    """``idc-eval check-references FILE``: what else the file is checked against."""

    dataset: Optional[str] = option(None, "also check that every id is a pair of this dataset" + STORE_DATASET)
    split: str = option("test", "the dataset's split")


def _not_json(path: Path, text: str, exc: json.JSONDecodeError, where: str = "") -> str:
    offset = len(text[: exc.pos].encode("utf-8"))
    return (f"{path}{where}: not JSON at byte {offset} (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"it starts {text[:24]!r}")


def _records(path: Path, text: str, problems: list[str]) -> tuple[list[tuple[str, Any, str]], bool]:
    """``(id, caption, where)`` of every record, and whether the file holds references (several
    captions per id allowed); the parse and shape problems are added to ``problems``."""
    repeated_keys: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                repeated_keys.append(key)
            seen[key] = value
        return seen

    out: list[tuple[str, Any, str]] = []
    try:
        data = parse_json(text, object_pairs_hook=hook)
    except UnreadableJSON as exc:
        problems.append(f"{path}: {exc}")
        return out, False
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            problems.append(_not_json(path, text, exc))
            return out, False
        for lineno, line in enumerate(text.split("\n"), 1):  # several JSON values: JSON Lines
            if not line.strip():
                continue
            try:
                obj = parse_json(line)
            except UnreadableJSON as exc:
                problems.append(f"{path}: line {lineno}: {exc}")
                continue
            except json.JSONDecodeError as exc:
                problems.append(_not_json(path, line, exc, f": line {lineno}"))
                continue
            if not isinstance(obj, dict):
                problems.append(f"{path}: line {lineno}: expected an object with pair_id and caption")
                continue
            out.append((obj.get("pair_id", obj.get("image_id")), obj.get("caption"), f"line {lineno}"))
        return out, False
    if repeated_keys:
        problems.append(f"{path}: id(s) {listed_ids(sorted(set(repeated_keys)))} appear twice in one JSON object "
                        "(JSON keeps the last: which caption is meant?)")
    references = isinstance(data, dict) and (isinstance(data.get("annotations"), list)
                                             or any(isinstance(v, list) for v in data.values()))
    if isinstance(data, dict) and isinstance(data.get("annotations"), list):
        for i, ann in enumerate(data["annotations"]):
            ann = ann if isinstance(ann, dict) else {}
            out.append((ann.get("image_id"), ann.get("caption"), f"annotation {i}"))
    elif isinstance(data, dict):
        for key, value in data.items():
            for k, caption in enumerate(value if isinstance(value, list) else [value]):
                out.append((key, caption, f"key {key!r}" + (f", reference {k}" if isinstance(value, list) else "")))
    elif isinstance(data, list):
        for i, obj in enumerate(data):
            obj = obj if isinstance(obj, dict) else {}
            out.append((obj.get("pair_id", obj.get("image_id")), obj.get("caption"), f"item {i}"))
    else:
        problems.append(f"{path}: expected a coco annotation file, a mapping, a coco results list or JSON lines")
    return out, references


def check_file(path: Path | str, dataset: Optional[str] = None,
               split: str = "test") -> tuple[list[str], list[str], dict[str, int]]:
    """The problems of ``path`` (empty: none), its warnings and what it holds (``ids``, ``captions``)."""
    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.files import read_text

    path = Path(path)
    problems: list[str] = []
    text = read_text(path, EvaluationError, "reference or predictions file")
    records, references = _records(path, text, problems)
    ids: dict[str, int] = {}
    empty: list[str] = []
    for pid, caption, where in records:
        if pid is None:
            problems.append(f"{path}: {where}: no pair_id / image_id")
            continue
        ids[str(pid)] = ids.get(str(pid), 0) + 1
        if not isinstance(caption, str):
            problems.append(f"{path}: {where} (id {pid!r}): the caption is {type(caption).__name__}, not a string")
        elif not caption.strip():
            empty.append(str(pid))
    if not references:  # predictions: one caption per pair (references may give several)
        twice = sorted(i for i, n in ids.items() if n > 1)
        if twice:
            problems.append(f"{path}: {len(twice)} id(s) have several predictions: {listed_ids(twice)}")
    if dataset is not None and ids:
        from .predictions import load_references_dataset

        known = set(load_references_dataset(dataset, split).captions)
        absent = [i for i in ids if i not in known]
        if absent:
            problems.append(f"{path}: {len(absent)} id(s) are not in {dataset} [{split}]: {listed_ids(absent)}")
    warnings = [f"{path}: {len(empty)} empty caption(s), of id(s) {listed_ids(empty)}: scored as given "
                "(--drop-empty-references drops them)"] if empty else []
    return problems, warnings, {"ids": len(ids), "captions": sum(ids.values())}


def refuse_bad_file(path: Path | str) -> None:
    """What every scoring run does before it starts: refuse a file with any of :func:`check_file`'s
    problems, each on its own line (warnings are the scorer's to give)."""
    from idc_toolkit.errors import EvaluationError

    problems, _, _ = check_file(path)
    if problems:
        raise EvaluationError("\n".join(problems) + ("" if len(problems) == 1 else f"\n{path}: {len(problems)} problems "
                                                                                   "(idc-eval check-references lists them)"))

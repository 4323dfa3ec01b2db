"""Pairs of a release found again in a copy re-hosted on the Hub as instruction data.

When a release's own image link is dead, its pairs often survive in instruction-tuning
collections that re-host them (The Cauldron / FineVision: ``images`` + ``texts`` [{user,
assistant}]; Mantis-Instruct: ``images`` + ``conversation`` [{role, content}]). Their rows carry
no release id, so each row is matched back through the release's own annotations: by the
image file names where the copy kept them (``<id>.png`` / ``<id>_2.png``), else by text: the
answer, cut into sentences and normalised, must contain every sentence of exactly one release
pair (or of several, one of which has exactly the answer's release sentences). A row matching
no pair, or several alike, is reported and left out — never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from ..errors import RawFormatError
from .hfcopy import open_parquet, table_batches

#: the layouts read: text column -> how to get the answer from it
LAYOUTS = {"texts": "The Cauldron / FineVision (texts: [{user, assistant}])",
           "conversation": "Mantis-Instruct (conversation: [{role, content}])"}


def sentences(text: str) -> list[str]:
    """``text`` cut at sentence ends and line breaks, each piece lower-cased with punctuation
    and repeated spaces removed; empty pieces dropped."""
    pieces = re.split(r"[.!?\n]+", text.lower())
    return [p for p in (" ".join(re.sub(r"[^\w\s]", " ", piece).split()) for piece in pieces) if p]


def answer_text(row: dict[str, Any], column: str) -> str:
    if column == "texts":
        return "\n".join(t.get("assistant") or "" for t in row.get("texts") or [] if isinstance(t, dict))
    return "\n".join(t.get("content") or "" for t in row.get("conversation") or []
                     if isinstance(t, dict) and t.get("role") in ("assistant", "gpt"))


class SentenceIndex:
    """Which release pairs each normalised sentence belongs to."""

    def __init__(self, references: dict[str, list[str]]):
        self.needed = {pid: set(sentences(" . ".join(refs))) for pid, refs in references.items()}
        self.by_sentence: dict[str, set[str]] = {}
        for pid, sents in self.needed.items():
            for s in sents:
                self.by_sentence.setdefault(s, set()).add(pid)

    def match(self, answer: str) -> tuple[Optional[str], str]:
        """``(pair id, "")`` for the one pair all of whose sentences the answer states, else
        ``(None, why)``."""
        found = set(sentences(answer))
        candidates = set().union(*(self.by_sentence.get(s, set()) for s in found)) if found else set()
        full = [pid for pid in candidates if self.needed[pid] and self.needed[pid] <= found]
        known = {s for s in found if s in self.by_sentence}
        exact = [pid for pid in full if self.needed[pid] == known]  # a pair whose sentences are a subset of another's
        if len(exact) == 1 or len(full) == 1:
            return (exact or full)[0], ""
        if not full:
            return None, "its answer states no release pair's sentences"
        return None, f"its answer fits {len(full)} release pairs ({', '.join(sorted(full)[:3])}...)"


@dataclass
class RehostMatch:
    ids: dict[tuple[str, int], str] = field(default_factory=dict)  #: (file, row) -> release id
    problems: list[tuple[str, str, str]] = field(default_factory=list)  #: (file, record, why)
    layout: str = ""


def rehost_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.parquet") if not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if not files:
        raise RawFormatError(folder, "no parquet files: expected a local copy of a re-hosted Spot-the-Diff "
                                     "(e.g. HuggingFaceM4/the_cauldron spot_the_diff, TIGER-Lab/Mantis-Instruct spot-the-diff)")
    return files


def _text_column(path: Path) -> str:
    names = open_parquet(path).schema_arrow.names
    column = next((c for c in LAYOUTS if c in names), None)
    if column is None or "images" not in names:
        raise RawFormatError(path, f"columns {names}: not a layout this reads ({'; '.join(LAYOUTS.values())}, with images)")
    return column


def _file_id(cell: Any, pattern: re.Pattern) -> Optional[str]:
    path = cell.get("path") if isinstance(cell, dict) else None
    m = pattern.fullmatch(Path(path).name) if path else None
    return m.group(1) if m else None


def match_rehost(folder: Path, references: dict[str, list[str]]) -> RehostMatch:
    """Match every row of the copy in ``folder`` to a release id (module docstring); only the
    text and the images' names are read."""
    index, result = SentenceIndex(references), RehostMatch()
    before_name = re.compile(r"(\d+)\.(?:png|jpg)")
    used: dict[str, str] = {}
    for path in rehost_files(folder):
        column = _text_column(path)
        result.layout = LAYOUTS[column]
        has_paths = "path" in str(open_parquet(path).schema_arrow.field("images").type)
        n = 0
        for rows in table_batches(path, columns=[column] + (["images"] if has_paths else [])):
            for row in rows:
                record = f"row {n}"
                images = row.get("images") or []
                pid = _file_id(images[0], before_name) if has_paths and images else None
                why = ""
                if pid is None or pid not in references:
                    pid, why = index.match(answer_text(row, column))
                if pid is not None and pid in used:
                    pid, why = None, f"matches release pair {pid}, already taken by {used[pid]}"
                if pid is None:
                    result.problems.append((str(path), record, why))
                else:
                    used[pid] = f"{path.name} {record}"
                    result.ids[(str(path), n)] = pid
                n += 1
    return result


def rehost_images(match: RehostMatch, wanted: set[str]) -> Iterator[tuple[str, Any, Any, str]]:
    """``(release id, before cell, after cell, source)`` of the matched rows whose id is in
    ``wanted``, in the copy's order (one pass over the files holding them)."""
    for path in sorted({f for (f, _), pid in match.ids.items() if pid in wanted}):
        n = 0
        for rows in table_batches(Path(path), columns=["images"]):
            for row in rows:
                pid = match.ids.get((path, n))
                if pid in wanted:
                    images = row.get("images") or []
                    yield pid, images[0] if images else None, images[1] if len(images) > 1 else None, f"{path}#row {n}"
                n += 1

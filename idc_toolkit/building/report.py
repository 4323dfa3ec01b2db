"""The build report: every skipped, repaired or noteworthy record, with file, id and reason.

Nothing is dropped silently. In the default mode a bad record is skipped and reported; in
strict mode the first problem that would skip or alter data ends the build with an error
naming it. Notes (e.g. a pair repeated under several ids) never fail a build: the data is
kept as released and the note tells the user.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from ..errors import BuildError

SKIPPED = "skipped"
REPAIRED = "repaired"
NOTE = "note"


@dataclass
class Problem:
    action: str  # skipped | repaired | note
    split: Optional[str]
    file: str
    record: Optional[str]
    reason: str

    def describe(self) -> str:
        rec = f", record {self.record}" if self.record is not None else ""
        split = f" [{self.split}]" if self.split else ""
        return f"{self.action}{split}: {self.file}{rec}: {self.reason}"


@dataclass
class BuildReport:
    dataset: str
    strict: bool = False
    problems: list[Problem] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    empty_captions: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    category_counts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    counters: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def skip(self, split: Optional[str], file: str, record: Optional[str], reason: str) -> None:
        """Record a skipped pair; in strict mode raise instead."""
        self._add(Problem(SKIPPED, split, str(file), record, reason))

    def repair(self, split: Optional[str], file: str, record: Optional[str], reason: str) -> None:
        """Record a value the builder changed from the release (e.g. quotes stripped)."""
        self._add(Problem(REPAIRED, split, str(file), record, reason))

    def note(self, split: Optional[str], file: str, record: Optional[str], reason: str) -> None:
        """Record something the user should know; never fails a build."""
        self.problems.append(Problem(NOTE, split, str(file), record, reason))

    def count(self, key: str, n: int = 1) -> None:
        """Bump a named counter (e.g. ``images_without_annotation``)."""
        self.counters[key] += n

    def _add(self, problem: Problem) -> None:
        if self.strict:
            raise BuildError(f"strict mode: {problem.describe()}")
        self.problems.append(problem)

    def summary(self, report_file: str = "build_report.json", shown: int = 3) -> str:
        """One line per split, problem counts, the first ``shown`` skipped or repaired records and
        where every one is listed, for the CLI."""
        by_action = Counter(p.action for p in self.problems)
        lines = [f"{split}: {n} pairs" for split, n in self.rows.items()]
        lines.append(
            f"skipped {by_action[SKIPPED]}, repaired {by_action[REPAIRED]}, notes {by_action[NOTE]}; "
            f"empty captions kept {sum(self.empty_captions.values())}"
        )
        altered = [p for p in self.problems if p.action != NOTE]
        lines += [f"  {p.describe()}" for p in altered[:shown]]
        if len(altered) > shown:
            lines.append(f"  ... and {len(altered) - shown} more")
        if self.problems:
            lines.append(f"every skipped, repaired and noted record, with its file and reason: {report_file}")
        for key, n in sorted(self.counters.items()):
            lines.append(f"{key}: {n}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        by_action = Counter(p.action for p in self.problems)
        return {
            "dataset": self.dataset,
            "strict": self.strict,
            "splits": {
                split: {
                    "pairs": n,
                    "empty_captions": self.empty_captions.get(split, 0),
                    "categories": dict(sorted(self.category_counts.get(split, {}).items())),
                }
                for split, n in self.rows.items()
            },
            "counts": {"skipped": by_action[SKIPPED], "repaired": by_action[REPAIRED], "notes": by_action[NOTE]},
            "counters": dict(sorted(self.counters.items())),
            "problems": [asdict(p) for p in self.problems],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BuildReport":
        """Rebuild a report saved by :meth:`to_dict` (used to resume an interrupted build)."""
        report = cls(dataset=data["dataset"], strict=data.get("strict", False))
        for split, info in data.get("splits", {}).items():
            report.rows[split] = info["pairs"]
            report.empty_captions[split] = info.get("empty_captions", 0)
            report.category_counts[split] = Counter(info.get("categories", {}))
        report.counters.update(data.get("counters", {}))
        report.problems = [Problem(**p) for p in data.get("problems", [])]
        return report

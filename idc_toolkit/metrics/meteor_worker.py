"""``python -m idc_toolkit.metrics.meteor_worker``: METEOR's Python aligner in a process of its own.

A scoring starts it before tokenizing, so its imports and tables load meanwhile; it then reads
one job as a JSON line on stdin, ``{"hypotheses": [...], "references": [[...], ...], "block": B}``
(``null``: no job), and aligns it block by block in order, writing ``[k, [statistics line, ...]]``
per block of ``B`` segments on stdout. The caller, once its own metrics are done, aligns blocks
from the end and claims them with ``claim k`` lines (every block from ``k`` on is the caller's):
the worker stops before a claimed block, so the two cores meet in the middle. Each segment's
statistics depend on that segment alone, so the split never changes an answer. A plain child
process, not ``multiprocessing``: nothing of the caller's own script is imported again.
"""

from __future__ import annotations

import json
import os
import select
import sys


class _Control:
    """The worker's stdin read unbuffered, so ``select`` sees what the caller has sent."""

    def __init__(self) -> None:
        self.buffer = b""

    def _fill(self) -> bool:
        chunk = os.read(0, 1 << 20)
        self.buffer += chunk
        return bool(chunk)

    def line(self) -> bytes:
        while b"\n" not in self.buffer:
            if not self._fill():
                break
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def claimed(self, current: int) -> int:
        """The lowest block the caller has claimed so far, without waiting."""
        try:
            while select.select([0], [], [], 0)[0] and self._fill():
                pass
        except (OSError, ValueError):  # a stdin select cannot poll: no claims, the child aligns it all
            return current
        while b"\n" in self.buffer:
            line, _, self.buffer = self.buffer.partition(b"\n")
            if line.startswith(b"claim "):
                current = min(current, int(line[6:]))
        return current


def main() -> None:
    from .meteor_align import Memo, statistics, warm

    warm()
    control = _Control()
    job = json.loads(control.line() or b"null")
    if not job:
        return
    hypotheses, references, size = job["hypotheses"], job["references"], job["block"]
    blocks = -(-len(hypotheses) // size)
    claimed = blocks
    memo = Memo()
    for k in range(blocks):
        claimed = control.claimed(claimed)
        if k >= claimed:
            break
        part = slice(k * size, (k + 1) * size)
        sys.stdout.write(json.dumps([k, statistics(hypotheses[part], references[part], memo=memo)]) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

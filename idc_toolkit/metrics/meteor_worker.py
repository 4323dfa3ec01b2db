"""``python -m idc_toolkit.metrics.meteor_worker``: METEOR's Python aligner in a process of its own.

A scoring starts one or more of these before tokenizing (:mod:`.meteor_pool`), so their imports
and tables load meanwhile. Each then reads blocks as JSON lines on stdin,
``[k, [hypothesis, ...], [[reference, ...], ...]]``, and for each writes ``[k, [statistics line,
...]]`` on stdout; ``end``, ``null`` or the end of stdin ends it. The caller hands out the
blocks, so the processes share a job whatever their speed, and no process holds more than a
block of it. Each segment's statistics depend on that segment alone, so the split never changes
an answer. A plain child process, not ``multiprocessing``: nothing of the caller's own script
is imported again.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from ..malloc import fix_thresholds
    from .meteor_align import Memo, statistics, warm

    fix_thresholds()  # as idc-eval: blocks come and go for the whole job
    warm()
    memo = Memo()  # sentences and rows met in one block serve the next
    for line in sys.stdin:
        block = json.loads(line) if line.strip() != "end" else None
        if not block:
            break
        k, hypotheses, references = block
        sys.stdout.write(json.dumps([k, statistics(hypotheses, references, memo=memo)]) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

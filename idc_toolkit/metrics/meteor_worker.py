"""``python -m idc_toolkit.metrics.meteor_worker``: METEOR's Python aligner in a process of its own.

A scoring starts one or more of these before tokenizing (:mod:`.meteor_pool`), so their imports
and tables load meanwhile. Each then reads one job as a JSON line on stdin,
``{"hypotheses": [...], "references": [[...], ...], "block": B}`` (``null``: no job), and after it
block numbers, one per line: for each it aligns segments ``k*B`` to ``(k+1)*B`` and writes
``[k, [statistics line, ...]]`` on stdout; ``end`` or the end of stdin ends it. The caller hands
out the blocks, so the processes share the job whatever their speed. Each segment's statistics
depend on that segment alone, so the split never changes an answer. A plain child process, not
``multiprocessing``: nothing of the caller's own script is imported again.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from .meteor_align import Memo, statistics, warm

    warm()
    job = json.loads(sys.stdin.readline() or "null")
    if not job:
        return
    hypotheses, references, size = job["hypotheses"], job["references"], job["block"]
    memo = Memo()  # sentences and rows met in one block serve the next
    for line in sys.stdin:
        if line.strip() == "end":
            break
        k = int(line)
        part = slice(k * size, (k + 1) * size)
        sys.stdout.write(json.dumps([k, statistics(hypotheses[part], references[part], memo=memo)]) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

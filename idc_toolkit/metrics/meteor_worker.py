"""``python -m idc_toolkit.metrics.meteor_worker``: METEOR's Python aligner in a process of its own.

Reads ``{"hypotheses": [...], "references": [[...], ...]}`` as JSON on stdin and writes the
statistics lines (:func:`.meteor_align.statistics`), one per segment, as a JSON list on stdout.
A scoring hands it a long job so that the alignment runs on another core while BLEU, ROUGE-L and
CIDEr run in the calling process (a thread would share their interpreter lock). A plain child
process, not ``multiprocessing``: nothing of the caller's own script is imported again.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from .meteor_align import statistics

    job = json.load(sys.stdin)
    json.dump(statistics(job["hypotheses"], job["references"]), sys.stdout)


if __name__ == "__main__":
    main()

"""Timing a command and sampling the peak memory of its whole process tree.

Peak RSS is sampled (every 0.1 s) as the sum over the process and all its descendants, so it
counts torchrun ranks and Ray workers, and it is not inflated the way ``ru_maxrss`` of a
forked child is (Linux keeps the parent's resident pages in a child's high-water mark).
"""

from __future__ import annotations

import subprocess
import time


def tree_rss(proc) -> int:
    import psutil

    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def measure(cmd: list[str]) -> tuple[float, int]:
    import psutil

    start = time.perf_counter()
    popen = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc, peak = psutil.Process(popen.pid), 0
    while popen.poll() is None:
        peak = max(peak, tree_rss(proc))
        time.sleep(0.1)
    if popen.returncode:
        raise SystemExit(f"{cmd} failed:\n{popen.stderr.read()[-2000:]}")
    return time.perf_counter() - start, peak

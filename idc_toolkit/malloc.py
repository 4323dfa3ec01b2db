"""glibc's malloc thresholds for the scoring processes (``idc-eval`` and METEOR's aligners).

glibc serves a block above its mmap threshold with a mapping of its own, given back when freed,
and raises that threshold to the size of each such block freed, up to 32 MiB: once a scoring has
freed its references file's text, later arrays and lists come from a heap that keeps what it
frees. Fixed thresholds keep the scoring's peak lower at no measured cost (benchmarks/README.md,
"Scoring").
"""

from __future__ import annotations

import os

#: blocks from this size get a mapping of their own (glibc's default starts at 128 KiB and rises)
MMAP_THRESHOLD = 2 << 20
#: free memory at the heap's top beyond this is given back
TRIM_THRESHOLD = 4 << 20
#: ``mallopt``'s parameter numbers (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def user_tuned() -> bool:
    """Whether the environment already sets glibc's thresholds (its own choice is kept)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return ("MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ
            or "malloc.mmap_threshold" in tunables or "malloc.trim_threshold" in tunables)


def fix_thresholds() -> bool:
    """Fix this process's mmap threshold at :data:`MMAP_THRESHOLD` and its trim threshold at
    :data:`TRIM_THRESHOLD`; False, with nothing changed, where the C library is not glibc or the
    environment sets them (:func:`user_tuned`)."""
    if user_tuned():
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):  # not glibc (macOS, musl): its allocator as it is
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))

"""glibc's thresholds in the scoring processes (:mod:`idc_toolkit.malloc`): fixed, a block of a few
MiB allocated after a large one was freed still gets a mapping of its own (given back when freed);
left to glibc, it comes from the heap. The environment's own settings are kept."""

import os
import subprocess
import sys

import pytest


def _glibc_with_mallinfo2() -> bool:
    try:
        import ctypes

        return "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or "") and hasattr(ctypes.CDLL(None), "mallinfo2")
    except (AttributeError, ValueError, OSError):
        return False


pytestmark = pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="glibc's allocator (2.33 or later: mallinfo2) only")

PROBE = """
import ctypes, sys
from idc_toolkit.malloc import fix_thresholds

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
fixed = fix_thresholds() if sys.argv[1] == "fix" else False
text = bytearray(27 << 20)  # a references file's text, read and freed
del text
mapped = libc.mallinfo2().hblks
block = bytearray(3 << 20)  # an array of the scoring's
print(fixed, libc.mallinfo2().hblks - mapped)
"""


def _probe(mode: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    return subprocess.run([sys.executable, "-c", PROBE, mode], env={**clean, **env}, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_fixed_thresholds_map_a_later_block_of_its_own():
    assert _probe("fix") == "True 1"
    assert _probe("leave") == "False 0"  # glibc's threshold rose to the freed text's size: from the heap


def test_the_environment_s_own_settings_are_kept():
    assert _probe("fix", MALLOC_TRIM_THRESHOLD_="1048576").startswith("False")  # glibc's, as the user set it
    assert _probe("fix", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=65536").startswith("False")

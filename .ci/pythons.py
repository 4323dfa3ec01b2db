"""The newest CPython this machine can run beyond ``python3``'s minor version (on PATH as
``python3.N``, or among pyenv's versions), for .ci/run: its path, or nothing.

Usage: python3 .ci/pythons.py newest
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys


def _version(python: str) -> tuple[int, int] | None:
    """``python``'s (major, minor), or None where it does not run (a pyenv shim of a version not selected)."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def candidates() -> list[str]:
    found = [shutil.which(f"python3.{minor}") for minor in range(sys.version_info[1] + 1, 30)]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found += [p for p in sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")))
              if re.fullmatch(r"3\.\d+\.\d+", os.path.basename(os.path.dirname(os.path.dirname(p))))]  # releases only
    return [p for p in found if p]


def newest() -> str:
    best, path = sys.version_info[:2], ""
    for python in candidates():
        version = _version(python)
        if version is not None and version > best:
            best, path = version, python
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["newest"]:
        raise SystemExit(__doc__)
    print(newest())

"""The CPython releases this machine can run (``python3.N`` on PATH, pyenv's versions), for
.ci/run: ``lowest``, the oldest that pyproject.toml's ``requires-python`` allows (``python3``
where none is older), or ``newest``, the newest beyond ``python3``'s minor version (nothing
where there is none). Prints its path.

Usage: python3 .ci/pythons.py lowest|newest
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path


def _version(python: str) -> tuple[int, int] | None:
    """``python``'s (major, minor), or None where it does not run (a pyenv shim of a version not selected)."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def _floor() -> tuple[int, int]:
    """requires-python's ``>=3.N``."""
    spec = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = re.fullmatch(r"\s*>=\s*(\d+)\.(\d+)\s*", spec).groups()
    return int(major), int(minor)


def found() -> dict[tuple[int, int], str]:
    """Each (major, minor) that runs here, and one interpreter of it."""
    paths = [shutil.which(f"python3.{minor}") for minor in range(6, 30)]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    paths += [p for p in sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")))
              if re.fullmatch(r"3\.\d+\.\d+", Path(p).parent.parent.name)]  # releases only
    out: dict[tuple[int, int], str] = {}
    for path in filter(None, paths):
        version = _version(path)
        if version is not None:
            out.setdefault(version, path)
    return out


def main(which: str) -> str:
    here = tuple(sys.version_info[:2])
    versions = found()
    if which == "lowest":
        floor = _floor()
        older = [v for v in versions if floor <= v < here]
        return versions[min(older)] if older else sys.executable
    newer = [v for v in versions if v > here]
    return versions[max(newer)] if newer else ""


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("lowest", "newest"):
        raise SystemExit(__doc__)
    print(main(sys.argv[1]))

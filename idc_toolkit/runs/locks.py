"""Who is working on an output folder: advisory file locks that die with their process.

``fcntl.flock`` locks are released by the kernel when the holding process ends, however it
ends (kill -9 included), so a crashed job never leaves a stale lock behind. The lock file
holds who took it (pid, host, start time, command line) so a second job can say which job
is in its way. On a network file system without flock support, locks degrade to no-ops
with a warning rather than failing.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Optional

from ..errors import RunError

log = logging.getLogger(__name__)


class FolderLock:
    """An exclusive, non-blocking lock on ``path``; ``what`` names it in messages."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what
        self._fh = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return "another job"
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
        return f"pid {info.get('pid')} on {info.get('host')} (since {started}: {info.get('command', '?')})"

    def acquire(self) -> "FolderLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            fh.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise RunError(f"{self.what} is in use by {self.holder()}; wait for it or stop it") from None
            log.warning("cannot lock %s (%s); going on without a lock", self.path, exc)
            return self
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                             "command": " ".join(sys.argv)[:300]}))
        fh.flush()
        self._fh = fh
        return self

    def held_by_other(self) -> Optional[str]:
        """The holder's description when another process holds the lock, else ``None``."""
        if self._fh is not None or not self.path.exists():
            return None
        try:
            self.acquire()
        except RunError:
            return self.holder()
        self.release()
        return None

    def release(self) -> None:
        if self._fh is not None:
            import fcntl

            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "FolderLock":
        return self if self._fh is not None else self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

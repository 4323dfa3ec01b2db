"""Fetching a release's images from the URLs it lists: resumable, rate-limited, with retries.

Some releases ship URLs instead of images (Birds-to-Words: iNaturalist photos). Each photo is
written to a ``.part`` file and renamed when complete, so an interrupted run resumes where it
stopped, and a photo already on disk is never fetched again. The outcome of every URL (file,
HTTP status, licence where the source says it) is kept in a manifest beside the photos, so a
dead link is reported by the build instead of vanishing. Plain ``urllib``: one GET per photo
needs no client library, and the loopback test server speaks to it the same way.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

MANIFEST = "fetch_manifest.json"
USER_AGENT = "idc-toolkit (+https://github.com/idc-toolkit/idc-toolkit)"
#: first wait before a retry, doubled after each
BACKOFF_S = 1.0


class DeadLink(OSError):
    """The source answered that the file is gone (403 / 404 / 410): not retried, not on a rerun."""


@dataclass
class FetchJob:
    url: str
    dest: Path
    #: called once the photo is fetched, to look up its licence (None: no lookup)
    licence: Optional[Callable[[], Optional[str]]] = None


@dataclass
class FetchOutcome:
    fetched: int = 0
    present: int = 0
    dead: dict[str, str] = field(default_factory=dict)  #: url -> why (gone for good)
    failed: dict[str, str] = field(default_factory=dict)  #: url -> why (retried on the next run)


class Fetcher:
    """GETs at most ``rate`` requests per second, retrying timeouts and 5xx/429 answers
    ``retries`` times with doubling waits; 403 / 404 / 410 are dead at once (:class:`DeadLink`)."""

    def __init__(self, rate: float = 1.0, retries: int = 3, timeout: float = 30.0, backoff: Optional[float] = None):
        backoff = BACKOFF_S if backoff is None else backoff
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.retries, self.timeout, self.backoff = retries, timeout, backoff
        self._last = 0.0

    def get(self, url: str) -> bytes:
        """The body of ``url``; raises ``OSError`` with the reason when it stays unreachable."""
        last_error, dead = "unreachable", False
        for attempt in range(self.retries + 1):
            wait = self._last + self.interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last = time.monotonic()
            try:
                req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return resp.read()
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}"
                if exc.code in (403, 404, 410):
                    dead = True
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last_error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt < self.retries:
                time.sleep(self.backoff * 2 ** attempt)
        raise (DeadLink if dead else OSError)(f"{last_error} after {attempt + 1} attempt(s)")


def read_manifest(folder: Path) -> dict[str, dict]:
    path = folder / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def fetch_all(jobs: list[FetchJob], folder: Path, fetcher: Fetcher, progress: bool = True) -> FetchOutcome:
    """Fetch every job whose file is not on disk yet into ``folder``; the manifest is written
    after every photo, so an interrupted run keeps what it learnt."""
    from tqdm.auto import tqdm

    folder.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(folder)
    outcome = FetchOutcome()
    todo = []
    for job in jobs:
        if job.dest.is_file():
            outcome.present += 1
        elif manifest.get(job.url, {}).get("dead"):
            outcome.dead[job.url] = manifest[job.url]["dead"]
        else:
            todo.append(job)
    for job in tqdm(todo, desc="fetching photos", unit="photo", disable=not progress or not todo):
        entry: dict = {"file": job.dest.name}
        try:
            data = fetcher.get(job.url)
            part = job.dest.with_name(job.dest.name + ".part")
            part.write_bytes(data)
            part.replace(job.dest)
            outcome.fetched += 1
            if job.licence is not None:
                try:
                    entry["licence"] = job.licence()
                except (OSError, ValueError, KeyError) as exc:
                    entry["licence_error"] = str(exc)
        except DeadLink as exc:
            entry["dead"] = str(exc)
            outcome.dead[job.url] = str(exc)
        except OSError as exc:
            entry["error"] = str(exc)
            outcome.failed[job.url] = str(exc)
        manifest[job.url] = entry
        tmp = folder / (MANIFEST + ".part")
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        tmp.replace(folder / MANIFEST)
    return outcome

"""The output folder of a long job: fingerprint check, locks, parts, atomic finalisation.

Layout while a run is under way (hidden, so ``load_dataset`` sees no data files and a
half-finished folder is never loadable)::

    OUT/.idc_run/run.json                    kind, fields, fingerprint, finalise journal
    OUT/.idc_run/locks/*.lock                who works on the folder (see :mod:`.locks`)
    OUT/.idc_run/parts/<split>/<k>.parquet   part k of a split (rows of one row range)
    OUT/.idc_run/parts/<split>/<k>.json      its row range, row count, Arrow size, stats
    OUT/.idc_run/final/                      the finished folder, staged before it moves

Finalising stages the complete result under ``final/``, records ``staged`` in the journal,
then moves ``README.md`` first (its ``configs`` name ``data/`` files that do not exist yet,
so the folder stays unloadable), the other files, and ``data/`` last, as one directory
rename. Every step is idempotent, so a kill at any moment is finished by the next run.

When a dataset run completes, its record (kind, fingerprint, fields) is kept in the card's
YAML under ``idc_toolkit_run`` and ``.idc_run/`` is removed, so nothing but the dataset is
uploaded; runs that write no dataset (generation) keep ``.idc_run/run.json``.

What a folder may hold is judged by one rule (:mod:`.rules`). An ``--out`` on an object store
(``s3://``, ``gs://``, ``hf://``) is held to the same rule there; its run works here, in a local
staging folder (:mod:`idc_toolkit.stores`), and the finished folder is published to it
(:mod:`.publish`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from ..errors import RunError
from ..files import write_text_atomic
from ..options import masked
from ..stores import output_folder, store_of
from .fingerprint import canonical, digest
from .locks import FolderLock
from .ranks import barrier, dist_info, init_distributed
from .publish import (Published, check_destination, drop_shared_parts, fetch, fetch_parts, publish, share_missing_parts,
                      share_part)
from .rules import STATE_DIR, RunSpec, card_text_record, judge_output

RUN_FILE = "run.json"


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n")


def card_record(out: Path) -> Optional[dict[str, Any]]:
    """The run record in ``out/README.md``'s YAML, if the folder holds a finished run."""
    path = Path(out) / "README.md"
    try:
        return card_text_record(path.read_text(encoding="utf-8")) if path.is_file() else None
    except ValueError:  # not UTF-8: no card of ours
        return None


def check_out_dir(out: Path) -> None:
    """``out`` can be a run's folder: not a file, creatable, writable — one line otherwise,
    before any work."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file, not a folder")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise RunError(f"--out {out}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise RunError(f"--out {out}: {probe} is not writable")


def remove_owned(folder: Path, names: Iterable[str]) -> None:
    """Remove the entries ``names`` of ``folder`` (what a run of ours wrote there), nothing else."""
    for name in names:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not an entry name: {name!r}")
        _remove(folder / name)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


class RunFolder:
    """One job's view of an output folder (see the module docstring).

    ``fields`` is everything the output depends on (:mod:`.fingerprint`), recorded with every secret
    masked (:func:`~idc_toolkit.options.masked`); ``owned`` names the
    files and folders a finished run of this kind writes, the only ones ``--overwrite``
    removes; ``tolerated`` names what another run of ours may keep in the same folder (an
    evaluation beside the predictions ``idc-eval --model`` wrote): not foreign, never removed;
    ``card_record`` says whether the finished record lives in the card; ``record_file`` names
    the record under ``.idc_run/`` (two kinds of run can share a folder); ``legacy_record``
    reads the record an older version of the toolkit left elsewhere.
    """

    def __init__(self, out: Path | str, kind: str, fields: Mapping[str, Any], *, owned: Iterable[str] = ("data", "README.md"),
                 card_record: bool = True, tolerated: Iterable[str] = (), record_file: str = RUN_FILE,
                 legacy_record: Optional[Callable[[Path], Optional[dict[str, Any]]]] = None, progress: bool = True,
                 all_ranks: bool = True):
        self.out = output_folder(out, RunError)  # a file:// URI is its local folder; an object store's, its staging
        self.destination = store_of(self.out)  # where the finished run is published (None: it is here)
        self.shown = self.destination.shown if self.destination else str(self.out)  # the --out messages name
        self.kind = kind
        self.fields = canonical(masked({"kind": kind, **fields}))  # a secret setting is never recorded
        self.fingerprint = digest(self.fields)
        self.owned = tuple(owned)
        self.tolerated = tuple(tolerated)
        self.spec = RunSpec(kind, self.fingerprint, self.fields, self.owned, self.tolerated)
        self.progress = progress
        self.all_ranks = all_ranks  #: False: one process (rank 0) runs it alone, with no barrier to the others
        self.record_file = record_file
        self.legacy_record = legacy_record
        self.card_record = card_record
        self.state_dir = self.out / STATE_DIR
        self.state: dict[str, Any] = {}
        self.complete = False
        self.resumed = False
        self.published: Optional[Published] = None  # what the destination held when the run was opened

    # -- opening -------------------------------------------------------------------------
    def _lock(self, name: str, what: str) -> FolderLock:
        return FolderLock(self.state_dir / "locks" / f"{name}.lock", what)

    def setup_lock(self, wait: float = 120.0) -> FolderLock:
        """The short lock taken to create, check or finalise the run (waits for another job)."""
        lock = self._lock("setup", f"{self.shown} (setup)")
        deadline = time.time() + wait
        while True:
            try:
                return lock.acquire()
            except RunError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)

    def job_lock(self, job: tuple[int, int]) -> FolderLock:
        what = self.shown + (f" --shard {job[0]}/{job[1]}" if job[1] > 1 else "")
        return self._lock(f"job-{job[0]}-of-{job[1]}", what)

    def _existing_record(self) -> Optional[dict[str, Any]]:
        run_file = self.state_dir / self.record_file
        if run_file.is_file():
            try:
                return json.loads(run_file.read_text())
            except ValueError:
                raise RunError(f"{run_file} is unreadable; pass --overwrite to start the run again") from None
        if self.legacy_record is not None:
            return self.legacy_record(self.out)
        return card_record(self.out) if self.card_record or self.record_file == RUN_FILE else None

    def _other_jobs(self) -> list[str]:
        locks = self.state_dir / "locks"
        if not locks.is_dir():
            return []
        held = []
        for path in sorted(locks.glob("job-*.lock")):
            holder = FolderLock(path, path.stem).held_by_other()
            if holder:
                held.append(holder)
        return held

    def _remove_owned(self) -> None:
        for name in self.owned:
            _remove(self.out / name)
        for sub in ("parts", "final", self.record_file):
            _remove(self.state_dir / sub)

    def open(self, overwrite: bool = False) -> "RunFolder":
        """Check the folder against this run's fields; create or resume the run state.

        Sets :attr:`complete` (same fields, finished: nothing to do) and :attr:`resumed`.
        Raises :class:`RunError` naming every differing field when the folder holds another run.
        Under torchrun, rank 0 opens (and overwrites) first; the other ranks then join its run.
        """
        rank, world, _ = dist_info()
        if world > 1 and self.all_ranks:
            init_distributed()
            if rank != 0:
                barrier()  # rank 0 has created (or replaced) the run, and checked its destination
                return self._open(overwrite=False, main=False)
            try:
                return self._open(overwrite)
            finally:
                barrier()
        return self._open(overwrite)

    def _open(self, overwrite: bool, main: bool = True) -> "RunFolder":
        if self.destination is not None and main:  # before any work, as a local folder is checked
            self.published = check_destination(self, overwrite)
            if overwrite:
                drop_shared_parts(self)
        check_out_dir(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        with self.setup_lock():
            if self.published is not None and self.published.holds(self.spec):  # set by the main process only
                self._take_published()
            try:
                record = self._existing_record()
            except RunError:
                if not overwrite:
                    raise
                record = {"torn": True}  # our own record, cut by a kill: --overwrite starts again
            replace = judge_output(self.shown, [p.name for p in self.out.iterdir()],
                                   [n for n in self.owned if (self.out / n).exists()], record, self.spec, overwrite)
            if replace:
                others = self._other_jobs()
                if others:
                    raise RunError(f"cannot --overwrite {self.shown}: in use by {others[0]}")
                self._remove_owned()
                record = None
            if record is not None and record.get("complete"):
                self.state, self.complete = record, True
            if not self.complete:
                self.resumed = record is not None
                self.state = record or {"kind": self.kind, "fingerprint": self.fingerprint, "fields": self.fields,
                                        "created": time.time(), "complete": False}
                (self.state_dir / "parts").mkdir(parents=True, exist_ok=True)
                self.save_state()
            if self.published is not None and self.complete and not self._is_published(self.published):
                publish(self, self.published)  # finished here, but a kill cut its publication short
            elif self.published is not None and not self.complete:
                share_missing_parts(self, self.state_dir / "parts")
        if self.complete and self.card_record:  # only the lock files (or a kill's leftovers during cleanup)
            shutil.rmtree(self.state_dir, ignore_errors=True)
        return self

    def _is_published(self, published: Published) -> bool:
        """The destination holds this run, finished, with every entry the staging folder holds of it."""
        return published.holds(self.spec, [n for n in self.owned if (self.out / n).exists()])

    def _take_published(self) -> None:
        """The destination holds this very run, finished: unless the staging folder holds it too,
        whatever the staging folder holds (a cache of ours) gives way to a copy of it."""
        try:
            here = self._existing_record()
        except RunError:
            here = None
        if here is not None and here.get("complete") and here.get("fingerprint") == self.fingerprint:
            return
        others = self._other_jobs()
        if others:
            raise RunError(f"{self.shown}: its staging folder {self.out} is in use by {others[0]}")
        self._remove_owned()
        fetch(self)

    def save_state(self) -> None:
        write_json_atomic(self.state_dir / self.record_file, self.state)

    def record(self) -> dict[str, Any]:
        """What a finished run leaves in its card (or its run.json)."""
        return {"kind": self.kind, "fingerprint": self.fingerprint, "fields": self.fields, "complete": True}

    # -- parts ---------------------------------------------------------------------------
    def parts_dir(self, split: str) -> Path:
        return self.state_dir / "parts" / split

    def done_parts(self, split: str) -> dict[int, dict[str, Any]]:
        """Finished parts of ``split``: ``{k: sidecar}`` (a part counts once its sidecar exists),
        with those that other machines shared at the destination copied in first."""
        folder = self.parts_dir(split)
        if self.destination is not None:
            fetch_parts(self, folder, split)
        if not folder.is_dir():
            return {}
        out = {}
        for f in folder.glob("*.json"):
            try:
                out[int(f.stem)] = json.loads(f.read_text())
            except ValueError:
                continue  # a torn sidecar: the part is redone
        return out

    def part_written(self, split: str, stem: str) -> None:
        """The engine wrote part ``stem`` of ``split`` here: share it at the destination, if any."""
        if self.destination is not None:
            share_part(self, self.parts_dir(split), split, stem)

    # -- finalising ----------------------------------------------------------------------
    def finalise(self, stage: Callable[[Path], None], order: Iterable[str] = ("README.md",)) -> None:
        """Stage the finished folder with ``stage(final_dir)``, then move it into place.

        ``order`` names the entries moved first; ``data`` always moves last. Safe to call
        again after a kill at any point: a staged result is moved, not rebuilt.
        """
        with self.setup_lock(wait=24 * 3600):
            current = self._existing_record()
            if current is None or current.get("complete"):  # another job finished it (or the same run again)
                self.complete = True
                if self.destination is not None and current is not None:
                    published = check_destination(self, overwrite=False)
                    if not self._is_published(published):
                        publish(self, published)
                return
            self.state = current
            final = self.state_dir / "final"
            if self.state.get("finalise") != "staged":
                if final.exists():
                    shutil.rmtree(final)
                final.mkdir(parents=True)
                stage(final)
                self.state["finalise"] = "staged"
                self.save_state()
            names = [n for n in order if (final / n).exists()]
            names += sorted(p.name for p in final.iterdir() if p.name not in names and p.name != "data") if final.is_dir() else []
            names += ["data"] if (final / "data").exists() else []
            for name in names:
                target = self.out / name
                if name == "data" and target.exists():
                    raise RunError(f"{target} exists while a finished {self.kind} run waits to move its data there; "
                                   "move it away and rerun")
                os.replace(final / name, target)
            shutil.rmtree(self.state_dir / "parts", ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            if self.card_record:
                (self.state_dir / self.record_file).unlink(missing_ok=True)
            else:
                self.state = {**self.state, **self.record()}
                self.state.pop("finalise", None)
                self.save_state()
            self.complete = True
            if self.destination is not None:
                publish(self, self.published)
        if self.card_record:
            shutil.rmtree(self.state_dir, ignore_errors=True)

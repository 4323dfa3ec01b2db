"""Publishing a finished run to its destination: the object store (or Hub repo, or any
``pyarrow.fs`` / fsspec URI) an ``--out`` names (:mod:`idc_toolkit.stores`).

The run works in its local staging folder under every rule of :mod:`.folder`. The destination
is held to the same rule (:mod:`.rules`) before any work (:func:`check_destination`), and a
destination that already holds this very run, finished, is its result (:func:`fetch`: the
staging folder takes a copy, so what a command reads afterwards is there). Publishing
(:func:`publish`):

1. looks at the destination again: another machine may have published there meanwhile;
2. writes ``.idc_run/publishing-<record>`` (this run's kind, fingerprint and fields), so that a
   kill from here on is recognised as this run's own unfinished publication;
3. removes the record there, then the entries a run of ours wrote there (``owned`` only);
4. uploads the finished entries, ``data/`` first and the record last (the card, or
   ``.idc_run/<record>``): whoever finds the record finds every file it names;
5. removes the marker.

Every step can be repeated, so the next run finishes a publication that a kill cut short.

While the run works, each part it writes is shared there too (:func:`share_part`), under
``.idc_run/parts-<record>/<fingerprint>/`` (its ``run.json`` names the run's settings), and the
parts other machines shared are copied in before the engine counts what is missing
(:func:`fetch_parts`). So ``--shard`` jobs and ``torchrun`` ranks on different machines, each with
its own staging folder, complete one run, and a run killed on one machine resumes on another.
Parts of another run's settings there are refused as a local folder's partial run is.
Object stores have no locks: two machines publishing different runs to one URI at the same
moment are caught by step 1 only if one of them has begun, not excluded.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Protocol

from tqdm.auto import tqdm

from ..errors import RunError
from ..stores import Store, first_line
from .rules import STATE_DIR, RunSpec, card_text_record, judge_output


class StagedRun(Protocol):
    """What publishing needs of a :class:`~.folder.RunFolder` (whose destination is set)."""

    destination: Store
    out: Path
    spec: RunSpec
    card_record: bool
    record_file: str
    progress: bool


@dataclass(frozen=True)
class Published:
    """What a destination holds of ours: the record of a finished run, the marker of an
    unfinished publication, and whether this run is to replace them (``--overwrite``)."""

    record: Optional[dict[str, Any]]
    marker: Optional[dict[str, Any]]
    replace: bool
    names: tuple[str, ...] = ()  # what the destination holds, by name

    @property
    def fingerprint(self) -> Optional[str]:
        return (self.marker or self.record or {}).get("fingerprint")

    def holds(self, spec: RunSpec, entries: Iterable[str] = ()) -> bool:
        """Whether this very run is published there, finished, with ``entries`` among its files
        (another run of ours sharing the folder may have replaced some: a generation's
        ``--overwrite`` removes the evaluation of its old captions, whose record stays)."""
        return (not self.replace and self.marker is None and self.record is not None
                and bool(self.record.get("complete")) and self.record.get("fingerprint") == spec.fingerprint
                and all(name in self.names for name in entries))


def parts_root(run: StagedRun) -> str:
    """Where the parts of runs of this record's kind are shared, one folder per fingerprint."""
    return f"{STATE_DIR}/parts-{Path(run.record_file).stem}"


def record_name(run: StagedRun) -> str:
    """Where the run's record lies, in the destination as in the staging folder."""
    return "README.md" if run.card_record else f"{STATE_DIR}/{run.record_file}"


def marker_name(run: StagedRun) -> str:
    return f"{STATE_DIR}/publishing-{run.record_file}"


def _json(dest: Store, name: str, overwrite: bool) -> Optional[dict[str, Any]]:
    text = dest.read_text(name)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        if overwrite:
            return {"torn": True}  # our own record, cut: --overwrite replaces it
        raise RunError(f"{dest.shown}/{name} is unreadable; pass --overwrite to publish the run again") from None
    return value if isinstance(value, dict) else None


def check_destination(run: StagedRun, overwrite: bool) -> Published:
    """Hold the destination to :func:`~.rules.judge_output`; what it holds of ours. One line
    naming the URI when it cannot be reached (no credentials, no network)."""
    try:
        return _check(run, overwrite)
    except OSError as exc:
        raise RunError(f"--out {run.destination.shown}: cannot be read ({first_line(exc)})") from None


def _check(run: StagedRun, overwrite: bool) -> Published:
    dest = run.destination
    names = dest.entries()
    if run.card_record:
        text = dest.read_text("README.md")
        record = None if text is None else card_text_record(text)
    else:
        record = _json(dest, record_name(run), overwrite)
    marker = _json(dest, marker_name(run), overwrite)
    present = [n for n in run.spec.owned if n in names]
    replace = judge_output(dest.shown, names, present, marker or record, run.spec, overwrite)
    for working in _runs_at_work(dest, run):  # parts of unfinished runs: refused as a partial run is
        if working.get("fingerprint") != run.spec.fingerprint:
            judge_output(dest.shown, (), (), working, run.spec, overwrite)
    return Published(record, marker, replace, tuple(names))


def _runs_at_work(dest: Store, run: StagedRun) -> list[dict[str, Any]]:
    """The records of the unfinished runs whose parts are shared there (one per fingerprint; a
    folder of parts whose ``run.json`` is missing or cut is a run of unknown settings)."""
    from pyarrow.fs import FileSelector, FileType

    found = dest.fs.get_file_info(FileSelector(dest.path(parts_root(run)), allow_not_found=True))
    records = []
    for info in found:
        if info.type == FileType.Directory:
            fingerprint = info.path.rstrip("/").rsplit("/", 1)[-1]
            record = _json(dest, f"{parts_root(run)}/{fingerprint}/run.json", True) or {}
            records.append(record if "fingerprint" in record else {"kind": run.spec.kind, "fingerprint": fingerprint,
                                                                   "fields": {}})
    return records


def drop_shared_parts(run: StagedRun) -> None:
    """``--overwrite``: the parts shared there are not taken back, as a local folder's are removed."""
    try:
        run.destination.remove(parts_root(run))
    except OSError as exc:
        raise RunError(f"--out {run.destination.shown}: cannot remove the parts shared there ({first_line(exc)})") from None


def share_part(run: StagedRun, parts_dir: Path, split: str, stem: str) -> None:
    """Upload the part ``stem`` of ``split`` (its parquet file, if it has rows, then its ``.json``,
    which marks it done there), and the run's settings beside the parts once."""
    dest = run.destination
    base = f"{parts_root(run)}/{run.spec.fingerprint}"
    try:
        if not dest.exists(f"{base}/run.json"):
            dest.write_text(f"{base}/run.json", json.dumps({"kind": run.spec.kind, "fingerprint": run.spec.fingerprint,
                                                            "fields": run.spec.fields}, default=str))
        if (parts_dir / f"{stem}.parquet").exists():
            dest.upload(parts_dir / f"{stem}.parquet", f"{base}/{split}/{stem}.parquet")
        dest.upload(parts_dir / f"{stem}.json", f"{base}/{split}/{stem}.json")
    except OSError as exc:
        raise RunError(f"--out {dest.shown}: sharing a part failed ({first_line(exc)}); it is kept in {run.out}, and the "
                       "same command shares it again") from None


def share_missing_parts(run: StagedRun, parts_root_here: Path) -> None:
    """Share the parts the staging folder holds and the destination lacks: one whose sharing a
    failure cut short, or those an ``--overwrite`` elsewhere dropped. A rerun of any job thus
    brings the destination's set up to what it has done."""
    from pyarrow.fs import FileSelector, FileType

    dest = run.destination
    missing: list[tuple[Path, str]] = []
    for folder in sorted(p for p in parts_root_here.glob("*") if p.is_dir()):
        stems = sorted(p.stem for p in folder.glob("*.json"))
        if not stems:
            continue
        base = f"{parts_root(run)}/{run.spec.fingerprint}/{folder.name}"
        try:
            there = {info.path.rsplit("/", 1)[-1] for info in
                     dest.fs.get_file_info(FileSelector(dest.path(base), allow_not_found=True)) if info.type == FileType.File}
        except OSError as exc:
            raise RunError(f"--out {dest.shown}: cannot list the parts shared there ({first_line(exc)})") from None
        missing += [(folder, stem) for stem in stems if f"{stem}.json" not in there]
    for folder, stem in _bar(run, missing, f"sharing parts with {dest.shown_short}"):
        share_part(run, folder, folder.name, stem)


def _bar(run: StagedRun, items: list, desc: str):
    """``items`` with a bar counting them (parts are uploaded or copied one by one); none when
    there is nothing to do or progress is off."""
    return tqdm(items, desc=desc, unit="part", disable=not run.progress or not items)


def fetch_parts(run: StagedRun, parts_dir: Path, split: str) -> None:
    """Copy into ``parts_dir`` the parts of ``split`` that other machines shared and this one lacks."""
    from pyarrow.fs import FileSelector, FileType

    dest = run.destination
    base = f"{parts_root(run)}/{run.spec.fingerprint}/{split}"
    try:
        found = dest.fs.get_file_info(FileSelector(dest.path(base), allow_not_found=True))
        names = [name for name in (info.path.rsplit("/", 1)[-1] for info in found if info.type == FileType.File)
                 if name.endswith(".json") and not (parts_dir / name).exists()]
        for name in _bar(run, sorted(names), f"copying {split} parts from {dest.shown_short}"):
            sidecar = json.loads(dest.read_text(f"{base}/{name}") or "{}")
            if sidecar.get("file") not in (None, name[:-len(".json")] + ".parquet"):  # never a path of its own
                raise ValueError(f"{base}/{name} names {sidecar.get('file')!r}, not its own parquet file")
            if sidecar.get("file"):
                dest.download(f"{base}/{sidecar['file']}", parts_dir / sidecar["file"])
            dest.download(f"{base}/{name}", parts_dir / name)  # last: the part is done here too
    except (OSError, ValueError) as exc:
        raise RunError(f"--out {dest.shown}: reading the parts other jobs shared failed ({exc})") from None


def fetch(run: StagedRun) -> None:
    """Copy the finished run the destination holds into the (emptied) staging folder."""
    try:
        _fetch(run)
    except (OSError, ValueError) as exc:  # ValueError: a key that would land outside the staging folder
        raise RunError(f"--out {run.destination.shown}: cannot copy the finished run it holds ({first_line(exc)})") from None


def _fetch(run: StagedRun) -> None:
    dest = run.destination
    for name in run.spec.owned:
        if dest.exists(name):
            dest.download(name, run.out / name)
    if not run.card_record:
        dest.download(record_name(run), run.out / record_name(run))


def publish(run: StagedRun, seen: Optional[Published]) -> None:
    """Publish the finished staging folder (see the module docstring); ``seen`` is what the
    destination held when the run was opened. A failure says the run is finished in its
    staging folder and that the same command publishes it."""
    try:
        _publish(run, seen)
    except OSError as exc:
        raise RunError(f"publishing to {run.destination.shown} failed ({first_line(exc)}); the run is finished in "
                       f"{run.out}: run the same command again to publish it") from None


def _publish(run: StagedRun, seen: Optional[Published]) -> None:
    dest = run.destination
    now = check_destination(run, overwrite=True)  # the rule still holds: nothing foreign appeared
    if now.fingerprint not in (None, run.spec.fingerprint, seen.fingerprint if seen else None):
        raise RunError(f"{dest.shown} changed while this run worked: another {(now.marker or now.record or {}).get('kind', 'run')} "
                       "run was published there meanwhile; rerun to compare, or choose another --out")
    dest.write_text(marker_name(run), json.dumps({"kind": run.spec.kind, "fingerprint": run.spec.fingerprint,
                                                  "fields": run.spec.fields, "started": time.time()}, default=str))
    last = record_name(run)
    dest.remove(last)  # from here on, a reader finds the marker, not a record of files being replaced
    for name in run.spec.owned:
        dest.remove(name)
    names = [n for n in run.spec.owned if (run.out / n).exists() and n != last]
    names.sort(key=lambda n: n != "data")  # data first, its record last
    entries = [*names, last]
    sizes = [(run.out / n).stat().st_size if (run.out / n).is_file() else
             sum(p.stat().st_size for p in (run.out / n).rglob("*") if p.is_file()) for n in entries]
    bar = tqdm(total=sum(sizes), unit="B", unit_scale=True, desc=f"publishing to {dest.shown_short}", disable=not run.progress)
    for name in entries:
        dest.upload(run.out / name, name, bar.update)
    bar.close()
    dest.remove(marker_name(run))
    dest.remove(parts_root(run))  # the shared parts are in the data now
    if run.card_record:
        dest.remove(STATE_DIR)  # a dataset's record is its card: nothing of the run's state stays beside it


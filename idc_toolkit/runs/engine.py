"""Running a per-batch function over a job's parts: one process, torch.distributed ranks, or Ray.

A capability (build, masks, entities, augmentation, generation) hands the engine a
:class:`RowTask`: its output ``features``, a ``batch_size``, ``setup(device)`` to load its
models once per process (or Ray actor), and ``__call__(split, rows, start)`` returning the
output rows of one batch of source rows plus JSON statistics. The engine owns everything
else: which parts this job (``--shard i/n``), this rank (``torchrun``) or this actor (Ray)
writes, writing them atomically, skipping finished ones, progress, the barrier.

Engines write the same parts (:mod:`.rows`), so their folders are byte-identical:

* ``local``: this process; under ``torchrun`` / ``accelerate launch`` (``WORLD_SIZE`` > 1)
  every rank takes a contiguous block of the job's parts, ``torch.distributed`` is
  initialised (gloo: the ranks only need barriers) and a real barrier ends the job.
* ``ray``: the job's missing parts become a ``ray.data`` dataset of two stages: their source
  rows are read on the driver's node (where its local folder and Hub cache are) and travel as
  blocks to a pool of actors (``ActorPoolStrategy``, ``num_gpus`` each), which build the task
  once and return each part as in-memory parquet bytes; the driver writes them
  (:func:`save_part`), so no node needs the driver's storage. ``ray_address`` joins a
  cluster; none starts a local instance.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from tqdm.auto import tqdm

from ..errors import RunError
from .args import EngineArgs
from .folder import RunFolder, write_json_atomic
from .parquet import ROWS_PER_GROUP, column_options, merge_stats
from .ranks import barrier, dist_info, init_distributed
from .rows import ListRows, Part, RowSource, contiguous_block, part_grid

log = logging.getLogger(__name__)


@dataclass
class PartOutput:
    rows: list[dict[str, Any]]
    stats: dict[str, Any] = field(default_factory=dict)


class RowTask(Protocol):
    features: Any  # datasets.Features of the rows it returns
    batch_size: int

    def setup(self, device: str) -> None: ...

    def __call__(self, split: str, rows: list[Any], start: int) -> PartOutput: ...


@dataclass
class PartRecord:
    """What a part's ``.json`` says besides its rows: written last, it marks the part done."""

    rows: int = 0
    arrow_bytes: int = 0
    stats: dict[str, Any] = field(default_factory=dict)


def stream_part(sink: Any, part: Part, source: RowSource, task: RowTask,
                on_batch: Optional[Callable[[int], Any]] = None) -> PartRecord:
    """Compute one part batch by batch into a parquet writer opened on ``sink`` (a path or an
    Arrow output stream) at its first row; nothing is opened for a part without rows. The
    writer options are the run's (:func:`column_options`), so a part streamed into memory on a
    Ray actor is the same bytes as one streamed into a file here."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = task.features.arrow_schema
    record = PartRecord()
    writer = None
    try:
        for b0 in range(part.start, part.stop, max(1, task.batch_size)):
            b1 = min(b0 + max(1, task.batch_size), part.stop)
            out = task(part.split, source.read(b0, b1), b0)
            merge_stats(record.stats, out.stats)
            if out.rows:
                table = pa.Table.from_pylist(out.rows, schema=schema)
                if writer is None:
                    writer = pq.ParquetWriter(sink, schema, **column_options(task.features, schema))
                writer.write_table(table, row_group_size=ROWS_PER_GROUP)
                record.rows += table.num_rows
                record.arrow_bytes += table.nbytes
            if on_batch is not None:
                on_batch(b1 - b0)
    finally:
        if writer is not None:
            writer.close()
    return record


def _part_files(folder_parts: Path, part: Part) -> tuple[Path, Path]:
    """A part's parquet file, and the ``.partial`` name this process writes it under first."""
    final = folder_parts / f"{part.stem}.parquet"
    return final, final.with_name(final.name + f".{os.getpid()}.partial")


def finish_part(folder_parts: Path, part: Part, record: PartRecord) -> None:
    """Mark a part done: its ``.json`` (rows, Arrow bytes, statistics), written atomically
    after the parquet file is in place."""
    final, _ = _part_files(folder_parts, part)
    write_json_atomic(final.with_suffix(".json"),
                      {"start": part.start, "stop": part.stop, "rows": record.rows, "arrow_bytes": record.arrow_bytes,
                       "file": final.name if record.rows else None, "stats": record.stats})


def write_part(folder_parts: Path, part: Part, source: RowSource, task: RowTask,
               on_batch: Optional[Callable[[int], Any]] = None) -> int:
    """Compute and write one part (streamed batch by batch into a ``.partial`` file renamed
    when complete); returns its row count. ``on_batch(n)`` is told after every batch, so
    progress moves with batches, not parts (a part of slow rows, 500 pairs through a ViT-L-14
    on 2 cores, takes many minutes)."""
    folder_parts.mkdir(parents=True, exist_ok=True)
    final, partial = _part_files(folder_parts, part)
    try:
        record = stream_part(str(partial), part, source, task, on_batch)
        if record.rows:
            partial.replace(final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finish_part(folder_parts, part, record)
    return part.stop - part.start


def save_part(folder_parts: Path, part: Part, parquet: bytes, record: PartRecord) -> None:
    """A part computed elsewhere (a Ray actor) written here, the same way: parquet bytes to a
    ``.partial`` file renamed into place, then the part's ``.json``."""
    folder_parts.mkdir(parents=True, exist_ok=True)
    if record.rows:
        final, partial = _part_files(folder_parts, part)
        try:
            partial.write_bytes(parquet)
            partial.replace(final)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    finish_part(folder_parts, part, record)


@dataclass
class JobOutcome:
    parts_total: int
    parts_mine: int
    parts_written: int
    complete: bool
    is_main: bool


def job_parts(folder: RunFolder, sources: dict[str, RowSource], rows_per_part: int, job: tuple[int, int]) -> tuple[list[Part], list[Part]]:
    """(every part of the run, this job's block of them)."""
    every = [p for split, src in sources.items() for p in part_grid(split, len(src), rows_per_part)]
    mine = [every[k] for k in contiguous_block(len(every), job[0], job[1])]
    return every, mine


def _missing(folder: RunFolder, parts: list[Part]) -> list[Part]:
    done = {split: folder.done_parts(split) for split in {p.split for p in parts}}
    return [p for p in parts if p.index not in done[p.split]]


def run_job(folder: RunFolder, sources: dict[str, RowSource], task: RowTask, *, rows_per_part: int,
            engine: Optional[EngineArgs] = None, device: str = "cpu", progress: bool = True, desc: str = "") -> JobOutcome:
    """Write this job's missing parts (see the module docstring); says whether the run is complete.
    ``engine``: which block of the parts this job writes (``--shard``) and with which engine."""
    engine = engine or EngineArgs()
    job = engine.shard
    every, mine = job_parts(folder, sources, rows_per_part, job)
    rank, world, _ = dist_info()
    if folder.state.get("finalise") == "staged":  # a kill during the last moves: only finalise is left
        return JobOutcome(len(every), len(mine), 0, complete=True, is_main=rank == 0)
    if job[1] > 1 and not mine:
        log.warning("--shard %d/%d has no rows: the run has %d part(s) of %d rows", job[0], job[1], len(every), rows_per_part)
    lock = folder.job_lock(job) if rank == 0 else None
    if lock is not None:
        lock.acquire()
    try:
        if engine.engine == "ray":
            written = _run_ray(folder, sources, task, _missing(folder, mine), progress, engine.ray_address, engine.ray_actors,
                               engine.ray_gpus_per_actor, desc, device)
        else:
            if world > 1:
                init_distributed()
                block = contiguous_block(len(mine), rank, world)
                mine_here = [mine[k] for k in block]
            else:
                mine_here = mine
            todo = _missing(folder, mine_here)
            written = 0
            if todo:
                task.setup(device)
            bar = tqdm(total=sum(p.stop - p.start for p in todo), unit="row", disable=not progress or not todo,
                       desc=desc + (f" rank {rank}" if world > 1 else ""))
            for part in todo:
                write_part(folder.parts_dir(part.split), part, sources[part.split], task, on_batch=bar.update)
                folder.part_written(part.split, part.stem)
                written += 1
            bar.close()
            barrier()
    finally:
        if lock is not None:
            lock.release()
    complete = not _missing(folder, every)
    if world > 1 and engine.engine != "ray":
        barrier()  # every rank has read the parts before rank 0's finalise moves them (else a slow rank saw them missing)
    return JobOutcome(len(every), len(mine), written, complete, is_main=rank == 0)


def _read_part_rows(batch: dict[str, Any], sources: dict[str, RowSource]) -> dict[str, Any]:
    """Ray Data stage 1, pinned to the driver's node: each part's source rows, read where the
    driver reads them (a local folder, the driver's Hub cache), into the block."""
    import numpy as np

    rows = [sources[str(split)].read(int(start), int(stop)) for split, start, stop in
            zip(batch["split"], batch["start"], batch["stop"])]
    out = dict(batch)
    out["rows"] = np.array(rows + [None], dtype=object)[:-1]  # one list of rows per part, never broadcast
    return out


class _RayPartWriter:
    """Ray Data stage 2, an actor: builds the task once, computes each part it is given from the
    rows in its block, and returns the part's parquet bytes and record (the driver writes them)."""

    def __init__(self, task: RowTask, device: str):
        self.task = task
        task.setup(device)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import json

        import numpy as np
        import pyarrow as pa

        out: dict[str, list[Any]] = {"split": [], "index": [], "start": [], "stop": [], "parquet": [], "record": []}
        for split, index, start, stop, rows in zip(batch["split"], batch["index"], batch["start"], batch["stop"], batch["rows"]):
            part = Part(str(split), int(index), int(start), int(stop))
            sink = pa.BufferOutputStream()
            record = stream_part(sink, part, ListRows(list(rows), part.start), self.task)
            for key, value in (("split", part.split), ("index", part.index), ("start", part.start), ("stop", part.stop)):
                out[key].append(value)
            out["parquet"].append(sink.getvalue().to_pybytes() if record.rows else b"")
            out["record"].append(json.dumps({"rows": record.rows, "arrow_bytes": record.arrow_bytes, "stats": record.stats}))
        return {k: np.array(v + [None], dtype=object)[:-1] for k, v in out.items()}


def ray_placement(device: str, gpus_per_actor: float, actors: Optional[int], parts: int,
                  resources: dict[str, float]) -> tuple[str, float, int]:
    """``(actor device, GPUs per actor, actors)`` of a Ray job: ``--device cuda`` asks for one GPU
    per actor unless ``--ray-gpus-per-actor`` says otherwise; the pool defaults to what the
    cluster holds of the resource the actors need (GPUs for GPU work, CPUs otherwise), never more
    actors than parts."""
    if device.startswith("cuda") and gpus_per_actor <= 0:
        gpus_per_actor = 1.0
    if gpus_per_actor > 0:
        available = int(resources.get("GPU", 0) // gpus_per_actor)
        if available < 1 and not actors:
            raise RunError(f"--engine ray: the cluster has {resources.get('GPU', 0):g} GPU(s), fewer than one actor's "
                           f"{gpus_per_actor:g}; pass --device cpu or join a cluster with GPUs (--ray-address)")
    else:
        available = int(resources.get("CPU", 1))
    n_actors = actors or max(1, min(parts, available))
    return ("cuda" if gpus_per_actor > 0 else "cpu"), gpus_per_actor, n_actors


def _run_ray(folder: RunFolder, sources: dict[str, RowSource], task: RowTask, todo: list[Part], progress: bool,
             address: Optional[str], actors: Optional[int], gpus_per_actor: float, desc: str, device: str = "cpu") -> int:
    if not todo:
        return 0
    try:
        import ray
    except ModuleNotFoundError:
        raise RunError("--engine ray needs Ray: pip install 'idc-toolkit[distributed]'") from None
    if not ray.is_initialized():
        import os

        # Ray Data's actor pools log an error-level core_worker line on every successful run (its
        # own constructor argument in the object store; ray-project/ray#57733): the driver's
        # native log keeps fatal errors only, unless the user set RAY_BACKEND_LOG_LEVEL
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    import json

    ray.data.DataContext.get_current().enable_progress_bars = False  # our bar reports the rows written

    items = [{"split": p.split, "index": p.index, "start": p.start, "stop": p.stop} for p in todo]
    device, gpus_per_actor, n_actors = ray_placement(device, gpus_per_actor, actors, len(todo), ray.cluster_resources())
    here = ray.get_runtime_context().get_node_id()  # the driver's node: its local files and Hub cache
    ds = (ray.data.from_items(items, override_num_blocks=len(items))
          # one reader at a time: with num_cpus=0 and no cap, Ray started a worker process per part
          # (benchmarks/engines.py: 10 GB and 104 s for 32 parts, against 27 s with actors reading)
          .map_batches(_read_part_rows, batch_size=1, fn_kwargs={"sources": sources}, num_cpus=0,
                       compute=ray.data.TaskPoolStrategy(size=1), label_selector={"ray.io/node-id": here})
          .map_batches(_RayPartWriter, batch_size=1, compute=ray.data.ActorPoolStrategy(size=n_actors),
                       num_gpus=gpus_per_actor or None, num_cpus=1, fn_constructor_kwargs={"task": task, "device": device}))
    bar = tqdm(total=sum(p.stop - p.start for p in todo), unit="row", disable=not progress, desc=f"{desc} (ray)")
    for row in ds.iter_rows():
        part = Part(str(row["split"]), int(row["index"]), int(row["start"]), int(row["stop"]))
        meta = json.loads(row["record"])
        save_part(folder.parts_dir(part.split), part, row["parquet"], PartRecord(meta["rows"], meta["arrow_bytes"], meta["stats"]))
        folder.part_written(part.split, part.stem)
        bar.update(part.stop - part.start)
    bar.close()
    return len(todo)

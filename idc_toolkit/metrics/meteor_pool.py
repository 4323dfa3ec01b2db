"""METEOR's Python aligner in child processes (:mod:`.meteor_worker`), beside BLEU, ROUGE-L and
CIDEr: a thread would hold their interpreter lock.

The processes start before tokenization, so their tables load meanwhile; :meth:`AlignerPool.submit`
then hands out blocks of segments, each with its captions, one at a time (two ahead, so none waits
for the next), so the processes share the job whatever their speed and none holds more than a
block; the caller may align blocks too once its own metrics are done, where a core is free
(:meth:`AlignerPool.assist`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Callable, Optional, Sequence

from ..errors import EvaluationError

#: segments from which the aligner runs in child processes (a smaller job does not pay back a
#: process's start), and segments per process beyond the first (each loads its own tables)
CHILD_FROM = 2000
#: segments per block: small enough that the processes finish together
BLOCK = 500
#: segments still unassigned from which the caller aligns blocks itself, where a core is free
#: (it loads its own tables first: fewer segments do not pay them back)
ASSIST_FROM = 1000
#: the most aligner processes one scoring starts (each holds its own tables in memory)
MOST_PROCESSES = 4


def usable_cores() -> int:
    """Cores this process may run on (a container's or ``taskset``'s share, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def processes_for(segments: int) -> int:
    """Aligner processes for a job of ``segments``: none below :data:`CHILD_FROM` or on one core,
    else one per :data:`CHILD_FROM` segments, leaving one core to the caller's own metrics (each
    process builds the sentences its blocks meet: two on two cores did more work than one)."""
    cores = usable_cores()
    if cores < 2 or segments < CHILD_FROM:
        return 0
    return max(1, min(cores - 1, MOST_PROCESSES, segments // CHILD_FROM))


class _Worker:
    """One :mod:`.meteor_worker` process and what it was given."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "idc_toolkit.metrics.meteor_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr = b""
        self.given: set[int] = set()  # blocks handed to it and not yet returned
        self.served = False  # a thread reads its answers (and closes that pipe)
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self) -> None:
        with self.proc.stderr:
            self.stderr = self.proc.stderr.read()

    def send(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):  # it ended: its exit status says why
            pass

    def failure(self, code: int) -> str:
        tail = self.stderr.decode(errors="replace").strip().splitlines()[-3:] if self.stderr else []
        return f"METEOR's aligner process failed (exit {code}): {' | '.join(tail)}"

    def end(self, last: bytes = b"end\n") -> None:
        """Send ``last`` and close its input: it ends on its own, reaped in the background."""
        self.send(last)
        threading.Thread(target=self.close, daemon=True).start()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not self.served:  # nobody reads its answers: their pipe is closed here
            self.proc.stdout.close()


class AlignerPool:
    """``processes`` aligner processes started now; :meth:`submit` hands them the job,
    :meth:`result` gathers every block in order."""

    def __init__(self, processes: int = 1) -> None:
        self.workers = [_Worker() for _ in range(max(1, processes))]
        self.blocks: dict[int, Optional[list[str]]] = {}  # a block's lines (None: on_block's, or result()'s)
        self.n_blocks = 0
        self.next_block = 0  # the first block nobody was given
        self.error: Optional[str] = None
        self.failure: Optional[BaseException] = None  # raised by an on_block
        self.on_block: Optional[Callable[[int, list[str]], None]] = None
        self.assisting = False
        self.running = 0  # reader threads not yet at their worker's end
        self.done = threading.Condition()
        self.handling = threading.Lock()  # one on_block at a time

    def submit(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
               on_block: Optional[Callable[[int, list[str]], None]] = None) -> None:
        """Hand every process its first blocks; ``on_block(first, lines)`` runs for each
        block as it is aligned (``first``: its first segment), so its handling overlaps the rest of
        the scoring."""
        self.on_block = on_block
        self.hypotheses, self.references = hypotheses, references
        self.block = BLOCK
        self.n_blocks = -(-len(self.hypotheses) // self.block)
        self.running = len(self.workers)
        for worker in self.workers:
            threading.Thread(target=self._serve, args=(worker,), daemon=True).start()

    def _take(self) -> Optional[int]:
        with self.done:
            if self.error or self.next_block >= self.n_blocks:
                return None
            self.next_block += 1
            return self.next_block - 1

    def _give(self, worker: _Worker) -> None:
        k = self._take()
        if k is None:
            worker.send(b"end\n")
        else:
            worker.given.add(k)
            worker.send((json.dumps([k, *self._part(k)]) + "\n").encode())

    def _serve(self, worker: _Worker) -> None:
        """Send ``worker`` two blocks, then a block for each one it returns."""
        worker.served = True
        self._give(worker)
        self._give(worker)
        with worker.proc.stdout:
            for line in worker.proc.stdout:
                self._give(worker)  # its next block first: the caller's other threads hold the interpreter
                k, stats = json.loads(line)
                worker.given.discard(k)
                self._keep(k, stats)
        code = worker.proc.wait()
        with self.done:
            if code != 0 or worker.given:  # blocks given and never returned: nobody else will align them
                self.error = self.error or worker.failure(code)
            self.running -= 1
            self.done.notify_all()

    def cancel(self) -> None:
        """No job after all (the statistics cache held it): the processes end on their own; nothing waits."""
        for worker in self.workers:
            worker.end(b"null\n")

    def assist(self) -> None:
        """Align blocks here, taken like a process's, while :data:`ASSIST_FROM` segments are left
        unassigned and a core is free of the pool's processes."""
        if usable_cores() <= len(self.workers):
            return
        from .meteor_align import Memo, statistics

        memo = Memo()
        with self.done:
            self.assisting = True
        try:
            while True:
                with self.done:
                    if (self.n_blocks - self.next_block) * self.block < ASSIST_FROM:
                        return
                k = self._take()
                if k is None:
                    return
                self._keep(k, statistics(*self._part(k), memo=memo))
        finally:
            with self.done:
                self.assisting = False
                self.done.notify_all()

    def _part(self, k: int) -> tuple[list[str], list[list[str]]]:
        part = slice(k * self.block, (k + 1) * self.block)
        return list(self.hypotheses[part]), [list(r) for r in self.references[part]]

    def _keep(self, k: int, stats: list[str]) -> None:
        """``on_block`` for a block new here, then the block counts as done."""
        with self.handling:
            with self.done:
                if k in self.blocks:
                    return
            try:
                if self.on_block is not None:
                    self.on_block(k * self.block, stats)
            except BaseException as exc:  # raised by result(), in the scoring's thread
                with self.done:
                    self.failure = self.failure or exc
            with self.done:
                self.blocks[k] = stats if self.on_block is None else None  # on_block has the lines
                self.done.notify_all()

    def result(self) -> list[str]:
        """Every block, once all are back: their lines in order (none where ``on_block`` took them)."""
        with self.done:
            while not self.error and len(self.blocks) < self.n_blocks and (self.running or self.assisting):
                self.done.wait()
        if self.error:
            self.close()
            raise EvaluationError(self.error)
        if self.failure is not None:
            self.close()
            raise self.failure
        self.release()
        missing = [k for k in range(self.n_blocks) if k not in self.blocks]
        if missing:  # taken by an assist that was cut short
            from .meteor_align import statistics

            for k in missing:
                self._keep(k, statistics(*self._part(k)))
            if self.failure is not None:
                raise self.failure
        lines = [line for k in range(self.n_blocks) for line in self.blocks[k] or ()]
        # each block stays marked done, its lines held by the caller alone: a reader thread still
        # ending keeps this pool alive a little longer, not 80,000 lines
        with self.done:
            self.blocks = dict.fromkeys(self.blocks)
        return lines

    def release(self) -> None:
        """Let the processes end on their own (every block is back) without waiting for their exit."""
        for worker in self.workers:
            worker.end()

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

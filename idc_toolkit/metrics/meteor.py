"""METEOR 1.5 through pycocoevalcap's bundled jar, with one JVM per evaluation.

coco-caption semantics: for each pair one ``SCORE ||| ref1 ||| ... ||| hyp`` line gives the
pair's sufficient statistics; METEOR's corpus score is computed from the *summed* statistics.
So a group's score is the score of its pairs' summed statistics (:mod:`.meteor_stats`, METEOR's
own arithmetic): identical to a separate pycocoevalcap run on the group, without restarting the
JVM or re-aligning any segment. The JVM loads only the part of METEOR's paraphrase table that
the references can match (:mod:`.paraphrase`: 0.5-1.5 s instead of 6-9 s for all of it).

What pycocoevalcap gets wrong and this module does not: ``SCORE`` lines are pipelined by a
writer thread instead of one blocking round trip each; every read has a timeout; a dead or
confused JVM (out of memory, protocol desync) raises :class:`EvaluationError` with its stderr
instead of a ``ValueError`` followed by a deadlock in ``Meteor.__del__``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import queue
import subprocess
import threading
from array import array
from typing import Optional, Sequence

from ..errors import EvaluationError
from .base import Metric
from .implementation import JAVA
from .meteor_pool import AlignerPool, processes_for
from .meteor_stats import added_rows, aggregate_statistics, meteor_score, score_line
from .paraphrase import Coverage, coverage_needed, load_in_background, whole_table_asked, write_cut_table
from .text_cache import TextCache
from .tokenizer import C1_ONLY, java_executable, pycocoevalcap_dir
from .views import Picked

METEOR_ARGS = ["-jar", "-Xmx2G", "meteor-1.5.jar", "-", "-", "-stdio", "-l", "en", "-norm"]
#: JVM settings that change how fast METEOR runs, never what it answers (Java's arithmetic is
#: strict), so not part of the statistics cache's key: loading the paraphrase table allocates
#: heavily and compiles much, which the throughput collector and a committed heap serve best.
JVM_TUNING = ["-XX:+UseParallelGC", "-Xms2G", "-XX:CICompilerCount=2"]
#: a JVM with fewer segments than this to align compiles with C1 alone: C2's compilations do not
#: pay back in so short a run (same or less time with about half the CPU; benchmarks/README.md#meteors-compiler)
C1_ONLY_BELOW = 4000
#: the longest caption METEOR is given: its aligner's memory grows with the product of the
#: lengths (a 240 kB caption exhausts the JVM's 2 GB); IDC captions are < 500.
MAX_METEOR_CHARS = 20_000
#: bytes of a line's sha256, the statistics cache's key
DIGEST = 32


def check_lengths(ids: Sequence[str], hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    """Refuse, before the JVM starts, a caption too long for METEOR, naming its pair."""
    for pid, hyp, refs in zip(ids, hypotheses, references):
        for what, text in (("prediction", hyp), *(("reference", r) for r in refs)):
            if len(text) > MAX_METEOR_CHARS:
                raise EvaluationError(f"pair {pid!r}: its {what} has {len(text):,} characters, more than METEOR can align "
                                      f"({MAX_METEOR_CHARS:,}); check that caption, or score without METEOR (--metrics)")


class MeteorProcess:
    """One METEOR JVM; start it early, it loads in the background while Python works.

    With ``coverage`` it loads a paraphrase table cut to what ``coverage`` can match
    (:func:`.paraphrase.write_cut_table`) and aligns only references that ``coverage`` covers
    as the whole table would (:meth:`covers`); without, the whole table."""

    def __init__(self, timeout: float = 300.0, coverage: Optional[Coverage] = None, segments: Optional[int] = None):
        self.timeout = timeout
        self.coverage = coverage
        #: compiled with C1 alone: for the few segments it was started for (``segments``)
        self.quick = segments is not None and segments < C1_ONLY_BELOW
        table = ["-a", str(write_cut_table(coverage))] if coverage is not None else []
        #: False while an exchange is under way: a process left mid-answer must not be reused
        self.in_step = True
        self._stderr: list[bytes] = []
        try:
            self._proc = subprocess.Popen(
                [java_executable(), *JVM_TUNING, *([C1_ONLY] if self.quick else []), *METEOR_ARGS, *table],
                cwd=str(pycocoevalcap_dir() / "meteor"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise EvaluationError(f"cannot start METEOR: {exc}") from None
        self._lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        with self._proc.stdout:  # each reader closes its pipe at the JVM's end (no ResourceWarning)
            for line in self._proc.stdout:
                self._lines.put(line)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        with self._proc.stderr:
            for line in self._proc.stderr:
                self._stderr.append(line)
                del self._stderr[:-50]

    def _fail(self, what: str) -> EvaluationError:
        self.close()
        # the JVM has exited (or was killed): let the reader take the rest of its stderr, which
        # names the cause, before it is quoted (stdout's end can be seen first)
        self._stderr_reader.join(timeout=5)
        tail = b"".join(self._stderr).decode(errors="replace").strip()[-2000:]
        return EvaluationError(f"METEOR {what}" + (f"; its stderr ends with:\n{tail}" if tail else ""))

    def _readline(self) -> str:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._proc.kill()
            raise self._fail(f"gave no answer within {self.timeout:.0f} s (killed)") from None
        if line is None:
            raise self._fail(f"exited unexpectedly (exit code {self._proc.wait()})")
        return line.decode().strip()

    def _write_all(self, lines: list[str], errors: list[BaseException]) -> None:
        try:
            assert self._proc.stdin is not None
            for line in lines:
                self._proc.stdin.write((line + "\n").encode())
            self._proc.stdin.flush()
        except BaseException as exc:  # broken pipe: the reader reports the JVM's death
            errors.append(exc)

    def _exchange(self, lines: list[str], n_answers: int) -> list[str]:
        self.in_step = False
        errors: list[BaseException] = []
        writer = threading.Thread(target=self._write_all, args=(lines, errors), daemon=True)
        writer.start()
        answers = [self._readline() for _ in range(n_answers)]
        writer.join()
        self.in_step = not errors
        return answers

    def alive(self) -> bool:
        proc = getattr(self, "_proc", None)
        return proc is not None and proc.poll() is None

    def covers(self, need: Optional[Coverage]) -> bool:
        """Whether this JVM's paraphrase table holds every entry that references needing
        ``need`` can match (None: references that need the whole table)."""
        return self.coverage is None or (need is not None and self.coverage.covers(need))

    def suits(self, segments: Optional[int]) -> bool:
        """Whether this JVM's compiler suits a job of ``segments``: a C1-only one suits a short
        job only (None: a job of unknown length, which gets a JVM with C2)."""
        return not (self.quick and (segments is None or segments >= C1_ONLY_BELOW))

    def statistics(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[str]:
        """Sufficient statistics of every (hypothesis, references) segment, in order."""
        lines = [score_line(h, r) for h, r in zip(hypotheses, references)]
        stats = self._exchange(lines, len(lines))
        for i, s in enumerate(stats):
            try:
                [float(x) for x in s.split()]
            except ValueError:
                raise self._fail(f"answered {s[:80]!r} for segment {i}: protocol out of step") from None
        return stats

    def evaluate(self, stats: Sequence[str]) -> tuple[float, list[float]]:
        """METEOR's own corpus score and segment scores of ``stats`` (one ``EVAL`` line): the
        reference that :func:`.meteor_stats.meteor_score` is tested against."""
        if not stats:
            return 0.0, []
        answers = self._exchange(["EVAL ||| " + " ||| ".join(stats)], len(stats) + 1)
        try:
            values = [float(a) for a in answers]
        except ValueError:
            raise self._fail("returned a non-numeric EVAL answer: protocol out of step") from None
        return values[-1], values[:-1]

    def close(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        try:  # also when the JVM has already exited (killed on a timeout, or dead): no open pipe left
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        if proc.poll() is not None:
            return
        # killed, not asked to finish: it keeps no state, and a JVM still loading the paraphrase
        # table (prewarmed for a scoring whose statistics were all cached) would read its end of
        # input only once loaded
        proc.kill()
        proc.wait()

    def __enter__(self) -> "MeteorProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_IDLE: list[MeteorProcess] = []
_IDLE_LOCK = threading.Lock()
_PARKED: list = []  # an aligner process prewarm() started ahead of its scoring


def acquire_process(need: Optional[Coverage] = None, segments: Optional[int] = None) -> MeteorProcess:
    """A warm METEOR JVM left idle by an earlier scoring in this Python process whose table
    covers ``need``, else a new one with a table cut to ``need`` (the whole table for None).
    The ``SCORE`` protocol keeps no state between requests, so ``compare`` (two systems), a
    second protocol or the next scoring in a notebook reuses the JVM instead of loading it again."""
    with _IDLE_LOCK:
        for process in list(_IDLE):
            if not (process.alive() and process.in_step):
                _IDLE.remove(process)
                process.close()
            elif process.covers(need) and process.suits(segments):
                _IDLE.remove(process)
                return process
    return MeteorProcess(coverage=need, segments=segments)


def release_process(process: MeteorProcess) -> None:
    """Keep a healthy JVM whose last exchange completed for the next scoring, which likely
    scores against the same references (at most :func:`meteor_workers` stay idle, the least
    recently used closed first, all closed at exit); close any other."""
    evicted = []
    with _IDLE_LOCK:
        if process.alive() and process.in_step:
            _IDLE.append(process)
            while len(_IDLE) > meteor_workers():
                evicted.append(_IDLE.pop(0))
        else:
            evicted.append(process)
    for old in evicted:
        old.close()


_SHARED: list[list[MeteorProcess]] = []  # the JVMs lent to every METEOR metric inside one_jvm_set()


@contextlib.contextmanager
def one_jvm_set():
    """Inside the block every METEOR metric aligns and scores on the same JVMs. For callers
    that use their metrics one at a time, as ``compare`` does with its two systems (build A,
    build B, then resample A and B in turn): the second system loads no JVM of its own while
    the first one's sits idle. The JVMs return to the idle pool when the block ends."""
    with _IDLE_LOCK:
        if _SHARED:
            raise RuntimeError("one_jvm_set() does not nest")
        _SHARED.append([])
    try:
        yield
    finally:
        with _IDLE_LOCK:
            workers = _SHARED.pop()
        for process in workers:
            release_process(process)


def acquire_processes(n: int, need: Optional[Coverage] = None, segments: Optional[int] = None) -> list[MeteorProcess]:
    """``n`` JVMs for one METEOR metric whose tables cover ``need``: the block's own inside
    :func:`one_jvm_set`, else warm idle ones or new ones (:func:`acquire_process`)."""
    with _IDLE_LOCK:
        shared = _SHARED[0] if _SHARED else None
        if shared is not None and len(shared) == n and all(p.alive() and p.covers(need) for p in shared):
            return shared
    each = None if segments is None else -(-segments // n)  # the segments each JVM aligns
    workers = [acquire_process(need, each) for _ in range(n)]
    if shared is None:
        return workers
    with _IDLE_LOCK:
        stale, shared[:] = list(shared), workers
    for process in stale:
        process.close()
    return shared


def release_processes(workers: Sequence[MeteorProcess]) -> None:
    """Give back what :func:`acquire_processes` gave (the block's own stay until it ends)."""
    with _IDLE_LOCK:
        if _SHARED and workers is _SHARED[0]:
            return
    for process in workers:
        release_process(process)


def prewarm(pairs: int = 0) -> None:
    """Prepare, now, what a scoring will need while the caller starts Python libraries,
    reads the files and tokenizes: the index of METEOR's paraphrase table (read in a thread);
    for a Python scoring of about ``pairs`` pairs, the aligner's child process, which loads its
    tables meanwhile; where the whole table is used (``IDC_METEOR_PARAPHRASE=full``), the JVMs
    themselves, into the idle pool (each loads the table, 6-9 s of a core). ``idc-eval
    --predictions`` calls it first thing."""
    from .implementation import current

    processes = processes_for(pairs) if current() != JAVA else 0
    if processes:
        with _IDLE_LOCK:
            if not _PARKED:
                _PARKED.append(AlignerPool(processes))
    if not whole_table_asked() or current() != JAVA:
        load_in_background()
        return
    with _IDLE_LOCK:
        missing = meteor_workers() - len(_IDLE)
    for _ in range(max(0, missing)):
        process = MeteorProcess()
        with _IDLE_LOCK:
            _IDLE.append(process)


def close_idle_processes() -> None:
    """Close the warm JVMs kept for reuse and an aligner process started ahead (also done at exit)."""
    with _IDLE_LOCK:
        while _IDLE:
            _IDLE.pop().close()
        while _PARKED:
            _PARKED.pop().cancel()


def parked_aligner() -> Optional[AlignerPool]:
    """The aligner processes :func:`prewarm` started ahead, if any (taken: the next start makes its own)."""
    with _IDLE_LOCK:
        return _PARKED.pop() if _PARKED else None


atexit.register(close_idle_processes)


def meteor_workers() -> int:
    """JVMs that align segments in parallel: ``IDC_METEOR_WORKERS``, else one per 4 cores
    (at most 4): each JVM loads the paraphrase table before it aligns anything, so the split
    pays only where cores are plenty."""
    import os

    value = os.environ.get("IDC_METEOR_WORKERS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise EvaluationError(f"IDC_METEOR_WORKERS={value!r} is not a number") from None
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def statistics_cache(implementation: str) -> TextCache:
    """METEOR's per-segment statistics keyed by the exact ``SCORE`` line (its SHA-256), so a second protocol,
    ``compare`` or a rerun does not align a segment twice (a segment's statistics depend only on
    its line and the jar). ``IDC_METEOR_CACHE=0`` turns it off; ``IDC_METEOR_CACHE=PATH`` moves it.
    Each implementation keeps its own entries: ``--scorer java`` asks the jar, never the Python's answers."""
    from importlib import metadata

    return TextCache("IDC_METEOR_CACHE", "meteor_stats.sqlite", "stats",
                     f"pycocoevalcap {metadata.version('pycocoevalcap')} {' '.join(METEOR_ARGS)} {implementation}")


def parallel_statistics(processes: Sequence["MeteorProcess"], hypotheses: Sequence[str],
                        references: Sequence[Sequence[str]]) -> list[str]:
    """Statistics of every segment, contiguous blocks aligned by the JVMs side by side
    (segments are independent, so the result equals one JVM's)."""
    n = len(processes)
    if n == 1 or len(hypotheses) < 2 * n:
        return processes[0].statistics(hypotheses, references)
    bounds = [round(k * len(hypotheses) / n) for k in range(n + 1)]
    parts: list = [None] * n
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            parts[k] = processes[k].statistics(hypotheses[bounds[k]:bounds[k + 1]], references[bounds[k]:bounds[k + 1]])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [s for part in parts for s in part]


def _held_exactly(rows, dtype) -> bool:
    """Whether every value of ``rows`` survives a round trip through ``dtype`` unchanged."""
    import numpy as np

    with np.errstate(invalid="ignore", over="ignore"):  # NaN, infinities, negatives: not held, as compared
        return bool(np.array_equal(rows.astype(dtype), rows) and np.isfinite(rows).all())


class Meteor(Metric):
    """METEOR 1.5: every distinct pair is aligned once into a statistics line, by the toolkit's
    Python (:mod:`.meteor_align`, the default) or by the jar's JVMs (the ``java`` scorer,
    :mod:`.implementation`); a segment's, a group's or a resample's score is METEOR's arithmetic
    on the statistics, summed as METEOR sums them (:mod:`.meteor_stats`)."""

    family = "METEOR"
    columns = ("METEOR",)
    chart_column = "METEOR"
    paper_columns = {"METEOR": "M"}
    background = True  # alignment runs in the JVM while the other metrics compute

    @classmethod
    def prewarm(cls, pairs: int = 0) -> None:
        prewarm(pairs)

    @classmethod
    def check_inputs(cls, ids, hypotheses, references) -> None:
        check_lengths(ids, hypotheses, references)

    @classmethod
    def notes(cls) -> list[str]:
        from .paraphrase import index_missing

        return ["METEOR: indexing its paraphrase table, once for this machine (~8 s; later scorings read the index)"
                ] if index_missing() else []

    @classmethod
    def session(cls):
        return one_jvm_set()

    def start(self, pairs: int = 0) -> None:
        from .implementation import current

        # the paraphrase index loads while the captions are tokenized; the JVMs start once
        # the references they align are known (their table is cut to them)
        self.implementation = current()  # read here: compute() runs in a thread of its own
        self.workers: list[MeteorProcess] = []
        self._child: Optional[AlignerPool] = None
        if self.implementation == JAVA:
            load_in_background()
        else:
            # one prewarm() started for this scoring; otherwise prepare() starts one if the
            # statistics cache leaves enough to align (a rescoring of the same pairs needs none)
            self._child = parked_aligner()

    def prepare(self, hypotheses, references) -> None:
        """The cached statistics, and JVMs started for the segments that are not cached."""
        if not hasattr(self, "implementation"):  # prepared without start(): the scorer in force now
            from .implementation import current

            self.implementation = current()
        import numpy as np

        # a segment's statistics depend on its SCORE line alone, so a repeated line is aligned
        # once: LEVIR-CC's ~1,000 no-change test pairs share their five references, and a model
        # answers most of them with the same sentence
        slot: dict[bytes, int] = {}  # a line's digest: a scoring holds 32 bytes a line, not the line
        self._which = np.fromiter((slot.setdefault(hashlib.sha256(score_line(h, r).encode()).digest(), len(slot))
                                   for h, r in zip(hypotheses, references)), dtype=np.int64, count=len(hypotheses))
        self._unique = b"".join(slot)  # the digests end to end: 32 bytes a line, not an object of 65
        n_lines = len(slot)
        del slot
        with statistics_cache(self.implementation) as cache:
            cached: dict[int, str] = cache.get(self._keys(range(n_lines)))
        self._table: Optional[np.ndarray] = None  # each distinct line's statistics, parsed block by block
        self._parse(list(cached), list(cached.values()))  # now: the rows are kept, not the lines
        first = np.full(n_lines, len(self._which), dtype=np.int64)
        np.minimum.at(first, self._which, np.arange(len(self._which)))
        todo = np.array([u for u in range(n_lines) if u not in cached], dtype=np.int64)
        del cached
        # the distinct lines to align, and a pair holding each: 8 bytes a line, read back as ints
        self._todo_lines, self._todo = array("q", todo.tobytes()), array("q", first[todo].tobytes())
        if self._todo and self.implementation == JAVA:
            self.workers = acquire_processes(meteor_workers(), coverage_needed([references[i] for i in self._todo]),
                                             len(self._todo))
        elif processes_for(len(self._todo)):
            if getattr(self, "_child", None) is None:
                self._child = AlignerPool(processes_for(len(self._todo)))
            self._child.submit(Picked(hypotheses, self._todo), Picked(references, self._todo),
                               on_block=self._keep_block)
        elif getattr(self, "_child", None) is not None:
            self._child.cancel()
            self._child = None

    def _keys(self, slots: Sequence[int]) -> list[str]:
        """The statistics cache's keys of these distinct lines: their digests."""
        return [self._unique[u * DIGEST: (u + 1) * DIGEST].hex() for u in slots]

    def _parse(self, slots: Sequence[int], stats: Sequence[str]) -> None:
        """Statistics lines into their distinct lines' rows of the table (made at the first)."""
        import numpy as np

        step = 4096  # lines split at a time: their small strings are freed block by block
        for k in range(0, len(stats), step):
            rows = np.array([line.split() for line in stats[k:k + step]], dtype=float)
            if self._table is None:  # whole counts below 65,536 as METEOR writes them: a quarter of float64's memory
                self._table = np.zeros((len(self._unique) // DIGEST, rows.shape[1]), dtype=np.uint16)
            if self._table.dtype != rows.dtype and not _held_exactly(rows, self._table.dtype):
                self._table = self._table.astype(rows.dtype)
            self._table[np.asarray(slots[k:k + step], dtype=np.int64)] = rows

    def _keep_block(self, first: int, stats: list[str]) -> None:
        """Aligned statistics of the distinct lines to align from ``first`` on: into the statistics
        cache and parsed. The child's blocks come here as they arrive, while the other metrics still
        compute (not after the last block)."""
        slots = self._todo_lines[first:first + len(stats)]
        with statistics_cache(self.implementation) as cache:
            cache.put(self._keys(slots), stats)
        self._parse(slots, stats)

    def compute(self, hypotheses, references) -> None:
        import numpy as np

        if not hasattr(self, "_which"):
            self.prepare(hypotheses, references)
        todo = self._todo
        if not todo:
            fresh = None
        elif getattr(self, "_child", None) is not None and self.implementation != JAVA:
            self._child.result()  # cached and parsed block by block (_keep_block)
            self._child, fresh = None, None
        else:
            hyps, refs = [hypotheses[i] for i in todo], [references[i] for i in todo]
            if self.implementation == JAVA:
                fresh = parallel_statistics(self.workers, hyps, refs)
            else:
                from .meteor_align import statistics

                fresh = statistics(hyps, refs)
        if fresh is not None:
            self._keep_block(0, fresh)
        self.stats = self._table[self._which] if len(self._which) else np.array([])  # rows only: the lines are not kept
        del self._which, self._unique, self._table, self._todo, self._todo_lines

    def assist(self) -> None:
        child = getattr(self, "_child", None)
        if child is not None and child.n_blocks:
            child.assist()

    def scores(self, groups):
        result = {g: {"METEOR": float(meteor_score(aggregate_statistics(self.stats, rows=idx))[0]) if idx else 0.0}
                  for g, idx in groups.items()}
        if "overall" in groups:
            self._per_pair = meteor_score(self.stats)
        return result

    def per_pair(self):
        return {"METEOR": self._per_pair} if hasattr(self, "_per_pair") else {}

    def resampler(self, idx):
        import numpy as np

        rows = added_rows(self.stats[idx])  # whole counts: each resample's sum is exact in any order
        return lambda weights: {"METEOR": meteor_score(np.asarray(weights, dtype=float) @ rows)}

    def close(self) -> None:
        release_processes(getattr(self, "workers", []))
        self.workers = []
        child, self._child = getattr(self, "_child", None), None
        if child is not None:
            child.close()

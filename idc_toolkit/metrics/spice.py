"""SPICE, optional: it needs Stanford CoreNLP 3.6.0 jars that pycocoevalcap downloads at first
use (≈385 MB) and that cannot be fetched on every machine.

Point ``--spice-jars DIR`` (or ``IDC_SPICE_JARS``) at a folder holding
``stanford-corenlp-3.6.0.jar`` and ``stanford-corenlp-3.6.0-models.jar`` (from
``stanford-corenlp-full-2015-12-09.zip``). SPICE then runs with pycocoevalcap's
``spice-1.0.jar`` and its ``lib/`` jars, with the ``--add-opens`` flags Java 16+ needs for its
LMDB cache, its cache in the user cache dir (``idc_toolkit.cache.cache_dir('spice')``: ``$IDC_CACHE/spice``) and its
temporary files in the system temp dir, never in site-packages.

SPICE 1.0 writes its ``-out`` file through the Nashorn JavaScript engine, which JDK 15+
removed; on such a JDK it may fail after scoring. ``IDC_SPICE_JAVA`` selects another ``java``
(a JDK 8-14) for SPICE alone. Whenever SPICE cannot run, its score is ``None`` with the
reason, and the other metrics are unaffected: never a silent 0.

SPICE has no corpus statistics: a group's SPICE is the mean of its pairs' F-scores, so one
run over all pairs serves every group.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .base import Metric, weighted_sums

from ..errors import EvaluationError
from .tokenizer import java_executable, pycocoevalcap_dir

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
ADD_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in ("java.lang", "java.util", "java.math", "java.net", "java.text", "java.util.concurrent", "java.io", "java.nio")
]


@dataclass
class SpiceOutcome:
    scores: Optional[np.ndarray]  # per pair, None when SPICE did not run
    status: str  # "ok" or the reason it did not run


def spice_jar_dir(explicit: Optional[str | Path] = None) -> Optional[Path]:
    value = explicit or os.environ.get("IDC_SPICE_JARS")
    return Path(value).expanduser() if value else None


def spice_unavailable_reason(jar_dir: Optional[Path]) -> Optional[str]:
    """``None`` when SPICE can be attempted, else why not."""
    if jar_dir is None:
        return (
            "SPICE unavailable: it needs Stanford CoreNLP 3.6.0 "
            f"({' and '.join(CORENLP_JARS)}); pass --spice-jars DIR or set IDC_SPICE_JARS"
        )
    missing = [j for j in CORENLP_JARS if not (jar_dir / j).is_file()]
    if missing:
        return f"SPICE unavailable: {', '.join(missing)} not found in {jar_dir}"
    return None


def cache_dir() -> Path:
    from ..cache import cache_dir as toolkit_cache

    path = toolkit_cache("spice")
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_spice(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    jar_dir: Optional[Path],
    timeout: float = 3600.0,
) -> SpiceOutcome:
    reason = spice_unavailable_reason(jar_dir)
    if reason is not None:
        return SpiceOutcome(None, reason)
    assert jar_dir is not None
    spice_home = pycocoevalcap_dir() / "spice"
    classpath = os.pathsep.join(
        [str(spice_home / "spice-1.0.jar"), str(spice_home / "lib" / "*"), *(str(jar_dir / j) for j in CORENLP_JARS)]
    )
    try:
        java = os.environ.get("IDC_SPICE_JAVA") or java_executable()
    except EvaluationError as exc:  # SPICE is the one metric still in Java: say how to get one
        return SpiceOutcome(None, f"SPICE unavailable: {exc}")
    with tempfile.TemporaryDirectory(prefix="idc_spice_") as tmp:
        in_file, out_file = Path(tmp) / "in.json", Path(tmp) / "out.json"
        in_file.write_text(
            json.dumps([{"image_id": i, "test": h, "refs": list(r)} for i, (h, r) in enumerate(zip(hypotheses, references))])
        )
        cmd = [java, "-Xmx8G", *ADD_OPENS, "-cp", classpath, "edu.anu.spice.SpiceScorer", str(in_file),
               "-cache", str(cache_dir()), "-out", str(out_file), "-subset", "-silent"]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return SpiceOutcome(None, f"SPICE failed: no result within {timeout:.0f} s")
        except OSError as exc:
            return SpiceOutcome(None, f"SPICE failed to start: {exc}")
        if proc.returncode != 0 or not out_file.is_file():
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
            return SpiceOutcome(None, f"SPICE failed (exit {proc.returncode}): {' | '.join(tail)}")
        results = json.loads(out_file.read_text())
    by_id = {item["image_id"]: item["scores"]["All"]["f"] for item in results}
    scores = np.array([float(by_id[i]) if by_id.get(i) is not None else np.nan for i in range(len(hypotheses))])
    return SpiceOutcome(scores, "ok")


class Spice(Metric):
    """SPICE: per-pair F-scores from one SPICE run; a group's score is their mean (pairs SPICE
    could not parse are left out, as pycocoevalcap does); ``None`` with the reason when SPICE
    cannot run."""

    family = "SPICE"
    columns = ("SPICE",)
    chart_column = "SPICE"
    paper_columns = {"SPICE": "S"}
    optional = True

    def __init__(self, spice_jars: Optional[str] = None, **options):
        super().__init__(**options)
        self.jar_dir = spice_jar_dir(spice_jars)
        self.values: Optional[np.ndarray] = None

    @classmethod
    def unavailable(cls, spice_jars: Optional[str] = None, **options) -> Optional[str]:
        return spice_unavailable_reason(spice_jar_dir(spice_jars))

    def compute(self, hypotheses, references) -> None:
        outcome = run_spice(hypotheses, references, self.jar_dir)
        self.values, self.status = outcome.scores, outcome.status

    def group(self, idx):
        return {"SPICE": float(np.nanmean(self.values[idx])) if self.values is not None and idx else None}

    def per_pair(self):
        return {"SPICE": self.values} if self.values is not None else {}

    def resample(self, idx, weights):
        if self.values is None:
            return {}
        vals = self.values[idx]
        ok = ~np.isnan(vals)
        return {"SPICE": weighted_sums(weights, np.where(ok, vals, 0.0)) / np.maximum(weights @ ok.astype(float), 1.0)}

"""``by_category.png``: bars per group and metric, drawn from plain data (:func:`draw_by_category`),
in this process or in a chart process started before the scoring (:class:`ChartProcess`), whose
matplotlib import then runs on another core while the captions are tokenized and aligned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Optional

#: pairs from which a scoring draws its chart in a process of its own (a smaller one does not pay
#: back the process's start; a process that has drawn before has matplotlib already)
PROCESS_FROM = 2000
#: the modules the drawing needs
LIBRARIES = ("matplotlib.figure", "matplotlib.backends.backend_agg")


def draw_by_category(path: Path | str, chart: dict[str, Any], caveat: str = "") -> Path:
    """Bars per group and metric; a zero score is drawn as a zero line with its value written,
    n/a is written as such, bootstrap intervals are error bars. ``chart``: the groups' ``names``,
    their sizes ``n`` and the ``series`` per metric (:func:`~.outputs.chart_series`). Drawn on a
    bare ``Figure`` with the Agg canvas: no pyplot, so no global figure state and no GUI backend."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names, sizes, series = chart["names"], chart["n"], chart["series"]
    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    fig = Figure(figsize=(max(6, 1.2 * len(names)), 4))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    top = max([v for s in series.values() for v in s["values"] if v is not None] or [1.0])
    for j, (m, s) in enumerate(series.items()):
        pos = x + j * width - 0.4 + width / 2
        heights = [0.0 if v is None else v for v in s["values"]]
        has_ci = any(s["err_low"]) or any(s["err_high"])
        bars = ax.bar(pos, heights, width, label=m, yerr=[s["err_low"], s["err_high"]] if has_ci else None,
                      capsize=2 if has_ci else 0)
        color = bars.patches[0].get_facecolor() if bars.patches else None
        for p_, v in zip(pos, s["values"]):
            if v is None:
                ax.text(p_, 0.01 * top, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
            elif v == 0:
                ax.plot([p_ - width / 2, p_ + width / 2], [0, 0], color=color, linewidth=2.5)
                ax.text(p_, 0.01 * top, "0", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{name}\n(n={size})" for name, size in zip(names, sizes)], fontsize=8)
    ax.set_ylabel("score x100")
    ax.set_title("Scores per group (each scored on its own)" + (f"\n{caveat}" if caveat else ""), fontsize=10)
    if series:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return Path(path)


class ChartProcess:
    """``python -m idc_toolkit.evaluators.chart``: imports the drawing's libraries at once, then
    draws the one chart it is sent as a JSON line (``null``: none) and ends."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "idc_toolkit.evaluators.chart"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def send(self, path: Path | str, chart: dict[str, Any], caveat: str) -> bool:
        """Hand the process its chart; False where it is gone (the caller draws it: the file is the same)."""
        try:
            self.proc.stdin.write(json.dumps({"path": str(path), "chart": chart, "caveat": caveat}).encode() + b"\n")
            self.proc.stdin.close()
            return True
        except (OSError, ValueError):
            self.close()
            return False

    def drawn(self, path: Path | str) -> bool:
        """Whether the process drew the chart it was sent."""
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.close()
            return False
        return self.proc.returncode == 0 and Path(path).is_file()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_WAITING: list[ChartProcess] = []  # a chart process started for the next drawing
_LOCK = threading.Lock()


def prepare_drawing(pairs: int = 0) -> None:
    """Make the next :func:`draw` quick: for a large scoring, a chart process importing the
    drawing's libraries on another core; else those imports in a background thread here."""
    if all(m in sys.modules for m in LIBRARIES):
        return
    if pairs >= PROCESS_FROM and (os.cpu_count() or 1) > 1:
        with _LOCK:
            if not _WAITING:
                _WAITING.append(ChartProcess())
        return

    def load() -> None:
        import importlib

        try:
            for module in LIBRARIES:
                importlib.import_module(module)
        except BaseException:  # only a head start: drawing imports again and reports what fails
            pass

    threading.Thread(target=load, daemon=True, name="idc-chart-imports").start()


def start_drawing(path: Path | str, chart: dict[str, Any], caveat: str = "") -> Callable[[], Path]:
    """:func:`draw_by_category`, by the waiting chart process where one was started (the caller
    writes its other files meanwhile); the function returned waits for the file."""
    with _LOCK:
        process = _WAITING.pop() if _WAITING else None
    if process is not None and process.send(path, chart, caveat):
        return lambda: Path(path) if process.drawn(path) else draw_by_category(path, chart, caveat)
    drawn = draw_by_category(path, chart, caveat)
    return lambda: drawn


def _close_waiting() -> None:
    with _LOCK:
        while _WAITING:
            _WAITING.pop().close()


def main() -> None:
    for module in LIBRARIES:
        __import__(module)
    job: Optional[dict] = json.loads(sys.stdin.readline() or "null")
    if job:
        draw_by_category(job["path"], job["chart"], job["caveat"])


if __name__ == "__main__":
    main()
else:
    import atexit

    atexit.register(_close_waiting)

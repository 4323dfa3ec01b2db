"""``by_category.png``: bars per group and metric, drawn from plain data with Pillow.

Hand-drawn rather than with matplotlib: matplotlib's import alone is ~0.4 CPU-seconds, more than
tokenizing and BLEU, ROUGE-L and CIDEr-D take together on 8,000 pairs (benchmarks/eval_speed.py),
for a few rectangles a group.
The look follows matplotlib's defaults (tab10 colours, DejaVu Sans, a boxed axis, a legend).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

#: matplotlib's default colour cycle (tab10)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
#: pixels per inch: the figure is (max(6, 1.2 x groups)) x 4 inches
DPI = 120


@lru_cache(maxsize=None)
def _font(points: float):
    """DejaVu Sans (matplotlib's font, found in its package without importing it) at ``points``."""
    import importlib.util

    from PIL import ImageFont

    size = max(1, round(points * DPI / 72))
    spec = importlib.util.find_spec("matplotlib")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder, "mpl-data", "fonts", "ttf", "DejaVuSans.ttf")
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: its bitmap font
        return ImageFont.load_default()


def nice_ticks(top: float) -> tuple[list[float], float]:
    """Ticks from 0 at a round step (1, 2, 2.5 or 5 x 10^k, at most 8 of them) and the axis's end."""
    top = top if top > 0 else 1.0
    raw = top / 7
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    end = top * 1.05
    return [k * step for k in range(int(end // step) + 1)], end


def _label(value: float) -> str:
    return f"{value:g}"


def _text_size(draw, text: str, font) -> tuple[int, int]:
    left, top, right, bottom = draw.multiline_textbbox((0, 0), text, font=font, align="center")
    return math.ceil(right - left), math.ceil(bottom - top)  # whole pixels (Pillow 10.0 gives floats)


def draw_by_category(path: Path | str, chart: dict[str, Any], caveat: str = "") -> Path:
    """Bars per group and metric; a zero score is drawn as a zero line with its value written,
    n/a is written as such, bootstrap intervals are error bars. ``chart``: the groups' ``names``,
    their sizes ``n`` and the ``series`` per metric (:func:`~.outputs.chart_series`)."""
    from PIL import Image, ImageDraw

    names, sizes, series = chart["names"], chart["n"], chart["series"]
    width, height = round(max(6, 1.2 * len(names)) * DPI), 4 * DPI
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    small, tick, title_font = _font(6), _font(8), _font(10)

    title = "Scores per group (each scored on its own)" + (f"\n{caveat}" if caveat else "")
    title_h = _text_size(draw, title, title_font)[1]
    draw.multiline_text((width / 2, 8), title, fill="black", font=title_font, anchor="ma", align="center")
    labels = [f"{name}\n(n={size})" for name, size in zip(names, sizes)]
    label_h = max([_text_size(draw, t, tick)[1] for t in labels] or [0])
    ticks, end = nice_ticks(max([v for s in series.values() for v in s["values"] if v is not None and v == v] or [1.0]))
    tick_w = max(_text_size(draw, _label(t), tick)[0] for t in ticks)
    left, right = 18 + _text_size(draw, "score x100", tick)[1] + tick_w + 12, width - 12
    top, bottom = 8 + title_h + 14, height - label_h - 18

    def y(value: float) -> float:
        return bottom - (bottom - top) * value / end

    group_w = (right - left) / max(1, len(names))

    def x(position: float) -> float:  # a group's centre at position k: k + 0.5 group widths from the left
        return left + (position + 0.5) * group_w

    for t in ticks:
        draw.line([(left - 4, y(t)), (left, y(t))], fill="black")
        draw.text((left - 7, y(t)), _label(t), fill="black", font=tick, anchor="rm")
    axis_label = Image.new("L", _text_size(draw, "score x100", tick), 0)
    ImageDraw.Draw(axis_label).text((0, 0), "score x100", fill=255, font=tick, anchor="lt")
    rotated = axis_label.rotate(90, expand=True)
    image.paste((0, 0, 0), (6, round((top + bottom - rotated.height) / 2)), rotated)
    for k, text in enumerate(labels):
        draw.line([(x(k), bottom), (x(k), bottom + 4)], fill="black")
        draw.multiline_text((x(k), bottom + 6), text, fill="black", font=tick, anchor="ma", align="center")

    bar_w = 0.8 / max(1, len(series))
    bars: list[tuple[float, float, float]] = []  # (left, right, top value) of each bar, for the legend's place
    for j, (metric, s) in enumerate(series.items()):
        colour = COLOURS[j % len(COLOURS)]
        for k, value in enumerate(s["values"]):
            a, b = x(k - 0.4 + j * bar_w), x(k - 0.4 + (j + 1) * bar_w)
            bars.append((a, b, (value or 0.0) + s["err_high"][k] if value == value else 0.0))
            centre = (a + b) / 2
            if value is None or value != value:  # n/a (NaN too)
                draw.text((centre, y(0.01 * end) - 2), "n/a", fill="black", font=small, anchor="mb")
                continue
            if value == 0:
                draw.line([(a, bottom - 1), (b, bottom - 1)], fill=colour, width=3)
                draw.text((centre, bottom - 4), "0", fill="black", font=small, anchor="mb")
                continue
            draw.rectangle([a, y(value), b, bottom], fill=colour)
            low, high = s["err_low"][k], s["err_high"][k]
            if low or high:
                draw.line([(centre, y(value - low)), (centre, y(value + high))], fill="black", width=2)
                for v in (value - low, value + high):
                    draw.line([(centre - 3, y(v)), (centre + 3, y(v))], fill="black", width=2)
    draw.rectangle([left, top, right, bottom], outline="black")

    if series:
        entries = list(series)
        row_h = _text_size(draw, "Ag", tick)[1] + 6
        box_w = 34 + max(_text_size(draw, m, tick)[0] for m in entries) + 8
        y0 = top + 8

        def tallest(x0: float) -> float:  # the highest bar under a legend placed at x0
            return max([v for a, b, v in bars if a < x0 + box_w and b > x0] or [0.0])

        x0 = min((right - box_w - 8, left + 8), key=tallest)  # the upper corner with the lower bars, right first
        draw.rectangle([x0, y0, x0 + box_w, y0 + row_h * len(entries) + 6], fill="white", outline="#cccccc")
        for j, metric in enumerate(entries):
            row = y0 + 4 + j * row_h
            draw.rectangle([x0 + 6, row + 2, x0 + 26, row + row_h - 6], fill=COLOURS[j % len(COLOURS)])
            draw.text((x0 + 32, row + (row_h - 4) / 2), metric, fill="black", font=tick, anchor="lm")
    image.save(path, format="PNG")
    return Path(path)


"""How a before/after pair is shown to a vision-language model: ``--presentation``.

A model's accuracy depends on how the two images are put before it (VLM-SubtleBench, ICLR
2026), so the presentation is a parameter of the run: recorded in ``model.json`` and in the
generation's fingerprint, printed with every table of the run, and checked by ``compare`` and
``leaderboard``. Each presentation is the images the model is shown and the prompt presets
that describe them (one per dataset style, as :data:`~idc_toolkit.prompts.PROMPTS`).

Every presentation first converts both images to RGB. The exact definitions, with ``b`` and
``a`` the before and after images:

* ``two_images`` (default): ``b`` and ``a`` as they are, two images of one user turn, before
  first.
* ``stacked``: one image, BLIP2IDC's layout (``--single-image``): a black canvas of width
  ``max(b.w, a.w)`` and height ``b.h + a.h``; ``b`` pasted at (0, 0), ``a`` at (0, ``b.h``);
  no resizing, no gap (a narrower image leaves black on its right).
* ``side_by_side``: one image, the same turned sideways: a black canvas of width
  ``b.w + a.w`` and height ``max(b.h, a.h)``; ``b`` at (0, 0), ``a`` at (``b.w``, 0) (a shorter
  image leaves black below it).

The next three compare pixels, so ``b`` is first resized to ``a``'s size (bicubic) when the
sizes differ; ``(w, h)`` is ``a``'s size, every separator is :data:`GAP` white pixels and
``|a - b|`` is the absolute difference per channel.

* ``overlay``: one ``w x h`` image, the two blended 50/50: each channel
  ``(b + a + 1) // 2`` (the mean, halves rounded up).
* ``difference``: one image, ``b | a | |a - b|`` in a row: a white canvas of width
  ``3w + 2 GAP`` and height ``h``; the panels at x = 0, ``w + GAP``, ``2 (w + GAP)``.
* ``grid``: one image, 2 x 2 labelled panels: before (top left), after (top right), the
  difference ``|a - b|`` (bottom left) and the overlay (bottom right). Each cell is a label
  strip of :data:`LABEL_HEIGHT` white pixels above its ``w x h`` panel, the label (``before``,
  ``after``, ``difference``, ``overlay``) written in black at (2, 1) of the strip with PIL's
  built-in bitmap font (no font file; a panel narrower than its label clips it); cells are
  separated by ``GAP`` white pixels: a white canvas of ``2w + GAP`` by
  ``2 (LABEL_HEIGHT + h) + GAP``, cell (row i, column j) at x = ``j (w + GAP)``,
  y = ``i (LABEL_HEIGHT + h + GAP)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from .errors import IDCError
from .prompts import PROMPTS, STACKED_PROMPTS

if TYPE_CHECKING:
    from PIL import Image

#: white pixels between the panels of ``difference`` and ``grid``
GAP = 4
#: the height of ``grid``'s label strips, pixels (PIL's bitmap font is 11 pixels high)
LABEL_HEIGHT = 13
#: where ``grid`` writes a label in its strip
LABEL_AT = (2, 1)
WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
#: the presentation of a run that does not say (today's two images, before first)
DEFAULT_PRESENTATION = "two_images"
#: the labels of ``grid``'s cells, row by row
GRID_LABELS = ("before", "after", "difference", "overlay")


def rgb_pair(before: Image.Image, after: Image.Image) -> tuple[Image.Image, Image.Image]:
    return before.convert("RGB"), after.convert("RGB")


def aligned(before: Image.Image, after: Image.Image) -> tuple[Image.Image, Image.Image]:
    """The pair in RGB, the before image resized to the after image's size (bicubic) when they differ."""
    from PIL import Image

    b, a = rgb_pair(before, after)
    return (b if b.size == a.size else b.resize(a.size, Image.BICUBIC)), a


def stack(before: Image.Image, after: Image.Image) -> Image.Image:
    """``stacked``'s image: before above after on a black canvas, no resizing, no gap (BLIP2IDC's layout)."""
    from PIL import Image

    b, a = rgb_pair(before, after)
    canvas = Image.new("RGB", (max(b.width, a.width), b.height + a.height), BLACK)
    canvas.paste(b, (0, 0))
    canvas.paste(a, (0, b.height))
    return canvas


def side_by_side(before: Image.Image, after: Image.Image) -> Image.Image:
    """``side_by_side``'s image: before left of after on a black canvas, no resizing, no gap."""
    from PIL import Image

    b, a = rgb_pair(before, after)
    canvas = Image.new("RGB", (b.width + a.width, max(b.height, a.height)), BLACK)
    canvas.paste(b, (0, 0))
    canvas.paste(a, (b.width, 0))
    return canvas


def _arrays(before: Image.Image, after: Image.Image):
    import numpy as np

    b, a = aligned(before, after)
    return np.asarray(b, dtype=np.int16), np.asarray(a, dtype=np.int16)


def overlay(before: Image.Image, after: Image.Image) -> Image.Image:
    """``overlay``'s image: each channel ``(b + a + 1) // 2`` of the aligned pair."""
    import numpy as np
    from PIL import Image

    b, a = _arrays(before, after)
    return Image.fromarray(((b + a + 1) // 2).astype(np.uint8))


def abs_difference(before: Image.Image, after: Image.Image) -> Image.Image:
    """``|a - b|`` per channel of the aligned pair."""
    import numpy as np
    from PIL import Image

    b, a = _arrays(before, after)
    return Image.fromarray(np.abs(a - b).astype(np.uint8))


def difference(before: Image.Image, after: Image.Image) -> Image.Image:
    """``difference``'s image: ``b | a | |a - b|`` in a row, :data:`GAP` white pixels apart."""
    from PIL import Image

    b, a = aligned(before, after)
    w, h = a.size
    canvas = Image.new("RGB", (3 * w + 2 * GAP, h), WHITE)
    for k, panel in enumerate((b, a, abs_difference(b, a))):
        canvas.paste(panel, (k * (w + GAP), 0))
    return canvas


def label_font():
    """PIL's built-in bitmap font (no font file; the same glyphs on every machine)."""
    from PIL import ImageFont

    return getattr(ImageFont, "load_default_imagefont", ImageFont.load_default)()


def grid(before: Image.Image, after: Image.Image) -> Image.Image:
    """``grid``'s image: before, after / difference, overlay, each under its label (module docstring)."""
    from PIL import Image, ImageDraw

    b, a = aligned(before, after)
    w, h = a.size
    canvas = Image.new("RGB", (2 * w + GAP, 2 * (LABEL_HEIGHT + h) + GAP), WHITE)
    font = label_font()
    for k, (label, panel) in enumerate(zip(GRID_LABELS, (b, a, abs_difference(b, a), overlay(b, a)))):
        x, y = (k % 2) * (w + GAP), (k // 2) * (LABEL_HEIGHT + h + GAP)
        strip = Image.new("RGB", (w, LABEL_HEIGHT), WHITE)  # a label longer than the panel is cut at its edge
        ImageDraw.Draw(strip).text(LABEL_AT, label, fill=BLACK, font=font)
        canvas.paste(strip, (x, y))
        canvas.paste(panel, (x, y + LABEL_HEIGHT))
    return canvas


@dataclass(frozen=True)
class Presentation:
    """One way of showing a pair: the images the model gets and the prompt presets describing them."""

    name: str
    #: one line, what ``model.json`` records as ``preprocess``
    description: str
    #: how many images the model is shown per pair
    images: int
    #: the pair -> the images of the user turn, in order
    compose: Callable[[Image.Image, Image.Image], list]
    #: the prompt of each dataset style (the keys of :data:`~idc_toolkit.prompts.PROMPTS`)
    prompts: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, before: Image.Image, after: Image.Image) -> list:
        return self.compose(before, after)


_ASK = {"scene": "In one sentence, describe what changed. If nothing changed, say so.",
        "edit": "In one sentence, describe the edit that was made.",
        "remote_sensing": "In one sentence, describe what changed on the ground. If nothing changed, say so."}
#: how each style names the two images in a sentence listing panels: (before, after)
_NAMED = {"scene": ("a scene before a change", "the same scene after it"),
          "edit": ("an image", "an edited version of it"),
          "remote_sensing": ("a satellite image of an area", "a satellite image of the same area taken later")}


def _panels(opening: str, order: Callable[[str, str], str]) -> dict[str, str]:
    return {style: f"{opening} {order(*_NAMED[style])}. {_ASK[style]}" for style in _ASK}


#: ``--presentation`` name -> :class:`Presentation`, in the order the help and the docs list them
PRESENTATIONS: dict[str, Presentation] = {p.name: p for p in (
    Presentation("two_images", "two images in one user turn: before, then after", 2, lambda b, a: list(rgb_pair(b, a)),
                 PROMPTS),
    Presentation("side_by_side", "one image: before left of after, edge to edge, no resizing (black fill)", 1,
                 lambda b, a: [side_by_side(b, a)], {
                     "scene": "The left half of the image shows a scene before a change and the right half shows the same "
                              "scene after it. " + _ASK["scene"],
                     "edit": "The right half of the image is an edited version of the left half. " + _ASK["edit"],
                     "remote_sensing": "The left and right halves of the image are satellite images of the same area "
                                       "taken at different times. " + _ASK["remote_sensing"]}),
    Presentation("stacked", "stacked pair, one image: before above after, edge to edge, no resizing (black fill)", 1,
                 lambda b, a: [stack(b, a)], STACKED_PROMPTS),
    Presentation("grid", f"one image, 2x2 labelled panels: before, after / |after - before|, 50/50 blend "
                         f"(before resized to the after image; {LABEL_HEIGHT}-pixel label strips, {GAP}-pixel gaps)", 1,
                 lambda b, a: [grid(b, a)],
                 _panels("The image is a grid of four labelled panels:",
                         lambda x, y: f"{x} (top left), {y} (top right), the absolute pixel difference between the two "
                                      "(bottom left) and the two blended half and half (bottom right)")),
    Presentation("overlay", "one image: before and after blended 50/50 (before resized to the after image)", 1,
                 lambda b, a: [overlay(b, a)],
                 _panels("The image blends, half and half,", lambda x, y: f"{x} and {y}, so what differs looks faded")),
    Presentation("difference", f"one image: before | after | |after - before| in a row (before resized to the "
                               f"after image; {GAP}-pixel gaps)", 1,
                 lambda b, a: [difference(b, a)],
                 _panels("The image shows three panels in a row:",
                         lambda x, y: f"{x}, {y}, and the absolute pixel difference between the two")),
)}


def presentation_help() -> str:
    """``--presentation``'s help: every name and what it shows."""
    return ("how the pair is shown to the model: the two images (two_images), or one image composed of them "
            "(side_by_side, stacked, a labelled 2x2 grid, a 50/50 overlay, before | after | difference); "
            "docs/models.md#presentations defines each")


def get_presentation(name: str) -> Presentation:
    if name not in PRESENTATIONS:
        raise IDCError(f"unknown --presentation {name!r}; choose {', '.join(PRESENTATIONS)}")
    return PRESENTATIONS[name]


def present(name: str, before: Image.Image, after: Image.Image) -> list:
    """The images ``name`` shows the model for the pair."""
    return get_presentation(name)(before, after)


def recorded_presentation(predictions: Any) -> Optional[str]:
    """The presentation a predictions file was generated with: the ``presentation`` its run's
    ``model.json`` (beside it) records; ``None`` for captions in memory, a file without a
    ``model.json`` (predictions from elsewhere) or a model run that shows no presentation."""
    import json

    if isinstance(predictions, Mapping) or not isinstance(predictions, (str, Path)):
        return None
    record = Path(predictions).parent / "model.json"
    try:
        value = json.loads(record.read_text(encoding="utf-8")).get("presentation")
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None

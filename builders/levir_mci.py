"""LEVIR-MCI (Change-Agent, Liu et al., TGRS 2024): LEVIR-CC's captions plus change-detection labels.

Raw release: LEVIR-CC's ``LevirCCcaptions.json`` and ``images/<split>/{A,B,label}/<name>.png``;
the label shares the pair's file name. As Change-Agent's loader reads it, a label's channel 0
holds 0 (no change), 128 (road change) or 255 (building change); the builder checks every
label for exactly these values and refuses, naming the file, anything else. A label that is no
PNG, is cut short, is not of its pair's size or resolves outside the raw folder skips its pair,
named in the report. Each pair gains
the ground truth in the columns ``idc-precompute masks`` writes (``change_mask``: 255 where
anything changed; ``change_boxes``: one box per 8-connected region; ``mask_source``:
``annotation``), so DAVIR trains on it and precomputed masks compare against it, and
``change_classes``: the per-pixel class map as a PNG whose values index ``CHANGE_CLASSES``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from datasets import Image

from idc_toolkit.building.labels import LabelError, first_channel, load_label, mask_columns, png_cell
from idc_toolkit.building.report import BuildReport
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import MASK_FEATURES, PairRecord

from .levir_cc import LevirCC

#: ``change_classes`` pixel value -> class (Change-Agent's 0 / 1 / 2)
CHANGE_CLASSES = ("background", "road", "building")
#: a label's channel-0 value -> its class index
LABEL_VALUES = {0: 0, 128: 1, 255: 2}

RAW_LAYOUT = """\
RAW/                                       (Levir-MCI-dataset/)
  LevirCCcaptions.json                     LEVIR-CC's captions (Karpathy style)
  images/train/A/train_000001.png          before
  images/train/B/train_000001.png          after
  images/train/label/train_000001.png      channel 0: 0 no change, 128 road, 255 building
  images/val/..., images/test/...
"""


def label_columns(pixels, where: str) -> dict:
    """The ground-truth columns of one label's pixels (module docstring); refuses unknown values."""
    import numpy as np

    channel = first_channel(pixels)
    unknown = sorted(set(np.unique(channel).tolist()) - set(LABEL_VALUES))
    if unknown:
        raise RawFormatError(where, f"label values {unknown[:5]} in channel 0; LEVIR-MCI labels hold only 0, 128 and 255")
    classes = np.zeros(channel.shape, dtype=np.uint8)
    for value, index in LABEL_VALUES.items():
        classes[channel == value] = index
    return {**mask_columns(classes > 0), "change_classes": png_cell(classes)}


class LevirMCI(LevirCC):
    name = "levir_mci"
    extra_features = {**LevirCC.extra_features, **MASK_FEATURES, "change_classes": Image()}
    extra_docs = {**LevirCC.extra_docs,
                  "change_mask": "the change-detection label as a mask (PNG, 255 = road or building changed)",
                  "change_boxes": "[x0, y0, x1, y1] per 8-connected changed region, pixels",
                  "mask_source": "`annotation`: the release's label, not a computed mask",
                  "change_classes": "per-pixel class map (PNG): " + ", ".join(f"{i} {c}" for i, c in enumerate(CHANGE_CLASSES))}
    card = replace(
        LevirCC.card,
        pretty_name="LEVIR-MCI",
        description=("LEVIR-CC's bi-temporal 256x256 remote-sensing pairs and five sentences each, with the "
                        "pixel-level change-detection labels of Change-Agent (road and building changes) as "
                        "ground-truth change masks and class maps."),
        homepage="https://github.com/Chen-Yang-Liu/Change-Agent",
        download="Levir-MCI-dataset from https://huggingface.co/datasets/lcybuaa/LEVIR-MCI (captions, images, labels)",
        raw_layout=RAW_LAYOUT,
        citation=citations.LEVIR_MCI + "\n\n" + citations.LEVIR_CC,
        images_from="Hugging Face (lcybuaa/LEVIR-MCI)",
    )

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        for rec in super().generate(split, report):
            label = rec.after.parent.parent / "label" / rec.after.name
            if not label.is_file():
                report.skip(split, str(label), rec.pair_id, "no change-detection label")
                continue
            try:
                pixels = load_label(label, self.raw_root(), rec.before)
            except LabelError as exc:
                report.skip(split, exc.file, rec.pair_id, str(exc))
                continue
            rec.extra.update(label_columns(pixels, str(label)))
            yield rec

"""The dataset builders: one small module per raw release, and a plain registry."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from idc_toolkit.building.builder import PairBuilder
from idc_toolkit.registry import Registry

#: dataset name -> its builder class; a new release is one module here and one line
BUILDERS = Registry("dataset", {
    "spot_the_diff": "idc_toolkit.builders.spot_the_diff:SpotTheDiff",
    "clevr_change": "idc_toolkit.builders.clevr_change:ClevrChange",
    "clevr_dc": "idc_toolkit.builders.clevr_dc:ClevrDC",
    "ier": "idc_toolkit.builders.ier:ImageEditingRequest",
    "levir_cc": "idc_toolkit.builders.levir_cc:LevirCC",
    "emu_edit": "idc_toolkit.builders.emu_edit:EmuEdit",
    "syned": "idc_toolkit.builders.syned:Syned",
    "magicbrush": "idc_toolkit.builders.magicbrush:MagicBrush",
    "levir_mci": "idc_toolkit.builders.levir_mci:LevirMCI",
    "second_cc": "idc_toolkit.builders.second_cc:SecondCC",
    "dubai_cc": "idc_toolkit.builders.dubai_cc:DubaiCC",
    "birds_to_words": "idc_toolkit.builders.birds_to_words:BirdsToWords",
    "img_diff": "idc_toolkit.builders.img_diff:ImgDiff",
    "diffspot": "idc_toolkit.builders.diffspot:DiffSpot",
    "vlm_subtlebench": "idc_toolkit.builders.vlm_subtlebench:VLMSubtleBench",
    "wuicc": "idc_toolkit.builders.wuicc:WUICC",
    "folder": "idc_toolkit.builders.folder:FolderOfPairs",
}, summary=lambda cls: cls.card.pretty_name, base_cls="idc_toolkit.building.builder:PairBuilder")


def get_builder_class(name: str) -> type[PairBuilder]:
    return BUILDERS.get(name)


def make_builder(name: str, raw_dir: Path | str, overrides: Optional[dict[str, str]] = None) -> PairBuilder:
    """Instantiate a registered builder with ``key=value`` config overrides."""
    cls = get_builder_class(name)
    return cls(raw_dir, cls.config_class.from_overrides(overrides or {}))

"""The dataset builders: one small module per raw release, and a plain registry."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from idc_toolkit.building.builder import PairBuilder
from idc_toolkit.errors import BuildError

from .clevr_change import ClevrChange
from .clevr_dc import ClevrDC
from .emu_edit import EmuEdit
from .ier import ImageEditingRequest
from .levir_cc import LevirCC
from .magicbrush import MagicBrush
from .spot_the_diff import SpotTheDiff
from .syned import Syned

BUILDERS: dict[str, type[PairBuilder]] = {
    cls.name: cls for cls in (SpotTheDiff, ClevrChange, ClevrDC, ImageEditingRequest, LevirCC, EmuEdit, Syned, MagicBrush)
}


def get_builder_class(name: str) -> type[PairBuilder]:
    try:
        return BUILDERS[name]
    except KeyError:
        raise BuildError(f"unknown dataset {name!r}; available: {', '.join(sorted(BUILDERS))}") from None


def make_builder(name: str, raw_dir: Path | str, overrides: Optional[dict[str, str]] = None) -> PairBuilder:
    """Instantiate a registered builder with ``key=value`` config overrides."""
    cls = get_builder_class(name)
    return cls(raw_dir, cls.config_class.from_overrides(overrides or {}))

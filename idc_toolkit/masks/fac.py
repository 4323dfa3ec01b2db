"""Deprecated: soft patch masks are :mod:`idc_toolkit.masks.patch_masks`, DAVIR's FAC loss
:mod:`idc_toolkit.models.davir_fac`; this old path goes in the next release."""

import warnings

from .patch_masks import soft_patch_mask  # noqa: F401

#: the names that moved beside DAVIR, found there when first asked for (masks sit below models)
_MOVED = ("FAC_READINGS", "attention_on_mask", "fac_kl_loss", "fac_loss", "fac_paper_kl")

warnings.warn("idc_toolkit.masks.fac is now idc_toolkit.masks.patch_masks (soft_patch_mask) and "
              "idc_toolkit.models.davir_fac (the FAC loss); the old path goes in the next release",
              DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module("idc_toolkit.models.davir_fac"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

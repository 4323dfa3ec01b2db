"""Deprecated: soft patch masks are :mod:`idc_toolkit.masks.patch_masks`, DAVIR's FAC loss
:mod:`idc_toolkit.models.davir_fac`."""

import warnings

from ..models.davir_fac import FAC_READINGS, attention_on_mask, fac_kl_loss, fac_loss, fac_paper_kl  # noqa: F401
from .patch_masks import soft_patch_mask  # noqa: F401

warnings.warn("idc_toolkit.masks.fac is now idc_toolkit.masks.patch_masks (soft_patch_mask) and "
              "idc_toolkit.models.davir_fac (the FAC loss); the old path goes in the next release",
              DeprecationWarning, stacklevel=2)

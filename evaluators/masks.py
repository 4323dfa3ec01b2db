"""Deprecated alias of :mod:`idc_toolkit.evaluators.mask_scores` (it scores change masks); kept for one
release."""

import warnings

from .mask_scores import *  # noqa: F401,F403

warnings.warn("idc_toolkit.evaluators.masks is renamed idc_toolkit.evaluators.mask_scores; "
              "the old name goes in the next release", DeprecationWarning, stacklevel=2)

"""Deprecated: the published base configurations are :mod:`idc_toolkit.models.published_configs`."""

import warnings

from .published_configs import LAYOUTS, STRUCTURE, meta_model, real_config, structure_of  # noqa: F401

warnings.warn("idc_toolkit.models.layouts is now idc_toolkit.models.published_configs; the old path goes in the next "
              "release", DeprecationWarning, stacklevel=2)

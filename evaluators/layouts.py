"""Deprecated alias of :mod:`idc_toolkit.evaluators.paper_tables` (it writes the papers' table shapes);
kept for one release."""

import warnings

from .paper_tables import *  # noqa: F401,F403

warnings.warn("idc_toolkit.evaluators.layouts is renamed idc_toolkit.evaluators.paper_tables; "
              "the old name goes in the next release", DeprecationWarning, stacklevel=2)

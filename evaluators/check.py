"""Deprecated alias of :mod:`idc_toolkit.evaluators.check_references` (it checks reference and
predictions files; :mod:`idc_toolkit.checks` is the options' range checks); kept for one release."""

import warnings

from .check_references import *  # noqa: F401,F403

warnings.warn("idc_toolkit.evaluators.check is renamed idc_toolkit.evaluators.check_references; "
              "the old name goes in the next release", DeprecationWarning, stacklevel=2)

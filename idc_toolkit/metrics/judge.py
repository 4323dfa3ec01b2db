"""Deprecated alias of :mod:`idc_toolkit.metrics.judge_columns` (it holds the judge's score columns;
:mod:`idc_toolkit.judge` runs the judge); kept for one release."""

import warnings

from .judge_columns import *  # noqa: F401,F403

warnings.warn("idc_toolkit.metrics.judge is renamed idc_toolkit.metrics.judge_columns; "
              "the old name goes in the next release", DeprecationWarning, stacklevel=2)

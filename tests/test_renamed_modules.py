"""Modules renamed so their file says their job keep their old import path for one release,
with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import sys

import pytest

RENAMED = {"idc_toolkit.evaluators.check": ("idc_toolkit.evaluators.check_references", "check_file"),
           "idc_toolkit.evaluators.masks": ("idc_toolkit.evaluators.mask_scores", "evaluate_masks"),
           "idc_toolkit.evaluators.layouts": ("idc_toolkit.evaluators.paper_tables", "write_layouts"),
           "idc_toolkit.metrics.judge": ("idc_toolkit.metrics.judge_columns", "JudgeScores")}


@pytest.mark.parametrize("old", RENAMED)
def test_an_old_import_path_warns_and_gives_the_same_objects(old):
    new, name = RENAMED[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is renamed {new}"):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("module, new", [("idc_toolkit.metrics", "ALL_COLUMNS"), ("idc_toolkit.evaluators.lmms_tasks", "COLUMNS")])
def test_metrics_names_the_registry_alone_and_the_column_lists_keep_their_old_name_a_release(module, new):
    from idc_toolkit.metrics.registry import METRICS, all_columns
    from idc_toolkit.registry import Registry

    assert isinstance(METRICS, Registry)
    columns = getattr(importlib.import_module(module), new)
    assert set(columns) <= set(all_columns())
    with pytest.warns(DeprecationWarning, match=f"METRICS is renamed {new}"):
        assert getattr(importlib.import_module(module), "METRICS") == columns

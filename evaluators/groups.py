"""Groups beyond a dataset's own categories: a group file or column, and viewpoint difficulty.

* ``--groups FILE`` — ``{pair_id: group}`` or ``{group: [pair_id, ...]}``, on a built dataset
  or a coco reference file (it replaces the categories; an id under two groups is scored in both);
* ``--group-by COLUMN`` — a column of the dataset (any type; values become group names);
* ``--iou-file FILE`` / ``--iou-column COLUMN`` — RobustChangeCaptioning's viewpoint difficulty
  (``evaluate_by_IOU.py``, DIRL Fig. 4): the change pairs sorted by the IoU of their viewpoints,
  ``iou_hardest_25`` = the ``int(0.25 n)`` lowest, ``iou_easiest_25`` = the ``int(0.25 n)``
  highest (ties in file order, as its stable sort), and ``iou_q1`` .. ``iou_q4`` the four
  equal-count buckets from hardest to easiest (our addition).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from idc_toolkit.errors import EvaluationError
from idc_toolkit.files import read_json, read_text
from idc_toolkit.metrics.text import one_copy
from idc_toolkit.schema import NO_CHANGE_CATEGORIES

from .protocols import rcc_id

IOU_FRACTION = 0.25  #: RCC's ``percentage``
#: ids listed in an error or warning before '... (N in all)'
MAX_LISTED = 20


def listed_ids(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:MAX_LISTED])
    return shown + (f" ... ({len(ids)} in all)" if len(ids) > MAX_LISTED else "")


def read_category_map(path: Path | str) -> dict[str, list[str]]:
    """``{pair_id: category}`` or ``{category: [pair_id, ...]}`` (type_mapping.json style), as
    pair_id -> categories (an id listed under several categories keeps all of them). Ids are
    RCC-normalised (:func:`~.protocols.rcc_id`): a map keyed ``000123.png`` names the pair
    ``000123`` too."""
    data = read_json(path, EvaluationError, "category map")
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: a category map is {{pair_id: category}} or {{category: [pair_id, ...]}}")
    pairs = ([(pid, cat) for cat, ids in data.items() for pid in ids] if all(isinstance(v, list) for v in data.values())
             else [(k, v) for k, v in data.items()])
    out: dict[str, list[str]] = {}
    one = one_copy()  # a name per group, not a string per pair
    for pid, cat in pairs:
        if not isinstance(cat, str) or not cat:
            raise EvaluationError(f"{path}: pair {pid!r}: group {cat!r} is not a name (a non-empty string)")
        names = out.setdefault(rcc_id(str(pid)), [])
        if cat not in names:
            names.append(one(cat))
    return out


IOU_GROUPS = ("iou_hardest_25", "iou_easiest_25", "iou_q1", "iou_q2", "iou_q3", "iou_q4")


def apply_group_file(refs: Any, path: str | Path) -> Any:
    """``refs`` with its categories replaced by the groups of ``path``."""

    groups = read_category_map(path)
    known = {rcc_id(pid) for pid in refs.captions}
    if groups and not known & set(groups):
        raise EvaluationError(f"{path}: none of its ids is a pair of {refs.source} (e.g. {next(iter(groups))!r}); wrong file?")
    unknown = [pid for pid in groups if pid not in known]
    if unknown:
        import logging


        logging.getLogger(__name__).warning("warning: %s: %d id(s) are not pairs of %s and are ignored: %s", path,
                                            len(unknown), refs.source, listed_ids(unknown))
    refs.categories = {pid: (groups.get(rcc_id(pid)) or [None])[0] for pid in refs.captions}
    refs.memberships = {pid: groups[rcc_id(pid)] for pid in refs.captions if len(groups.get(rcc_id(pid), ())) > 1}
    refs.category_order = list(dict.fromkeys(g for names in groups.values() for g in names))
    return refs


def read_iou_file(path: str | Path) -> dict[str, float]:
    """RCC's ``change_captions_by_IOU.json``: ``{"<numeric id>": iou}`` -> ``{"000123": iou}``;
    a no-change id (``000123.png_n`` / ``000123_n``) keeps its own IoU under ``000123_n``, other
    ids are kept as they are. Every IoU must be a finite number in [0, 1]; an empty file is an
    error (it would give no difficulty groups, silently)."""
    try:
        data = json.loads(read_text(path, EvaluationError, "IoU file"))
    except json.JSONDecodeError as exc:
        raise EvaluationError(f"{path}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: expected {{id: iou}}")
    if not data:
        raise EvaluationError(f"{path}: no IoU at all; expected {{id: iou}}")
    out = {}
    for key, value in data.items():
        text = str(key)
        stem = text.split(".")[0]
        no_change = text.endswith("_n")
        if stem.endswith("_n"):
            stem = stem[:-2]
        name = (f"{int(stem):06d}" if stem.isdigit() else stem if no_change else text) + ("_n" if no_change else "")
        out[name] = check_iou(value, f"{path}: entry {key!r}")
    return out


def check_iou(value: Any, where: str) -> float:
    """A viewpoint IoU: a finite number in [0, 1] (``NaN`` or ``"nan"`` would break the sort)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvaluationError(f"{where}: IoU {value!r} is not a number")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise EvaluationError(f"{where}: IoU {value!r} must be a finite number in [0, 1]")
    return float(value)


def iou_groups(ious: dict[str, Optional[float]], ids: list[str], categories: dict[str, Optional[str]],
               source: str) -> dict[str, list[str]]:
    """The difficulty groups of the change pairs among ``ids`` (see the module docstring)."""
    change = [pid for pid in ids if not pid.endswith("_n") and categories.get(pid) not in NO_CHANGE_CATEGORIES]
    missing = [pid for pid in change if ious.get(pid) is None]
    if missing:

        raise EvaluationError(f"{source}: no viewpoint IoU for {len(missing)} change pair(s): {listed_ids(missing)}")
    order = {pid: k for k, pid in enumerate(ious)}  # the file's order breaks ties, as a stable sort does
    ranked = sorted(change, key=lambda pid: (ious[pid], order.get(pid, 0)))
    count = int(len(ranked) * IOU_FRACTION)
    groups = {"iou_hardest_25": ranked[:count], "iou_easiest_25": ranked[len(ranked) - count:] if count else []}
    for k, chunk in enumerate(np.array_split(np.array(ranked, dtype=object), 4), 1):
        groups[f"iou_q{k}"] = [str(x) for x in chunk]
    return groups

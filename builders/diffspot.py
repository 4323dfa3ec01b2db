"""DiffSpot (Tencent, 2026): web-page screenshots before and after one CSS/text mutation.

Raw release: a local copy of the Hugging Face dataset ``tencent/DiffSpot`` (``data/test-*.parquet``;
one split, 4,400 rows). The caption is ``ground_truth_diff``; ``mutation_dicts_json``, the
structured list of mutations the benchmark scores against, is kept verbatim as ``mutations``;
the category is the first mutation's operator (its ``type``, as DiffSpot's loader reads it) or
``no_change`` for the 500 ``no_diff`` pairs; ``difficulty`` and ``domain`` are kept, the target
box becomes ``change_boxes``. Only the data card could be read when this builder was written:
the operators it lists are the categories, and an operator outside them, or a
``mutation_dicts_json`` that is not JSON, stops the build, naming the row; a row whose box has a
negative size is skipped, naming it. ``pair_id`` is the ``id`` column where the copy has one, else ``test_<row number across its shards>``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

from datasets import List, Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.hfcopy import edit_pair, find_split_files, iter_rows
from idc_toolkit.building.rawio import parse_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

#: the 13 operators of the data card (typography, colour, layout, shape), then no change
OPERATORS = ("font_weight", "font_size", "letter_spacing", "line_height", "text", "color", "opacity", "gradient",
             "position", "spacing", "justify", "border", "rounded")
REQUIRED_COLUMNS = ("image_before", "image_after", "task_type", "difficulty", "ground_truth_diff", "mutation_dicts_json")
RAW_LAYOUT = """\
RAW/                            (a local copy of tencent/DiffSpot)
  data/test-00000-of-0000N.parquet   columns: image_before, image_after, task_type, difficulty,
                                              ground_truth_diff, mutation_dicts_json, domain, target_bbox_{x,y,w,h}, ...
"""
CITATION = """@misc{diffspot2026,
  title  = {DiffSpot: A Benchmark for Fine-Grained Visual Difference Detection},
  author = {{Tencent}},
  year   = {2026},
  note   = {arXiv:2605.29615, https://github.com/Tencent/DiffSpot}
}"""


def mutations_of(row: dict[str, Any]) -> Any:
    """``mutation_dicts_json`` parsed (the card declares it JSON); ValueError saying why not."""
    text = row.get("mutation_dicts_json")
    if not isinstance(text, str):
        raise ValueError(f"mutation_dicts_json is {type(text).__name__}, not a JSON string")
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"mutation_dicts_json is not JSON ({exc.msg} at char {exc.pos})") from None
    except ValueError as exc:
        raise ValueError(f"mutation_dicts_json: {exc}") from None


def operator_of(row: dict[str, Any]) -> str:
    """The row's category: ``no_change`` for a no-diff pair, else its first mutation's type."""
    mutations = mutations_of(row)
    if row.get("task_type") == "no_diff":
        return "no_change"
    try:
        op = mutations[0]["type"]
    except (TypeError, KeyError, IndexError):
        raise ValueError("mutation_dicts_json is not a JSON list whose first item has a 'type'") from None
    if not isinstance(op, str) or op not in OPERATORS:
        raise ValueError(f"operator {op!r} is not one of the data card's {len(OPERATORS)}")
    return op


def target_box(row: dict[str, Any]) -> list[list[float]]:
    """``target_bbox_{x,y,w,h}`` as ``[[x0, y0, x1, y1]]`` (none where the row gives no box, or one
    0 x 0); ValueError for a negative, non-finite or one-sided zero size or corner."""
    xywh = [row.get(f"target_bbox_{k}") for k in "xywh"]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in xywh):
        return []
    for k, v in zip("xywh", xywh):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"target_bbox_{k} {v}: a box's corner and size are finite and not negative")
    x, y, w, h = (float(v) for v in xywh)
    if w == h == 0:  # no target element
        return []
    if w == 0 or h == 0:
        raise ValueError(f"target_bbox_w {xywh[2]}, target_bbox_h {xywh[3]}: a box of zero size")
    return [[x, y, x + w - 1, y + h - 1]]


@dataclass
class DiffSpotConfig(BuilderConfig):
    """DiffSpot has no options."""


class DiffSpot(PairBuilder):
    name = "diffspot"
    config_class = DiffSpotConfig
    categories = (*OPERATORS, "no_change")
    split_map = {"test": "test"}
    extra_features = {"mutations": Value("string"), "difficulty": Value("string"), "domain": Value("string"),
                      "change_boxes": List(List(Value("float32"), length=4))}
    extra_docs = {"mutations": "the release's `mutation_dicts_json` (JSON list of the structured mutations; DiffSpot scores these)",
                  "difficulty": "easy / medium / hard, or no_diff", "domain": "the web domain of the page",
                  "change_boxes": "the target element's box, [x0, y0, x1, y1] pixels (from target_bbox_{x,y,w,h})"}
    card = CardMeta(
        pretty_name="DiffSpot",
        description=("Screenshots of web pages before and after one mutation of typography, colour, layout or shape "
                     "(13 operators x 3 difficulty tiers x 100, plus 500 pairs with no difference)."),
        license="cc-by-nc-4.0",
        license_note="The data card of Tencent/DiffSpot states CC BY-NC 4.0 for the data (the code is MIT).",
        homepage="https://github.com/Tencent/DiffSpot",
        download="hf download tencent/DiffSpot --repo-type dataset --local-dir RAW",
        raw_layout=RAW_LAYOUT,
        citation=CITATION,
        size="– / – / 4,400",
        images_from="Hugging Face parquet",
        source_datasets=("extended|tencent/DiffSpot",),
        category_note="the first mutation's operator; `no_change` for the `no_diff` pairs.",
    )

    @cached_property
    def files(self) -> dict[str, list[Path]]:
        return find_split_files(self.raw_dir, ("test",), RAW_LAYOUT)

    def check_raw(self) -> None:
        super().check_raw()
        self.files  # noqa: B018 - fail early when the copy has no files

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        for k, (file, n, row) in enumerate(iter_rows(self.files[split], REQUIRED_COLUMNS)):
            pair_id = str(row["id"]) if row.get("id") is not None else f"test_{k}"  # k: across the copy's shards
            record = f"row {n} ({pair_id})"
            try:
                category = operator_of(row)
            except ValueError as exc:
                raise RawFormatError(file, str(exc), record) from None
            try:
                before, after = edit_pair(row, "image_before", "image_after")
                boxes = target_box(row)
            except ValueError as exc:
                report.skip(split, file, record, str(exc))
                continue
            caption = row.get("ground_truth_diff")
            yield PairRecord(pair_id=pair_id, before=before, after=after,
                             captions=[caption] if isinstance(caption, str) else [], category=category,
                             extra={"mutations": row["mutation_dicts_json"], "difficulty": row["difficulty"],
                                    "domain": row.get("domain"), "change_boxes": boxes},
                             source=f"{file}#{record}")

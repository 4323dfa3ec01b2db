"""VLM-SubtleBench (Kim, Lee & Park, ICLR 2026): subtle differences between image pairs, asked as
multiple-choice questions, with a free-form subset described in words.

Raw release: a local copy of the Hugging Face dataset ``KRAFTON/VLM-SubtleBench``:
``data/val.jsonl`` and ``data/test.jsonl`` (one item a line) and the ``images/`` they name. An item
is ``{"image_1", "image_2", "question", "answer", "distractors", "has_caption", "caption",
"category", "domain", "source", "source_id", "raw_folder", "generation_info"}`` (the card's
``dataset_info`` and the ``UnifiedAdapter`` of krafton-ai/VLM-SubtleBench). The image fields are
Hub URLs (``https://huggingface.co/datasets/KRAFTON/VLM-SubtleBench/resolve/main/images/...``) or
paths; either is read from the copy as the authors' adapter reads it: the part after
``/resolve/main/``, or the path, under RAW.

Both task forms share one row per item. ``captions`` holds the item's ``caption`` as one reference
where ``has_caption`` is true (the free-form subset: the release stores one caption string per
item and the authors' free-form evaluation reads only those items) and is empty otherwise.
``question``, ``answer`` (the correct option's text) and ``distractors`` (the wrong options) are
kept as released: the authors' evaluator shuffles ``[answer] + distractors`` into lettered options
at run time, so the release stores no letter or index. ``category`` is the difference type;
``domain``, ``source`` and ``source_id`` are strings (the authors' code and paper list different
domain sets); ``raw_folder`` and ``generation_info``, the authors' build records, are not kept.
``pair_id`` is the authors' item id, ``<category>_<source>_<source_id>`` (their fallback,
``<image_1>_<image_2>``, where one of the three is empty). An item whose JSON, fields or category
is not the release's stops the build, naming the file and line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote

from datasets import List, Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.rawio import parse_json, read_raw_text
from idc_toolkit.building.report import BuildReport
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

#: the ten difference types, in the paper's order (the README's and configs' category filter)
DIFFERENCE_TYPES = ("attribute", "state", "emotion", "temporal", "spatial", "existence", "quantity", "quality",
                    "viewpoint", "action")
#: the fields the authors' UnifiedAdapter requires of every item (REQUIRED_FIELDS)
REQUIRED_FIELDS = ("image_1", "image_2", "question", "answer", "distractors")
#: what the authors' adapter strips from a Hub URL to find the file in a local copy
HUB_MARKER = "/resolve/main/"
RAW_LAYOUT = """\
RAW/                          (a local copy of KRAFTON/VLM-SubtleBench)
  data/val.jsonl              {"image_1": "https://huggingface.co/datasets/KRAFTON/VLM-SubtleBench/resolve/main/images/...",
  data/test.jsonl              "image_2": "...", "question": "...", "answer": "second image", "distractors": ["first image"],
                               "has_caption": false, "caption": null, "category": "state", "domain": "natural",
                               "source": "changeit", "source_id": "0", "raw_folder": "...", "generation_info": null}
  images/...                  the files image_1 / image_2 name (after /resolve/main/, or as paths)
"""
CITATION = """@inproceedings{kim2026vlmsubtlebench,
  title     = {{VLM-SubtleBench}: How Far Are {VLMs} from Human-Level Subtle Comparative Reasoning?},
  author    = {Kim, Minkyu and Lee, Sangheon and Park, Dongmin},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2026},
  note      = {arXiv:2603.07888}
}"""


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string, found {type(value).__name__}")
    return value


def release_path(value: str) -> str:
    """The file an ``image_1`` / ``image_2`` value names inside the copy (the authors' adapter:
    the part after ``/resolve/main/`` of a Hub URL, else the path itself); ValueError for a URL
    without it, which no local copy holds."""
    if value.startswith(("http://", "https://")):
        at = value.find(HUB_MARKER)
        if at == -1:
            raise ValueError(f"image URL {value[:80]!r} has no {HUB_MARKER!r}: not a file of the Hub copy")
        return unquote(value[at + len(HUB_MARKER):])  # a URL's %XX escapes stand for the file name's characters
    return value


def parse_item(item: Any) -> dict[str, Any]:
    """One JSONL item checked against the release's shape; ValueError naming the first difference."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object, found {type(item).__name__}")
    missing = [k for k in REQUIRED_FIELDS if k not in item]
    if missing:
        raise ValueError(f"missing field(s) {missing}; the release's items have {list(REQUIRED_FIELDS)}")
    for key in ("image_1", "image_2", "question", "answer", "category"):
        _text(item, key)
    distractors = item["distractors"]
    if not isinstance(distractors, list) or not all(isinstance(d, str) for d in distractors):
        raise ValueError("'distractors' must be a list of strings")
    if item["category"] not in DIFFERENCE_TYPES:
        raise ValueError(f"category {item['category']!r} is not one of the release's {len(DIFFERENCE_TYPES)} "
                         f"difference types ({', '.join(DIFFERENCE_TYPES)})")
    has_caption = item.get("has_caption", False)
    if not isinstance(has_caption, bool):
        raise ValueError(f"'has_caption' must be true or false, found {has_caption!r}")
    if has_caption and not isinstance(item.get("caption"), str):
        raise ValueError(f"'has_caption' is true but 'caption' is {type(item.get('caption')).__name__}, not a string")
    for key, kinds in (("domain", str), ("source", str), ("source_id", (str, int))):
        value = item.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ValueError(f"{key!r} must be a string, found {type(value).__name__}")
    return item


def item_id(item: dict[str, Any]) -> str:
    """The authors' item id (UnifiedAdapter.process_item)."""
    category, source = item["category"], item.get("source") or ""
    source_id = "" if item.get("source_id") is None else str(item["source_id"])
    if category and source and source_id:
        return f"{category}_{source}_{source_id}"
    return f"{item['image_1']}_{item['image_2']}"


def jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line, split where Python's text files split lines
    (the authors read the file that way; ``str.splitlines`` would also split at U+2028 inside a string)."""
    for n, text in enumerate(re.split(r"\r\n|\r|\n", read_raw_text(path)), start=1):
        if text.strip():
            yield n, text


@dataclass
class VLMSubtleBenchConfig(BuilderConfig):
    """VLM-SubtleBench has no options."""


class VLMSubtleBench(PairBuilder):
    name = "vlm_subtlebench"
    config_class = VLMSubtleBenchConfig
    categories = DIFFERENCE_TYPES
    split_map = {"val": "validation", "test": "test"}
    extra_features = {"question": Value("string"), "answer": Value("string"), "distractors": List(Value("string")),
                      "domain": Value("string"), "source": Value("string"), "source_id": Value("string")}
    extra_docs = {
        "question": "the release's multiple-choice question",
        "answer": "the correct option's text as released (the release stores no letter: its evaluator shuffles "
                  "`[answer] + distractors` into lettered options at run time)",
        "distractors": "the wrong options, in release order",
        "domain": "the image domain as released (natural, industrial, medical, aerial, synthetic, ...)",
        "source": "the dataset the pair was taken or made from",
        "source_id": "the item's id in `source`",
    }
    card = CardMeta(
        pretty_name="VLM-SubtleBench",
        description=(
            "Image pairs with subtle differences of ten types (attribute, state, emotion, temporal, spatial, existence, "
            "quantity, quality, viewpoint, action) across natural, industrial, medical, aerial and synthetic images, "
            "each with a multiple-choice question (`question`, `answer`, `distractors`). Items of the free-form subset "
            "(`has_caption` in the release) have their `caption`, one string per item in the release, as the one "
            "reference in `captions`; the other items have empty `captions`."),
        license="cc-by-nc-4.0",
        license_note="The Hugging Face repository KRAFTON/VLM-SubtleBench is marked CC BY-NC 4.0; the images come "
                     "from the source datasets named in `source`, whose terms also apply.",
        homepage="https://github.com/krafton-ai/VLM-SubtleBench",
        download="hf download KRAFTON/VLM-SubtleBench --repo-type dataset --local-dir RAW",
        raw_layout=RAW_LAYOUT,
        citation=CITATION,
        size="– / about 13K items in validation + test",
        images_from="Hugging Face (images/ beside the JSONL)",
        task_categories=("image-to-text", "visual-question-answering"),
        source_datasets=("extended|KRAFTON/VLM-SubtleBench",),
        personal_info=("The emotion items compare photographs of people's facial expressions, and the medical items "
                       "are medical images, both from the source datasets named in `source`; follow their terms and "
                       "do not use the data to identify anyone."),
        category_note="the release's difference type (`category`).",
    )

    def files(self) -> dict[str, Path]:
        return {split: self.raw_dir / "data" / f"{split}.jsonl" for split in self.split_map
                if (self.raw_dir / "data" / f"{split}.jsonl").is_file()}

    def check_raw(self) -> None:
        super().check_raw()
        if not self.files():
            raise RawFormatError(self.raw_dir, f"not a {self.name} raw release: neither data/val.jsonl nor "
                                               f"data/test.jsonl. Expected layout:\n{RAW_LAYOUT}")

    def raw_files(self) -> list[str]:
        return [f"data/{split}.jsonl" for split in self.files()]

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path = self.files().get(self.release_split(split))
        if path is None:
            return
        for n, text in jsonl_lines(path):
            record = f"line {n}"
            try:
                item = parse_item(parse_json(text))
                before, after = (release_path(item[k]) for k in ("image_1", "image_2"))
            except json.JSONDecodeError as exc:
                raise RawFormatError(path, f"not JSON: {exc.msg} at column {exc.colno}", record) from None
            except ValueError as exc:
                raise RawFormatError(path, str(exc), record) from None
            pair_id = item_id(item)
            if not item.get("has_caption") and isinstance(item.get("caption"), str):
                report.note(split, str(path), f"{record} ({pair_id})", "'caption' given but 'has_caption' is false: "
                            "not a reference (the authors' free-form evaluation reads has_caption items only)")
            yield PairRecord(
                pair_id=pair_id, before=self.raw_dir / before, after=self.raw_dir / after,
                captions=[item["caption"]] if item.get("has_caption") else [], category=item["category"],
                extra={"question": item["question"], "answer": item["answer"], "distractors": list(item["distractors"]),
                       "domain": item.get("domain"), "source": item.get("source"),
                       "source_id": None if item.get("source_id") is None else str(item["source_id"])},
                source=f"{path}#{record}")

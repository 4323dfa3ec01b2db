"""Img-Diff (Jiao et al., CVPR 2025): synthetic object-replacement and object-removal pairs.

Raw release (Hugging Face ``datajuicer/Img-Diff``): ``img_diff_object_replacement.json`` and
``img_diff_object_removal.json``, each a LLaVA-style list of ``{"conversations": [question,
answer], "path", "bbox", ...}``, and the unzipped ``object_replacement/`` and
``object_removal/`` holding ``{path}_0.jpg`` (before) and ``{path}_1.jpg`` (after). The answer
(``conversations[1]["value"]``) is the reference; ``bbox`` is a *string* holding a Python
literal (one ``[x0, y0, x1, y1]`` box or a list of them), kept as ``change_boxes`` (a record whose
box is not finite, negative or unordered is skipped, naming it). No record of
the release could be read when this builder was written, so the first record of each file is
checked against this shape and the build stops, naming what differs. Everything is ``train``;
the category is the file's (``replacement`` / ``removal``); the pair id is ``<category>/<path>``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from datasets import List, Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.rawio import box_problem, read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/
  img_diff_object_replacement.json   [{"conversations": [{"from": "human", ...}, {"from": "gpt", "value": "..."}],
  img_diff_object_removal.json         "path": "...", "bbox": "[x0, y0, x1, y1]"}, ...]   (one or both)
  object_replacement/{path}_0.jpg    before       {path}_1.jpg   after
  object_removal/{path}_0.jpg        ...
"""
#: category -> (annotation file, image folder)
FILES = {"replacement": ("img_diff_object_replacement.json", "object_replacement"),
         "removal": ("img_diff_object_removal.json", "object_removal")}


class BadBox(ValueError):
    """A box of the right shape whose values are not a box's (a skipped record, not another format)."""


def parse_boxes(text: Any) -> list[list[float]]:
    """``bbox`` as released: a string holding one box or a list of boxes, each finite, not negative
    and ordered (x0 <= x1, y0 <= y1); ValueError otherwise."""
    try:
        value = ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # ``{[]: 1}`` raises TypeError
        value = None
    boxes = [value] if isinstance(value, (list, tuple)) and len(value) == 4 and all(
        isinstance(v, (int, float)) for v in value) else value
    if not isinstance(boxes, (list, tuple)) or not all(
            isinstance(b, (list, tuple)) and len(b) == 4 and all(isinstance(v, (int, float)) for v in b) for b in boxes):
        raise ValueError(f"bbox {str(text)[:60]!r} is not a box or a list of [x0, y0, x1, y1] boxes")
    for k, box in enumerate(boxes):
        why = box_problem(list(box))
        if why is not None:
            raise BadBox(f"bbox {str(text)[:60]!r}: box {k}: {why}")
    return [[float(v) for v in b] for b in boxes]


def answer_of(record: Any) -> str:
    """The reference of one record (``conversations[1]["value"]``); ValueError naming what differs."""
    conv = record.get("conversations") if isinstance(record, dict) else None
    if not isinstance(conv, list) or len(conv) < 2 or not isinstance(conv[1], dict) or not isinstance(conv[1].get("value"), str):
        raise ValueError("no conversations[1][\"value\"] string (the LLaVA-style answer holding the caption)")
    return conv[1]["value"].strip()


@dataclass
class ImgDiffConfig(BuilderConfig):
    """Img-Diff has no options."""


class ImgDiff(PairBuilder):
    name = "img_diff"
    config_class = ImgDiffConfig
    categories = tuple(FILES)
    pair_style = "edit"
    split_map = {"train": "train"}
    extra_features = {"change_boxes": List(List(Value("float32"), length=4))}
    extra_docs = {"change_boxes": "the release's `bbox`: [x0, y0, x1, y1] per changed object, before-image pixels"}
    card = CardMeta(
        pretty_name="Img-Diff",
        description=("Synthetic pairs made by replacing or removing one object with an image editor, each with "
                     "one difference caption written by a multimodal model; object boxes kept as `change_boxes`."),
        license="apache-2.0",
        license_note="The Hugging Face repository datajuicer/Img-Diff is marked Apache-2.0.",
        homepage="https://github.com/modelscope/data-juicer/tree/ImgDiff",
        download="the JSON files and object_replacement.zip / object_removal.zip of https://huggingface.co/datasets/datajuicer/Img-Diff",
        raw_layout=RAW_LAYOUT,
        citation=citations.IMG_DIFF,
        size="train only",
        images_from="Hugging Face zips",
        category_note="`replacement` / `removal`: the annotation file a pair comes from.",
    )

    def present(self) -> dict[str, tuple[str, str]]:
        return {c: f for c, f in FILES.items() if (self.raw_dir / f[0]).is_file()}

    def check_raw(self) -> None:
        super().check_raw()
        if not self.present():
            raise RawFormatError(self.raw_dir, f"not an img_diff raw release: neither {FILES['replacement'][0]} nor "
                                               f"{FILES['removal'][0]}. Expected layout:\n{RAW_LAYOUT}")

    def raw_files(self) -> list[str]:
        return [f for f, _ in self.present().values()]

    def _image(self, folder: str, path: str, k: int) -> Path:
        inside = self.raw_dir / folder / f"{path}_{k}.jpg"
        return inside if inside.is_file() or not (self.raw_dir / f"{path}_{k}.jpg").is_file() else self.raw_dir / f"{path}_{k}.jpg"

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        for category, (name, folder) in self.present().items():
            path = self.raw_dir / name
            records = read_json(path)
            if not isinstance(records, list):
                raise RawFormatError(path, f"expected a list of LLaVA-style records, found {type(records).__name__}")
            for i, rec in enumerate(records):
                where = f"[{i}]"
                try:
                    caption = answer_of(rec)
                    if not isinstance(rec.get("path"), str) or not rec["path"]:
                        raise ValueError("no 'path' string")
                    boxes = parse_boxes(rec.get("bbox", "[]"))
                except ValueError as exc:
                    if i == 0 and not isinstance(exc, BadBox):  # the shape was inferred: a different first record means a different format
                        raise RawFormatError(path, f"{exc}: not the record shape this builder reads "
                                                   "({conversations, path, bbox}; idc-build img_diff --help)", where) from None
                    report.skip(split, str(path), where, str(exc))
                    continue
                yield PairRecord(pair_id=f"{category}/{rec['path']}", before=self._image(folder, rec["path"], 0),
                                 after=self._image(folder, rec["path"], 1), captions=[caption], category=category,
                                 extra={"change_boxes": boxes}, source=f"{path}#{where}")

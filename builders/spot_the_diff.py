"""Spot-the-Diff (Jhamtani & Berg-Kirkpatrick, EMNLP 2018).

Raw release: ``data/annotations/{train,val,test}.json`` (a list of ``{"img_id", "sentences"}``
items, one per annotator HIT) and ``data/resized_images/<id>.png`` / ``<id>_2.png``.
An ``img_id`` appears in several items when several annotators described it; the field
(CLIP4IDC's reformat, the authors' own reference file) merges them, so there is one row per
``img_id`` with the sentences concatenated in file order: 8566 / 1493 / 1270 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.cards import citations
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/                         (the release's data/ folder, or the repository root holding it)
  annotations/train.json     [{"img_id": "235", "sentences": ["...", ...]}, ...]
  annotations/val.json
  annotations/test.json
  resized_images/<img_id>.png      before
  resized_images/<img_id>_2.png    after
"""


@dataclass
class SpotTheDiffConfig(BuilderConfig):
    """Spot-the-Diff has no options: merging per ``img_id`` is what every peer does."""


class SpotTheDiff(PairBuilder):
    name = "spot_the_diff"
    config_class = SpotTheDiffConfig
    split_map = {"train": "train", "val": "validation", "test": "test"}
    card = CardMeta(
        pretty_name="Spot-the-Diff",
        description=(
            "Pairs of frames from fixed surveillance cameras (VIRAT) with crowd-sourced sentences "
            "describing what differs. Several annotators' items for the same `img_id` are merged "
            "into one pair whose `captions` keep every sentence in file order, including empty ones "
            "(the authors' own reference file keeps them too)."
        ),
        license="unknown",
        license_note=(
            "The Spot-the-Diff repository (harsh19/spot-the-diff) states no licence. The images come "
            "from the VIRAT video dataset; check its terms before redistributing."
        ),
        homepage="https://github.com/harsh19/spot-the-diff",
        download=(
            "annotations: data/annotations/ in https://github.com/harsh19/spot-the-diff; images "
            "(resized_images/): the Google Drive link in data/get_images.txt of that repository"
        ),
        raw_layout=RAW_LAYOUT,
        citation=citations.SPOT_THE_DIFF,
        personal_info=(
            "The images are frames of fixed surveillance cameras (the VIRAT video dataset) and show "
            "people in public places, who did not consent to this use; faces and vehicles may be "
            "identifiable at full resolution. Do not use the dataset to identify or track individuals, "
            "and follow VIRAT's terms of use."
        ),
    )

    def check_raw(self) -> None:
        if (self.raw_dir / "data" / "annotations").is_dir():
            self.raw_dir = self.raw_dir / "data"
        self.required = ("annotations/train.json", "annotations/val.json", "annotations/test.json", "resized_images")
        super().check_raw()

    def raw_files(self) -> list[str]:
        return ["annotations/train.json", "annotations/val.json", "annotations/test.json"]

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path = self.raw_dir / "annotations" / f"{self.release_split(split)}.json"
        items = read_json(path)
        if not isinstance(items, list):
            from idc_toolkit.errors import RawFormatError

            raise RawFormatError(path, f"expected a list of {{img_id, sentences}} items, found {type(items).__name__}")
        merged: dict[str, list[str]] = {}
        sources: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            img_id = item.get("img_id") if isinstance(item, dict) else None
            if not isinstance(img_id, (str, int)) or isinstance(img_id, bool):
                report.skip(split, str(path), f"item {i}", "no img_id string")
                continue
            img_id = str(img_id)
            try:
                sentences = caption_list(item.get("sentences"))
            except ValueError as exc:
                report.skip(split, str(path), f"item {i} (img_id {img_id})", str(exc))
                continue
            merged.setdefault(img_id, []).extend(sentences)
            sources.setdefault(img_id, []).append(i)
        images = self.raw_dir / "resized_images"
        for img_id, captions in merged.items():
            items_used = ",".join(str(i) for i in sources[img_id])
            yield PairRecord(
                pair_id=img_id,
                before=images / f"{img_id}.png",
                after=images / f"{img_id}_2.png",
                captions=captions,
                source=f"{path}#items {items_used}",
            )

    def summarize(self, report: BuildReport) -> None:
        annotated: set[str] = set()
        for split in self.split_names():
            path = self.raw_dir / "annotations" / f"{self.release_split(split)}.json"
            annotated.update(str(it.get("img_id")) for it in read_json(path) if isinstance(it, dict))
        stems = {n[: -len(".png")] for n in list_images(self.raw_dir / "resized_images") if n.endswith(".png")}
        before_ids = {s for s in stems if not s.endswith("_2") and not s.endswith("_diff")}
        report.count("images_without_annotation", len(before_ids - annotated))
        self.note_unread_files(report, self.raw_dir / "annotations", "*.json")

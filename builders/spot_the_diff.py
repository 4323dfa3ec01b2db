"""Spot-the-Diff (Jhamtani & Berg-Kirkpatrick, EMNLP 2018).

Raw release: ``data/annotations/{train,val,test}.json`` (a list of ``{"img_id", "sentences"}``
items, one per annotator HIT) and ``data/resized_images/<id>.png`` / ``<id>_2.png``.
An ``img_id`` appears in several items when several annotators described it; the field
(CLIP4IDC's reformat, the authors' own reference file) merges them, so there is one row per
``img_id`` with the sentences concatenated in file order: 8566 / 1493 / 1270 pairs.

Config ``captions=card_multi_change``: CARD's multi-change version (Tu et al., ACL 2024), the
same pairs and splits with ONE reference each, the annotators' sentences joined by ". "
(``change_multi_captions.json`` + ``splits.json`` of tuyunbin/CARD's ``spot-the-diff/``). Its
images are the release's ``resized_images/`` or CARD's preprocessed ``images/`` (before) +
``sc_images/`` (after), named by the six-digit id.

Config ``rehost=DIR``: the original link to the images is dead, so they are read from a local
copy of a Hub dataset that re-hosts them as instruction data (The Cauldron / FineVision's
``spot_the_diff``, Mantis-Instruct's ``spot-the-diff``); rows are matched back to ``img_id``s
through the release's annotations (:mod:`idc_toolkit.building.rehost`) and what does not match
is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.cards import citations
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/                         (the release's data/ folder, or the repository root holding it)
  annotations/train.json     [{"img_id": "235", "sentences": ["...", ...]}, ...]
  annotations/val.json
  annotations/test.json
  resized_images/<img_id>.png      before
  resized_images/<img_id>_2.png    after
captions=card_multi_change: CARD's spot-the-diff/ files in RAW (or RAW/spot-the-diff/)
  change_multi_captions.json   {"000235.png": ["sentence one. sentence two"], ...}
  splits.json                  {"train": [76, 235, ...], "val": [...], "test": [...]}
  and resized_images/ as above, or CARD's images/<6 digits>.png + sc_images/<6 digits>.png
"""
CARD_FILES = ("change_multi_captions.json", "splits.json")


@dataclass
class SpotTheDiffConfig(BuilderConfig):
    """``captions``: ``original`` (the release's sentences, merged per ``img_id`` as every peer
    does) or ``card_multi_change`` (CARD's joined multi-change captions, one per pair);
    ``rehost``: a local copy of a Hub dataset that re-hosts the images (module docstring),
    read instead of ``resized_images/``."""

    captions: str = "original"
    rehost: str = ""


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
        size="8,566 / 1,493 / 1,270",
        images_from="the release's Google Drive zip (dead since 2025); Hub re-hosts with `rehost=`",
        personal_info=(
            "The images are frames of fixed surveillance cameras (the VIRAT video dataset) and show "
            "people in public places, who did not consent to this use; faces and vehicles may be "
            "identifiable at full resolution. Do not use the dataset to identify or track individuals, "
            "and follow VIRAT's terms of use."
        ),
    )

    def __init__(self, raw_dir, config=None):
        super().__init__(raw_dir, config)
        if self.config.captions not in ("original", "card_multi_change"):
            raise RawFormatError(self.raw_dir, f"captions={self.config.captions!r}: choose original or card_multi_change")
        if self.config.rehost and self.card_multi:
            raise RawFormatError(self.raw_dir, "rehost= reads the release's own annotations: use it with captions=original")
        if self.config.rehost:
            self.card = replace(self.card, description=self.card.description + (
                f" The images were taken from a re-hosted copy (`{Path(self.config.rehost).name}`), each row matched back "
                "to the release's `img_id` through its annotations; pairs the copy lacks are left out (see the build report)."),
                download=self.card.download + "; images here: a local copy of a Hub dataset re-hosting them "
                                              "(HuggingFaceM4/the_cauldron spot_the_diff, TIGER-Lab/Mantis-Instruct spot-the-diff)")
        if self.card_multi:
            self.card = replace(self.card, pretty_name="Spot-the-Diff (CARD multi-change)", description=(
                "Spot-the-Diff's pairs and splits with CARD's multi-change references: one caption per pair, the "
                "annotators' sentences joined by \". \" (Tu et al., ACL 2024)."),
                download=self.card.download + "; captions: spot-the-diff/ in https://github.com/tuyunbin/CARD",
                citation=citations.SPOT_THE_DIFF + "\n\n" + citations.CARD)

    @property
    def card_multi(self) -> bool:
        return self.config.captions == "card_multi_change"

    def check_raw(self) -> None:
        if self.card_multi:
            return self._check_card_raw()
        if (self.raw_dir / "data" / "annotations").is_dir():
            self.raw_dir = self.raw_dir / "data"
        self.required = ("annotations/train.json", "annotations/val.json", "annotations/test.json",
                         *(() if self.config.rehost else ("resized_images",)))
        super().check_raw()
        if self.config.rehost and not Path(self.config.rehost).is_dir():
            raise RawFormatError(self.config.rehost, "rehost= names no folder (a local copy of the re-hosted dataset)")

    def _check_card_raw(self) -> None:
        if (self.raw_dir / "data" / "resized_images").is_dir() and not (self.raw_dir / "resized_images").is_dir():
            self.raw_dir = self.raw_dir / "data"
        self.card_dir = next((d for d in (self.raw_dir, self.raw_dir / "spot-the-diff")
                              if all((d / f).is_file() for f in CARD_FILES)), self.raw_dir)
        self.images = ("resized_images", "resized_images") if (self.raw_dir / "resized_images").is_dir() else ("images", "sc_images")
        self.required = (*(str((self.card_dir / f).relative_to(self.raw_dir)) for f in CARD_FILES), *dict.fromkeys(self.images))
        super().check_raw()

    def raw_files(self) -> list[str]:
        if self.card_multi:
            return [str((self.card_dir / f).relative_to(self.raw_dir)) for f in CARD_FILES]
        return ["annotations/train.json", "annotations/val.json", "annotations/test.json"]

    def _card_image(self, pair_id: str, after: bool) -> Path:
        if self.images[0] == "resized_images":
            return self.raw_dir / "resized_images" / (f"{pair_id}_2.png" if after else f"{pair_id}.png")
        return self.raw_dir / self.images[after] / f"{int(pair_id):06d}.png"

    def _generate_card(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        captions_path, splits_path = (self.card_dir / f for f in CARD_FILES)
        captions = read_json(captions_path)
        if not isinstance(captions, dict):
            raise RawFormatError(captions_path, "expected {\"<6 digits>.png\": [caption], ...}")
        for i, raw_id in enumerate(self.read_split_file(splits_path).get(self.release_split(split), [])):
            if not isinstance(raw_id, int) or isinstance(raw_id, bool):
                raise RawFormatError(splits_path, f"ids are integers in CARD's splits, found {raw_id!r}", f"{split}[{i}]")
            key = f"{raw_id:06d}.png"
            if key not in captions:
                report.skip(split, str(captions_path), key, "in splits.json but has no caption")
                continue
            try:
                refs = caption_list(captions[key])
            except ValueError as exc:
                report.skip(split, str(captions_path), key, str(exc))
                continue
            pair_id = str(raw_id)
            yield PairRecord(pair_id=pair_id, before=self._card_image(pair_id, False), after=self._card_image(pair_id, True),
                             captions=refs, source=f"{captions_path}#{key}")

    def _merged(self, split: str, report: BuildReport) -> tuple[Path, dict[str, list[str]], dict[str, list[int]]]:
        """One split's annotation items merged per ``img_id`` in file order (module docstring)."""
        path = self.raw_dir / "annotations" / f"{self.release_split(split)}.json"
        items = read_json(path)
        if not isinstance(items, list):
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
        return path, merged, sources

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        if self.card_multi:
            yield from self._generate_card(split, report)
            return
        path, merged, sources = self._merged(split, report)
        if self.config.rehost:
            yield from self._generate_rehost(split, report, path, merged, sources)
            return
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

    # -- images from a re-hosted copy (rehost=DIR) ----------------------------------------
    def _rehost_match(self):
        if not hasattr(self, "_match"):
            from idc_toolkit.building.rehost import match_rehost

            scratch = BuildReport(dataset=self.name)  # the splits' own problems are reported when each is built
            refs = {pid: caps for split in self.split_names() for pid, caps in self._merged(split, scratch)[1].items()}
            self._match = match_rehost(Path(self.config.rehost), refs)
        return self._match

    def _rehost_cell(self, cell):
        if isinstance(cell, dict) and cell.get("bytes"):
            return cell["bytes"]
        path = cell.get("path") if isinstance(cell, dict) else None
        root = Path(self.config.rehost).resolve()
        local = (root / path).resolve() if path else None
        if local is None or not local.is_relative_to(root) or not local.is_file():  # a path may not leave the copy
            return None
        return local.read_bytes()

    def _generate_rehost(self, split, report, path, merged, sources) -> Iterator[PairRecord]:
        from idc_toolkit.building.rehost import rehost_images

        found = set()
        for pid, before, after, where in rehost_images(self._rehost_match(), set(merged)):
            found.add(pid)
            cells = self._rehost_cell(before), self._rehost_cell(after)
            if None in cells:
                report.skip(split, where, pid, "the re-hosted row has no image bytes and no file at its image path inside the copy")
                continue
            items_used = ",".join(str(i) for i in sources[pid])
            yield PairRecord(pair_id=pid, before=cells[0], after=cells[1], captions=merged[pid],
                             source=f"{path}#items {items_used}; images {where}")
        missing = [pid for pid in merged if pid not in found]
        report.count(f"{split}_pairs_not_in_rehost", len(missing))
        if missing:
            report.note(split, self.config.rehost, None, f"{len(missing)} of the split's {len(merged)} pairs are not in the "
                                                         f"re-hosted copy (e.g. {', '.join(missing[:5])})")

    def summarize(self, report: BuildReport) -> None:
        if self.config.rehost:
            match = self._rehost_match()
            report.count("rehost_rows_matched", len(match.ids))
            report.count("rehost_rows_unmatched", len(match.problems))
            for file, record, why in match.problems[:20]:
                report.note(None, file, record, f"re-hosted row not matched to a release pair: {why}")
            if len(match.problems) > 20:
                report.note(None, self.config.rehost, None, f"... {len(match.problems) - 20} more re-hosted rows not matched")
            return
        if self.card_multi:
            listed = {f"{i:06d}.png" for ids in self.read_split_file(self.card_dir / "splits.json").values() for i in ids
                      if isinstance(i, int)}
            report.count("captions_in_no_split", len(set(read_json(self.card_dir / "change_multi_captions.json")) - listed))
            return
        annotated: set[str] = set()
        for split in self.split_names():
            path = self.raw_dir / "annotations" / f"{self.release_split(split)}.json"
            annotated.update(str(it.get("img_id")) for it in read_json(path) if isinstance(it, dict))
        stems = {n[: -len(".png")] for n in list_images(self.raw_dir / "resized_images") if n.endswith(".png")}
        before_ids = {s for s in stems if not s.endswith("_2") and not s.endswith("_diff")}
        report.count("images_without_annotation", len(before_ids - annotated))
        self.note_unread_files(report, self.raw_dir / "annotations", "*.json")

"""CLEVR-DC (Kim et al., ICCV 2021, "Viewpoint-Agnostic Change Captioning with Cycle Consistency").

Raw release (hsgkim/clevr-dc): ``captions.json`` (unpadded index -> list of captions),
``split.json`` (``{"train", "val", "test"}`` lists of indices) and the extracted
``bef.tar.gz`` / ``aft.tar.gz`` (``bef/<index>.png``, ``aft/<index>.png``).

Categories. The release has no type file. Its README says 8,000 scenes were generated per
action, in the order colour, texture, add, remove, move, nothing (distractor), and
``split.json`` is cut in exact blocks of 8,000 indices (train = 8000k+0..6799, val =
8000k+6800..7199, test = 8000k+7200..7999 for k = 0..5). The category of index i is
therefore taken as block ``i // 8000`` in that README order. This mapping is inferred, not
stated as a table by the authors: the card says so, and ``categories=false`` leaves the
column out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.cards import citations
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import CLEVR_CATEGORIES, PairRecord, pair_features

RAW_LAYOUT = """\
RAW/
  captions.json     {"0": ["...", ...], "1": [...], ...}   (unpadded index keys)
  split.json        {"train": [0, ...], "val": [...], "test": [...]}
  bef/<index>.png   before (from bef.tar.gz)
  aft/<index>.png   after  (from aft.tar.gz)
"""
BLOCK = 8000


@dataclass
class ClevrDCConfig(BuilderConfig):
    """``categories``: derive ``category`` from the 8,000-index action blocks (see the module docstring)."""

    categories: bool = True


class ClevrDC(PairBuilder):
    name = "clevr_dc"
    config_class = ClevrDCConfig
    categories = CLEVR_CATEGORIES
    required = ("captions.json", "split.json", "bef", "aft")
    card = CardMeta(
        pretty_name="CLEVR-DC",
        description=(
            "CLEVR scenes where the camera moves to a random location between the before and after "
            "image (a large viewpoint change) while one action happens: colour, texture (material), "
            "add, remove (drop), move, or nothing (distractor)."
        ),
        license="unknown",
        license_note="The CLEVR-DC repository (hsgkim/clevr-dc) states no licence.",
        homepage="https://github.com/hsgkim/clevr-dc",
        download="captions.json and split.json from hsgkim/clevr-dc; bef.tar.gz and aft.tar.gz from the Google Drive links in its README",
        raw_layout=RAW_LAYOUT,
        citation=citations.CLEVR_DC,
        size="40,800 / 2,400 / 4,800",
        images_from="the release's archive",
        category_note=(
            "The release has no type file. Categories are derived from the index: the README generates "
            "8,000 scenes per action in the order color, texture (material), add, remove (drop), move, "
            "nothing (distractor), and split.json is cut in exact 8,000-index blocks, so index i has the "
            "action of block i // 8000. This mapping is inferred from the README order; build with "
            "`--config categories=false` to leave the column out."
        ),
    )

    def features(self):
        return pair_features(self.categories if self.config.categories else None, self.extra_features)

    def _load(self) -> None:
        if hasattr(self, "_split"):
            return
        self._split = self.read_split_file(self.raw_dir / "split.json")
        self._captions = read_json(self.raw_dir / "captions.json")

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        self._load()
        release = self.release_split(split)
        captions_file = str(self.raw_dir / "captions.json")
        for raw_id in self._split.get(release, []):
            try:
                index = int(raw_id)
            except (TypeError, ValueError):
                report.skip(split, str(self.raw_dir / "split.json"), repr(raw_id), "split id is not a number")
                continue
            key = str(index)
            try:
                captions = caption_list(self._captions.get(key))
            except ValueError as exc:
                report.skip(split, captions_file, key, str(exc))
                continue
            category = None
            if self.config.categories:
                block = index // BLOCK
                if not 0 <= block < len(CLEVR_CATEGORIES):
                    report.skip(split, captions_file, key, f"index outside the 6 action blocks of {BLOCK}")
                    continue
                category = CLEVR_CATEGORIES[block]
            yield PairRecord(
                pair_id=key,
                before=self.raw_dir / "bef" / f"{key}.png",
                after=self.raw_dir / "aft" / f"{key}.png",
                captions=captions,
                category=category,
                source=f"{captions_file}#{key}",
            )

    def summarize(self, report: BuildReport) -> None:
        self._load()
        in_splits = {str(int(i)) for ids in self._split.values() for i in ids if str(i).isdigit()}
        on_disk = {n[:-4] for n in list_images(self.raw_dir / "bef") if n.endswith(".png")}
        report.count("images_without_split", len(on_disk - in_splits))
        report.count("captioned_ids_in_no_split", len(set(self._captions) - in_splits))

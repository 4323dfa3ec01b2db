"""CLEVR-Change (Park et al., ICCV 2019, "Robust Change Captioning").

Raw release (the extracted ``clevr_change.tar.gz``): ``images/CLEVR_default_NNNNNN.png``
(before), ``sc_images/CLEVR_semantic_NNNNNN.png`` (after, semantic change),
``nsc_images/CLEVR_nonsemantic_NNNNNN.png`` (after, distractor only: viewpoint/illumination),
``change_captions.json`` and ``no_change_captions.json`` (both keyed by the *default* image
name), ``splits.json`` (numeric ids per split) and ``type_mapping.json`` (``NNNNNN.png`` per
change type).

Every split id gives two pairs, as in the official evaluation (RobustChangeCaptioning's
``total_change_captions_reformat.json``): ``NNNNNN`` = default -> semantic with the change
captions and the id's type, and ``NNNNNN_n`` = default -> nonsemantic with the no-change
captions and category ``distractor``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import CLEVR_CATEGORIES, PairRecord

RAW_LAYOUT = """\
RAW/                      (the data/ folder of clevr_change.tar.gz)
  images/CLEVR_default_000000.png ...
  sc_images/CLEVR_semantic_000000.png ...
  nsc_images/CLEVR_nonsemantic_000000.png ...
  change_captions.json      {"CLEVR_default_000000.png": ["...", ...], ...}
  no_change_captions.json   {"CLEVR_default_000000.png": ["...", ...], ...}
  splits.json               {"train": [0, 1, ...], "val": [...], "test": [...]}
  type_mapping.json         {"color": ["000000.png", ...], "material": [...], "add": [...], "drop": [...], "move": [...]}
"""

CHANGE_TYPES = CLEVR_CATEGORIES[:-1]  # every category but "distractor"


@dataclass
class ClevrChangeConfig(BuilderConfig):
    """``include_distractors``: also emit the no-change (``_n``, distractor) pair of every id."""

    include_distractors: bool = True


class ClevrChange(PairBuilder):
    name = "clevr_change"
    config_class = ClevrChangeConfig
    categories = CLEVR_CATEGORIES
    split_map = {"train": "train", "val": "validation", "test": "test"}
    required = (
        "images",
        "sc_images",
        "nsc_images",
        "change_captions.json",
        "no_change_captions.json",
        "splits.json",
        "type_mapping.json",
    )
    card = CardMeta(
        pretty_name="CLEVR-Change",
        description=(
            "Synthetic CLEVR scenes before and after one change (color, material, add, drop, move), "
            "each also paired with a distractor-only version (camera viewpoint or illumination moved, "
            "nothing semantic changed). Every id gives a change pair `NNNNNN` and a no-change pair "
            "`NNNNNN_n`, exactly as the official evaluation files key them."
        ),
        license="unknown",
        license_note=(
            "The CLEVR-Change release (Seth-Park/RobustChangeCaptioning) states no licence. CLEVR itself "
            "is CC BY 4.0."
        ),
        homepage="https://github.com/Seth-Park/RobustChangeCaptioning",
        download="clevr_change.tar.gz from the Google Drive link in the RobustChangeCaptioning README",
        raw_layout=RAW_LAYOUT,
        citation=citations.CLEVR_CHANGE,
        size="67,660 / 3,976 / 7,970",
        images_from="the release's archive (RCC README)",
        category_note=(
            "`color`, `material`, `add`, `drop`, `move` come from `type_mapping.json` (change pairs); "
            "`distractor` marks every `_n` pair (distractor-only, no semantic change)."
        ),
    )

    #: RCC's viewpoint-difficulty file (evaluate_by_IOU.py); when the release has it, every pair
    #: gets its IoU in a ``viewpoint_iou`` column (``idc-eval --iou-column viewpoint_iou``)
    IOU_FILE = "change_captions_by_IOU.json"
    extra_docs = {"viewpoint_iou": "IoU of the change pair's viewpoints from RCC's change_captions_by_IOU.json "
                                   "(lower = harder), null on distractor pairs; only when the release has that file"}

    def features(self):
        from datasets import Value

        from idc_toolkit.schema import pair_features

        extra = {"viewpoint_iou": Value("float32")} if (self.raw_dir / self.IOU_FILE).is_file() else {}
        return pair_features(self.categories, {**self.extra_features, **extra})

    def _viewpoint_iou(self, sid: str) -> dict:
        """``{"viewpoint_iou": iou}`` when the release has the IoU file (keys: numeric ids)."""
        if not (self.raw_dir / self.IOU_FILE).is_file():
            return {}
        if not hasattr(self, "_ious"):
            raw = read_json(self.raw_dir / self.IOU_FILE)
            self._ious = {f"{int(k):06d}": float(v) for k, v in raw.items()}
        return {"viewpoint_iou": self._ious.get(sid)}

    def _load(self) -> None:
        if hasattr(self, "_splits"):
            return
        self._splits = self.read_split_file(self.raw_dir / "splits.json")
        self._change = read_json(self.raw_dir / "change_captions.json")
        self._no_change = read_json(self.raw_dir / "no_change_captions.json")
        types_path = self.raw_dir / "type_mapping.json"
        types = read_json(types_path)
        self._type_of: dict[str, str] = {}
        for change_type, names in types.items():
            if change_type not in CHANGE_TYPES:
                raise RawFormatError(types_path, f"unknown change type {change_type!r}; expected {list(CHANGE_TYPES)}")
            for name in names:
                self._type_of[str(name).split(".")[0]] = change_type

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        self._load()
        release = self.release_split(split)
        splits_file = str(self.raw_dir / "splits.json")
        for raw_id in self._splits.get(release, []):
            try:
                num = int(raw_id)
            except (TypeError, ValueError):
                report.skip(split, splits_file, repr(raw_id), "split id is not a number")
                continue
            sid = f"{num:06d}"
            name = f"CLEVR_default_{sid}.png"
            before = self.raw_dir / "images" / name
            change_type = self._type_of.get(sid)
            if change_type is None:
                report.skip(split, str(self.raw_dir / "type_mapping.json"), sid, "id has no change type")
            else:
                try:
                    captions = caption_list(self._change.get(name))
                except ValueError as exc:
                    report.skip(split, str(self.raw_dir / "change_captions.json"), name, str(exc))
                else:
                    yield PairRecord(
                        pair_id=sid,
                        before=before,
                        after=self.raw_dir / "sc_images" / f"CLEVR_semantic_{sid}.png",
                        captions=captions,
                        category=change_type,
                        extra=self._viewpoint_iou(sid),
                        source=f"{self.raw_dir / 'change_captions.json'}#{name}",
                    )
            if not self.config.include_distractors:
                continue
            try:
                captions = caption_list(self._no_change.get(name))
            except ValueError as exc:
                report.skip(split, str(self.raw_dir / "no_change_captions.json"), name, str(exc))
                continue
            yield PairRecord(
                pair_id=f"{sid}_n",
                before=before,
                after=self.raw_dir / "nsc_images" / f"CLEVR_nonsemantic_{sid}.png",
                captions=captions,
                category="distractor",
                extra={k: None for k in self._viewpoint_iou(sid)},  # RCC's IoU describes the change pair
                source=f"{self.raw_dir / 'no_change_captions.json'}#{name}",
            )

    def summarize(self, report: BuildReport) -> None:
        self._load()
        in_splits = {f"{int(i):06d}" for ids in self._splits.values() for i in ids if str(i).lstrip("-").isdigit()}
        on_disk = {n[len("CLEVR_default_"):-4] for n in list_images(self.raw_dir / "images") if n.startswith("CLEVR_default_")}
        report.count("images_without_split", len(on_disk - in_splits))
        captioned = {k[len("CLEVR_default_"):-4] for k in self._change if k.startswith("CLEVR_default_")}
        report.count("captioned_ids_in_no_split", len(captioned - in_splits))

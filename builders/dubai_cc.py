"""Dubai-CC (Hoxha et al., TGRS 2022): remote-sensing change captioning over Dubai, 2000 -> 2010.

Raw release: ``description_jsontr_te_val/{Train,Validation,Test}_Dubai_CC.json`` (Karpathy
style: ``{"dataset", "images": [{"filename", "split", "image_id", "sentences": [{"raw", ...}]}]}``)
and the Landsat tiles ``RGB/500_2000/<row>x<col>.tif`` (before) and ``RGB/500_2010/<name>``
(after). ``image_id`` restarts at 0 in every file, so pairs are keyed by ``filename``;
``captions`` are the ``raw`` strings as released. 300 / 50 / 150 pairs, five captions each. The
release labels no categories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.building.rawio import read_karpathy
from idc_toolkit.building.report import BuildReport
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/                                   (the release's datasetDubaiCCPublic/ folder)
  description_jsontr_te_val/Train_Dubai_CC.json   {"images": [{"filename": "6x26.tif", "split": "train",
  description_jsontr_te_val/Validation_Dubai_CC.json            "sentences": [{"raw": "..."}, ...]}, ...]}
  description_jsontr_te_val/Test_Dubai_CC.json
  RGB/500_2000/<row>x<col>.tif     before (2000)
  RGB/500_2010/<row>x<col>.tif     after (2010)
"""
ANNOTATIONS = "description_jsontr_te_val"
FILES = {"train": "Train_Dubai_CC.json", "validation": "Validation_Dubai_CC.json", "test": "Test_Dubai_CC.json"}
#: the ``split`` value each file's records carry
RECORD_SPLIT = {"train": "train", "validation": "val", "test": "test"}


@dataclass
class DubaiCCConfig(BuilderConfig):
    """Dubai-CC has no options."""


class DubaiCC(PairBuilder):
    name = "dubai_cc"
    config_class = DubaiCCConfig
    prompt_preset = "remote_sensing"
    required = tuple(f"{ANNOTATIONS}/{f}" for f in FILES.values()) + ("RGB/500_2000", "RGB/500_2010")
    card = CardMeta(
        pretty_name="Dubai-CC",
        description=(
            "500 pairs of Landsat tiles over Dubai from 2000 and 2010, five sentences each describing the "
            "urbanisation between them (new buildings, roads, artificial islands); about 145 pairs show no change."
        ),
        license="unknown",
        license_note=(
            "The Dubai-CC release (University of Trento, disi.unitn.it/~melgani/datasets.html) states no licence "
            "that we could find; ask its authors before redistributing."
        ),
        homepage="https://disi.unitn.it/~melgani/datasets.html",
        download="DubaiCC500impair/datasetDubaiCCPublic/ from the authors' page (caption files and RGB tiles)",
        raw_layout=RAW_LAYOUT,
        citation=citations.DUBAI_CC,
        size="300 / 50 / 150",
        images_from="the authors' page (UniTN)",
    )

    def check_raw(self) -> None:
        for sub in ("datasetDubaiCCPublic", "DubaiCC500impair/datasetDubaiCCPublic"):
            if (self.raw_dir / sub / ANNOTATIONS).is_dir():
                self.raw_dir = self.raw_dir / sub
        super().check_raw()

    def raw_files(self) -> list[str]:
        return [f"{ANNOTATIONS}/{f}" for f in FILES.values()]

    def _records(self, split: str) -> tuple[Path, list]:
        path = self.raw_dir / ANNOTATIONS / FILES[split]
        return path, read_karpathy(path)

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path, records = self._records(split)
        seen: dict[str, int] = {}
        for i, img in enumerate(records):
            filename = img.get("filename") if isinstance(img, dict) else None
            record = f"images[{i}] ({filename})"
            if not isinstance(filename, str) or not filename:
                why = "no filename" if not filename else f"filename must be a string, found {type(filename).__name__}"
                report.skip(split, str(path), f"images[{i}]", why)
                continue
            if img.get("split") != RECORD_SPLIT[split]:
                raise RawFormatError(path, f"split {img.get('split')!r} in {FILES[split]}, expected "
                                           f"{RECORD_SPLIT[split]!r}", record)
            if filename in seen:
                report.skip(split, str(path), record, f"repeats images[{seen[filename]}] (pairs are keyed by filename)")
                continue
            seen[filename] = i
            try:
                captions = caption_list([s.get("raw") if isinstance(s, dict) else None for s in img.get("sentences") or []])
            except ValueError as exc:
                report.skip(split, str(path), record, str(exc))
                continue
            yield PairRecord(pair_id=filename.rsplit(".", 1)[0], before=self.raw_dir / "RGB" / "500_2000" / filename,
                             after=self.raw_dir / "RGB" / "500_2010" / filename, captions=captions,
                             source=f"{path}#{record}")

    def summarize(self, report: BuildReport) -> None:
        annotated = {img.get("filename") for split in FILES for img in self._records(split)[1]
                     if isinstance(img, dict) and isinstance(img.get("filename"), str)}
        report.count("images_without_annotation", len(list_images(self.raw_dir / "RGB" / "500_2000") - annotated))

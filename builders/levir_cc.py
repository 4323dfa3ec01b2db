"""LEVIR-CC (Liu et al., TGRS 2022): remote-sensing change captioning.

Raw release: ``LevirCCcaptions.json`` (Karpathy style: ``{"images": [{"split", "filename",
"filepath", "sentences": [{"raw", "tokens", ...}], "changeflag", ...}]}``) and the image
pairs ``images/<split>/A/<filename>`` (before) and ``images/<split>/B/<filename>`` (after).
Rows are driven by the JSON, not the folders (the folders are said to hold extra,
unannotated pairs; they are counted). ``captions`` are the ``raw`` strings as released
(they may carry a leading space and a trailing " ."); ``category`` comes from
``changeflag`` (1 = change, 0 = no_change). 6815 / 1333 / 1929 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, list_images
from idc_toolkit.cards import citations
from idc_toolkit.building.rawio import read_karpathy
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/
  LevirCCcaptions.json   {"images": [{"split": "train", "filename": "train_000001.png", "filepath": "train",
                                      "sentences": [{"raw": " there is no difference .", "tokens": [...]}, ...],
                                      "changeflag": 0, ...}, ...]}
  images/train/A/train_000001.png   before
  images/train/B/train_000001.png   after
  images/val/..., images/test/...
"""


@dataclass
class LevirCCConfig(BuilderConfig):
    """LEVIR-CC has no options."""


class LevirCC(PairBuilder):
    name = "levir_cc"
    config_class = LevirCCConfig
    categories = ("change", "no_change")
    prompt_preset = "remote_sensing"  # a VLM is asked about buildings and roads, not objects
    split_map = {"train": "train", "restval": "train", "val": "validation", "test": "test"}
    required = ("LevirCCcaptions.json", "images")
    extra_features = {"changeflag": Value("int8")}
    extra_docs = {"changeflag": "the release's change flag (1 = change, 0 = no change)"}
    card = CardMeta(
        pretty_name="LEVIR-CC",
        description=(
            "Bi-temporal 256x256 remote-sensing image pairs (LEVIR-CD scenes) with five sentences each "
            "describing the change in buildings, roads and vegetation; about half of the pairs show no change."
        ),
        license="unknown",
        license_note=(
            "The LEVIR-CC release is for academic purposes only (Chen-Yang-Liu/RSICC README); check the "
            "terms of the LEVIR-CD imagery before redistributing."
        ),
        homepage="https://github.com/Chen-Yang-Liu/LEVIR-CC-Dataset",
        download="LevirCCcaptions.json and images/ from the Google Drive / Baidu / Hugging Face links in the LEVIR-CC-Dataset README",
        raw_layout=RAW_LAYOUT,
        citation=citations.LEVIR_CC,
        size="6,815 / 1,333 / 1,929",
        images_from="Google Drive / Baidu / Hugging Face",
        category_note="`change` / `no_change` from the release's `changeflag` (1 / 0).",
    )

    def _images(self) -> list:
        if not hasattr(self, "_records"):
            self._records = read_karpathy(self.raw_dir / "LevirCCcaptions.json", self.split_map)
        return self._records

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path = str(self.raw_dir / "LevirCCcaptions.json")
        for i, img in enumerate(self._images()):
            if self.split_map[img["split"]] != split:
                continue
            filename = img.get("filename")
            record = f"images[{i}] ({filename})"
            if not isinstance(filename, str) or not filename:
                why = "no filename" if not filename else f"filename must be a string, found {type(filename).__name__}"
                report.skip(split, path, record, why)
                continue
            sentences = img.get("sentences")
            if not isinstance(sentences, list) or not sentences:
                report.skip(split, path, record, "no sentences")
                continue
            raws = [s.get("raw") if isinstance(s, dict) else None for s in sentences]
            if any(not isinstance(r, str) for r in raws):
                report.skip(split, path, record, "a sentence has no 'raw' string")
                continue
            flag = img.get("changeflag")
            if flag not in (0, 1):
                report.skip(split, path, record, f"changeflag must be 0 or 1, found {flag!r}")
                continue
            folder = self.raw_dir / "images" / str(img.get("filepath") or img["split"])
            yield PairRecord(
                pair_id=filename.rsplit(".", 1)[0],
                before=folder / "A" / filename,
                after=folder / "B" / filename,
                captions=raws,
                category="change" if flag == 1 else "no_change",
                extra={"changeflag": flag},
                source=f"{path}#{record}",
            )

    def summarize(self, report: BuildReport) -> None:
        annotated = {(str(img.get("filepath") or img["split"]), img.get("filename")) for img in self._images()
                     if isinstance(img.get("filename"), str)}
        folders = self.raw_dir / "images"
        extra = 0
        if folders.is_dir():
            for split_dir in folders.iterdir():
                if split_dir.is_dir():
                    extra += sum(1 for n in list_images(split_dir / "A") if (split_dir.name, n) not in annotated)
        report.count("images_without_annotation", extra)

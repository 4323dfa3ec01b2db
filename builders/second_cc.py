"""SECOND-CC (Karaca et al., JSTARS 2025): change captions over SECOND's semantic change maps.

Raw release: ``SECOND-CC-AUG.json`` (Karpathy style; splits train / restval / val / test) and,
per split, ``rgb/A`` + ``rgb/B`` (before / after) and ``sem/A`` + ``sem/B``, the semantic map of
each phase as a colour PNG with the pair's file name. The maps use SECOND's seven-colour
palette (white = unchanged; the palette is not stated in SECOND-CC's repository but is SECOND's,
so every map is checked and a colour outside it stops the build, naming the file; a map that
is no PNG, is cut short, is not of its pair's size or resolves outside the raw folder skips its
pair, named in the report). Each pair gains ``classes_before`` / ``classes_after`` (PNGs of
indices into ``SECOND_CLASSES``) and the ground-truth change mask in ``idc-precompute masks``'
columns (changed = labelled in either phase). The category is ``change`` where the maps mark any pixel, else ``no_change``. Captions
are the ``raw`` strings, or the tokens joined by spaces where a sentence has no ``raw``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from datasets import Image

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.labels import LabelError, load_label, mask_columns, png_cell
from idc_toolkit.building.rawio import read_karpathy
from idc_toolkit.building.report import BuildReport
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import MASK_FEATURES, PairRecord

#: SECOND's semantic classes and their colours (index = the value in the class maps)
SECOND_CLASSES = ("unchanged", "water", "ground", "low vegetation", "tree", "building", "sports field")
SECOND_COLOURS = ((255, 255, 255), (0, 0, 255), (128, 128, 128), (0, 128, 0), (0, 255, 0), (128, 0, 0), (255, 0, 0))
CAPTIONS = "SECOND-CC-AUG.json"
RAW_LAYOUT = """\
RAW/                                    (SECOND_CC_dataset/)
  SECOND-CC-AUG.json                    {"images": [{"filename", "split", "sentences": [{"raw" | "tokens"}]}]}
  train/rgb/A/<filename>   train/rgb/B/<filename>     before / after
  train/sem/A/<filename>   train/sem/B/<filename>     semantic map of each phase (SECOND's colours)
  val/..., test/...
"""


def class_map(pixels, where: str):
    """A colour semantic map's pixels as class indices; refuses a colour outside SECOND's palette."""
    import numpy as np

    rgb = pixels
    rgb = rgb[..., :3] if rgb.ndim == 3 else np.repeat(rgb[..., None], 3, axis=2)
    code = (rgb[..., 0].astype(np.int64) << 16) | (rgb[..., 1].astype(np.int64) << 8) | rgb[..., 2]
    lookup = {(r << 16) | (g << 8) | b: i for i, (r, g, b) in enumerate(SECOND_COLOURS)}
    found = np.unique(code)
    unknown = [int(c) for c in found if int(c) not in lookup]
    if unknown:
        shown = ", ".join(str(((c >> 16) & 255, (c >> 8) & 255, c & 255)) for c in unknown[:3])
        raise RawFormatError(where, f"colour(s) {shown} are not in SECOND's palette of {len(SECOND_COLOURS)} classes")
    classes = np.zeros(code.shape, dtype=np.uint8)
    for value in found:
        classes[code == value] = lookup[int(value)]
    return classes


@dataclass
class SecondCCConfig(BuilderConfig):
    """SECOND-CC has no options."""


class SecondCC(PairBuilder):
    name = "second_cc"
    config_class = SecondCCConfig
    categories = ("change", "no_change")
    prompt_preset = "remote_sensing"
    split_map = {"train": "train", "restval": "train", "val": "validation", "test": "test"}
    required = (CAPTIONS,)
    extra_features = {**MASK_FEATURES, "classes_before": Image(), "classes_after": Image()}
    extra_docs = {"change_mask": "changed pixels: labelled in either phase's semantic map (PNG, 255 = changed)",
                  "change_boxes": "[x0, y0, x1, y1] per 8-connected changed region, pixels",
                  "mask_source": "`annotation`: from the release's semantic maps",
                  "classes_before": "the before phase's semantic map (PNG of class indices: "
                                    + ", ".join(f"{i} {c}" for i, c in enumerate(SECOND_CLASSES)) + ")",
                  "classes_after": "the after phase's semantic map, same classes"}
    card = CardMeta(
        pretty_name="SECOND-CC",
        description=("Bi-temporal aerial image pairs of the SECOND semantic change detection set with five change "
                     "sentences each and each phase's semantic map (six land-cover classes on the changed areas)."),
        license="unknown",
        license_note="SECOND-CC's repository states no licence; the Zenodo record's terms were not verified.",
        homepage="https://github.com/ChangeCapsInRS/SecondCC",
        download="SECOND_CC_dataset from the Google Drive link or Zenodo (doi:10.5281/zenodo.16937571) in the SecondCC README",
        raw_layout=RAW_LAYOUT,
        citation=citations.SECOND_CC,
        size="6,041 in all",
        images_from="Google Drive / Zenodo",
        category_note="`change` where either phase's semantic map labels a pixel, else `no_change`.",
    )

    def check_raw(self) -> None:
        if (self.raw_dir / "SECOND_CC_dataset" / CAPTIONS).is_file():
            self.raw_dir = self.raw_dir / "SECOND_CC_dataset"
        super().check_raw()

    def _records(self) -> list:
        if not hasattr(self, "_images"):
            self._images = read_karpathy(self.raw_dir / CAPTIONS, self.split_map)
        return self._images

    @staticmethod
    def _captions(sentences: Any) -> list[str]:
        if not isinstance(sentences, list) or not sentences:
            raise ValueError("no sentences")
        out = []
        for s in sentences:
            raw, tokens = (s.get("raw"), s.get("tokens")) if isinstance(s, dict) else (None, None)
            if isinstance(raw, str):
                out.append(raw)
            elif isinstance(tokens, list) and all(isinstance(t, str) for t in tokens):
                out.append(" ".join(tokens))
            else:
                raise ValueError("a sentence has neither a 'raw' string nor a list of tokens")
        return out

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path = str(self.raw_dir / CAPTIONS)
        for i, img in enumerate(self._records()):
            if self.split_map[img["split"]] != split:
                continue
            filename = img.get("filename")
            record = f"images[{i}] ({filename})"
            if not isinstance(filename, str) or not filename:
                why = "no filename" if not filename else f"filename must be a string, found {type(filename).__name__}"
                report.skip(split, path, f"images[{i}]", why)
                continue
            try:
                captions = self._captions(img.get("sentences"))
            except ValueError as exc:
                report.skip(split, path, record, str(exc))
                continue
            folder = self.raw_dir / str(img.get("filepath") or {"restval": "train"}.get(img["split"], img["split"]))
            maps = [folder / "sem" / side / filename for side in ("A", "B")]
            missing = [str(m) for m in maps if not m.is_file()]
            if missing:
                report.skip(split, missing[0], record, "no semantic map")
                continue
            try:
                pixels = [load_label(m, self.raw_root(), folder / "rgb" / "A" / filename) for m in maps]
            except LabelError as exc:
                report.skip(split, exc.file, record, str(exc))
                continue
            before, after = (class_map(p, str(m)) for p, m in zip(pixels, maps))
            changed = (before > 0) | (after > 0)
            yield PairRecord(pair_id=filename.rsplit(".", 1)[0], before=folder / "rgb" / "A" / filename,
                             after=folder / "rgb" / "B" / filename, captions=captions,
                             category="change" if changed.any() else "no_change",
                             extra={**mask_columns(changed), "classes_before": png_cell(before), "classes_after": png_cell(after)},
                             source=f"{path}#{record}")

"""MagicBrush (Zhang et al., NeurIPS 2023): manually annotated instruction-guided edits.

Raw release: a local copy of the Hugging Face dataset ``osunlp/MagicBrush`` (``data/train-*``
and ``data/dev-*`` parquet shards; columns ``img_id``, ``turn_index``, ``source_img``,
``mask_img``, ``instruction``, ``target_img``). As an IDC pair: before = source image,
after = target image, caption = the instruction. Edits are multi-turn (the source of turn
t >= 2 is the previous turn's output), so ``pair_id`` is ``<img_id>_<turn_index>``. The
release's editing mask is kept as the ``edit_mask`` column. ``dev`` becomes ``validation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

from datasets import Image, Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.cards import citations
from idc_toolkit.building.hfcopy import edit_pair, find_split_files, image_bytes, iter_rows
from idc_toolkit.building.rawio import check_image_bytes
from idc_toolkit.errors import BadImageError
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord

RELEASE_SPLITS = ("train", "dev", "test")
REQUIRED_COLUMNS = ("img_id", "turn_index", "source_img", "instruction", "target_img")
RAW_LAYOUT = """\
RAW/                                  (a local copy of osunlp/MagicBrush)
  data/train-00000-of-000NN.parquet     columns: img_id, turn_index, source_img, mask_img, instruction, target_img
  data/dev-00000-of-0000N.parquet
"""


@dataclass
class MagicBrushConfig(BuilderConfig):
    """MagicBrush has no options."""


class MagicBrush(PairBuilder):
    name = "magicbrush"
    pair_style = "edit"
    config_class = MagicBrushConfig
    split_map = {"train": "train", "dev": "validation", "test": "test"}
    extra_features = {"img_id": Value("string"), "turn_index": Value("int32"), "edit_mask": Image()}
    extra_docs = {
        "img_id": "the COCO image id of the session",
        "turn_index": "the edit turn (1 = edit of the original photo)",
        "edit_mask": "the release's mask of the region the annotator allowed to change",
    }
    card = CardMeta(
        pretty_name="MagicBrush",
        description=(
            "Real photos (MS COCO) edited turn by turn with DALL-E 2 under human guidance; each turn has "
            "the instruction, the source image, the edited result and the edit region. As IDC pairs: "
            "before = source, after = target, caption = instruction."
        ),
        license="cc-by-4.0",
        license_note="CC BY 4.0, as stated on the osunlp/MagicBrush dataset card.",
        homepage="https://osu-nlp-group.github.io/MagicBrush/",
        download="hf download osunlp/MagicBrush --repo-type dataset --local-dir RAW",
        raw_layout=RAW_LAYOUT,
        citation=citations.MAGICBRUSH,
        size="8,807 / 528 / –",
        images_from="Hugging Face parquet",
        source_datasets=("extended|osunlp/MagicBrush",),  # built from a copy of this Hub dataset
    )

    @cached_property
    def files(self) -> dict[str, list]:
        """The copy's parquet/arrow files per release split, listed once per build."""
        self.unknown_files: list = []
        return find_split_files(self.raw_dir, RELEASE_SPLITS, RAW_LAYOUT, self.unknown_files)

    def summarize(self, report: BuildReport) -> None:
        self.files  # noqa: B018  (lists the copy once, unknown files included)
        for path in self.unknown_files:
            report.note(None, str(path), None, f"file of no known split ({', '.join(RELEASE_SPLITS)}); not read")

    def split_names(self) -> list[str]:
        return [self.split_map[s] for s in self.files]

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        release = self.release_split(split)
        for file, n, row in iter_rows(self.files[release], REQUIRED_COLUMNS):
            record = f"row {n} (img_id {row.get('img_id')}, turn {row.get('turn_index')})"
            try:
                before, after = edit_pair(row, "source_img", "target_img")
            except ValueError as exc:
                report.skip(split, file, record, str(exc))
                continue
            if not isinstance(row.get("instruction"), str):
                report.skip(split, file, record, "instruction missing")
                continue
            mask = image_bytes(row.get("mask_img"))
            if mask:
                try:
                    check_image_bytes(mask)
                except BadImageError as exc:
                    report.skip(split, file, record, f"edit mask (mask_img): {exc}")
                    continue
            yield PairRecord(
                pair_id=f"{row['img_id']}_{row['turn_index']}",
                before=before,
                after=after,
                captions=[row["instruction"]],
                extra={
                    "img_id": str(row["img_id"]),
                    "turn_index": row["turn_index"],
                    "edit_mask": {"bytes": mask, "path": None} if mask else None,
                },
                source=f"{file}#{record}",
            )

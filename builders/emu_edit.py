"""Emu Edit test-set generations (Meta, ``facebook/emu_edit_test_set_generations``).

Raw release: a local copy of the Hugging Face dataset as ``huggingface_hub`` downloads it
(``data/<split>-XXXXX-of-YYYYY.parquet``, or ``<split>/*.parquet``) or as ``datasets``'
``save_to_disk`` writes it. The pair is ``image`` -> ``edited_image``, the caption is the
``instruction`` and the category the ``task``. Images are copied as the parquet's encoded
bytes. The release's split names are kept (``validation``: 3589 rows, ``test``: 2022) and,
because ``idx`` restarts in every split, ``pair_id`` is ``<split>_<idx>`` with ``idx`` kept
as its own column.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Optional

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.cards import citations
from idc_toolkit.building.hfcopy import edit_pair, find_split_files, iter_rows, table_batches
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord, pair_features

#: the task names documented on the Emu Edit dataset card; others found in the data are appended
EMU_TASKS = ("background", "global", "style", "remove", "add", "local", "texture")
RELEASE_SPLITS = ("train", "validation", "test")
REQUIRED_COLUMNS = ("instruction", "image", "edited_image", "task", "idx")

RAW_LAYOUT = """\
RAW/                                    (a local copy of facebook/emu_edit_test_set_generations)
  data/validation-00000-of-0000N.parquet   columns: instruction, image, edited_image, task, idx,
  data/test-00000-of-0000N.parquet                  input_caption, output_caption, hash, model, split
  (or a datasets.save_to_disk folder: dataset_dict.json + <split>/*.arrow)
"""


def find_emu_files(raw_dir: Path, unknown: Optional[list[Path]] = None) -> dict[str, list[Path]]:
    """Parquet (or arrow) files of a local Emu Edit copy, per release split (files of no known
    split go to ``unknown``)."""
    return find_split_files(raw_dir, RELEASE_SPLITS, RAW_LAYOUT, unknown)


def iter_emu_rows(files: list[Path]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    return iter_rows(files, REQUIRED_COLUMNS)


@dataclass
class EmuEditConfig(BuilderConfig):
    """Emu Edit has no options."""


class EmuEdit(PairBuilder):
    name = "emu_edit"
    pair_style = "edit"
    config_class = EmuEditConfig
    split_map = {"train": "train", "validation": "validation", "test": "test"}
    extra_features = {
        "idx": Value("int64"),
        "input_caption": Value("string"),
        "output_caption": Value("string"),
        "hash": Value("string"),
        "model": Value("string"),
    }
    extra_docs = {
        "idx": "the release's row index (restarts in every split)",
        "input_caption": "caption of the input image (release)",
        "output_caption": "caption of the intended output image (release)",
        "hash": "the release's image hash",
        "model": "the editing model that generated `after`",
    }
    card = CardMeta(
        pretty_name="Emu Edit test set generations",
        description=(
            "MagicBrush-derived input images, an editing instruction, and the image Emu Edit generated "
            "for it. As an IDC pair: before = input image, after = edited image, caption = instruction, "
            "category = the edit task."
        ),
        license="cc-by-nc-4.0",
        license_note="CC BY-NC 4.0, as stated on the facebook/emu_edit_test_set_generations dataset card.",
        homepage="https://huggingface.co/datasets/facebook/emu_edit_test_set_generations",
        download="hf download facebook/emu_edit_test_set_generations --repo-type dataset --local-dir RAW",
        raw_layout=RAW_LAYOUT,
        citation=citations.EMU_EDIT,
        size="– / 3,589 / 2,022",
        images_from="Hugging Face parquet",
        source_datasets=("extended|facebook/emu_edit_test_set_generations",),  # built from a copy of this Hub dataset
        category_note="`category` is the release's `task` column; the documented tasks come first, any other value found is appended.",
    )

    @cached_property
    def files(self) -> dict[str, list[Path]]:
        """The copy's parquet/arrow files per release split, listed once per build."""
        self.unknown_files: list[Path] = []
        return find_emu_files(self.raw_dir, self.unknown_files)

    def summarize(self, report: BuildReport) -> None:
        self.files  # noqa: B018  (lists the copy once, unknown files included)
        for path in self.unknown_files:
            report.note(None, str(path), None, f"file of no known split ({', '.join(RELEASE_SPLITS)}); not read")

    def check_raw(self) -> None:
        super().check_raw()
        self.files  # noqa: B018 - fail early when the copy has no files

    def split_names(self) -> list[str]:
        return list(self.files)

    def features(self):
        tasks = list(EMU_TASKS)
        for files in self.files.values():
            for path in files:
                for rows in table_batches(path, columns=["task"]):
                    for row in rows:
                        if isinstance(row["task"], str) and row["task"] not in tasks:
                            tasks.append(row["task"])
        return pair_features(tasks, self.extra_features)

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        for file, n, row in iter_emu_rows(self.files[split]):
            record = f"row {n} (idx {row.get('idx')})"
            try:
                before, after = edit_pair(row, "image", "edited_image")
            except ValueError as exc:
                report.skip(split, file, record, str(exc))
                continue
            if not isinstance(row.get("instruction"), str) or not isinstance(row.get("idx"), int):
                report.skip(split, file, record, "instruction or idx missing")
                continue
            yield PairRecord(
                pair_id=f"{split}_{row['idx']}",
                before=before,
                after=after,
                captions=[row["instruction"]],
                category=row.get("task"),
                extra={k: row.get(k) for k in self.extra_features},
                source=f"{file}#{record}",
            )

"""Syned (Evennou et al., WACV 2025, BLIP2IDC): Emu Edit pairs with paraphrased references.

Raw release: the BLIP2IDC ``code_release/Syned/`` files joined with a local Emu Edit
generations copy (see :mod:`emu_edit`):

* ``instructions_with_idx_train_split.txt``: ``"<idx> <INSTRUCT> <instruction>"`` lines for
  the generations' ``validation`` split (3589 rows, not sorted);
* ``splits.json``: which of those idx are ``train`` (3050) and ``validation`` (539);
* ``instructions_with_idx_test_split.txt``: the same for the generations' ``test`` split (2022);
* ``gt_augmented_test_clean.json``: LLM paraphrases per test idx, keyed ``"<idx> "`` (trailing
  space), some wrapped in literal quotes, some empty, a few lists empty.

Test references are the instruction followed by its cleaned paraphrases (surrounding quotes
and whitespace stripped, empty strings dropped; every change is in the report), which is what
BLIP2IDC's evaluation compares against. Train/validation references are the instruction alone:
the Syned synthetic edits themselves are not part of the public release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord
from idc_toolkit.text import strip_surrounding_quotes

from idc_toolkit.building.hfcopy import edit_pair

from .emu_edit import EmuEdit, iter_emu_rows

TRAIN_TXT = "instructions_with_idx_train_split.txt"
TEST_TXT = "instructions_with_idx_test_split.txt"
PARAPHRASES = "gt_augmented_test_clean.json"
SPLITS = "splits.json"

RAW_LAYOUT = f"""\
RAW/
  {TRAIN_TXT}    "<idx> <INSTRUCT> <instruction>" per line (generations 'validation')
  {TEST_TXT}     the same for generations 'test'
  {SPLITS}                                {{"train": [idx, ...], "validation": [idx, ...]}}
  {PARAPHRASES}              {{"<idx> ": ["paraphrase", ...], ...}}
  emu_edit/                                  a local copy of facebook/emu_edit_test_set_generations
"""


def parse_instruction_file(path) -> dict[int, str]:
    """``{idx: raw instruction text}`` from a Syned instruction file."""
    out: dict[int, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        head, sep, text = line.partition("<INSTRUCT>")
        if not sep or not head.strip().isdigit():
            raise RawFormatError(path, f"line {lineno}: expected '<idx> <INSTRUCT> <instruction>', got {line[:60]!r}")
        out[int(head.strip())] = text
    return out


def clean_paraphrase(text: str) -> str:
    """Strip surrounding whitespace and literal surrounding double quotes (repeatedly)."""
    return strip_surrounding_quotes(text, '"')


@dataclass
class SynedConfig(BuilderConfig):
    """``emu_dir``: the folder (relative to RAW) holding the Emu Edit generations copy."""

    emu_dir: str = "emu_edit"


class Syned(PairBuilder):
    name = "syned"
    pair_style = "edit"
    config_class = SynedConfig
    split_map = {"train": "train", "validation": "validation", "test": "test"}
    required = (TRAIN_TXT, TEST_TXT, SPLITS, PARAPHRASES)
    categories = None  # set from the Emu Edit copy in features()
    extra_features = {"idx": Value("int64"), "instruction": Value("string")}
    extra_docs = {
        "idx": "the idx in the Syned instruction file (= the Emu Edit generations row idx)",
        "instruction": "the editing instruction, stripped of surrounding whitespace",
    }
    card = CardMeta(
        pretty_name="Syned (BLIP2IDC evaluation references on Emu Edit)",
        description=(
            "The Syned release of BLIP2IDC: Emu Edit generation pairs (before = input image, after = "
            "edited image) with the authors' train/validation split and, for the test split, references "
            "made of the instruction plus Llama-2 paraphrases of it. The synthetic training edits of the "
            "paper are not publicly released; `idc-augment` recreates that recipe."
        ),
        license="cc-by-nc-4.0",
        license_note=(
            "CC BY-NC 4.0 (the Gevennou/Syned card; derived from the Emu Edit generations, CC BY-NC 4.0). "
            "The BLIP2IDC repository code is MIT."
        ),
        homepage="https://github.com/gautierevn/BLIP2IDC",
        download=(
            "code_release/Syned/ of gautierevn/BLIP2IDC, plus facebook/emu_edit_test_set_generations "
            "downloaded into RAW/emu_edit/"
        ),
        raw_layout=RAW_LAYOUT,
        citation=citations.SYNED,
        size="3,050 / 539 / 2,022",
        images_from="Emu Edit's Hugging Face parquet",
        source_datasets=("extended|facebook/emu_edit_test_set_generations",),  # built from a copy of this Hub dataset
        category_note="`category` is the Emu Edit `task` of the row.",
    )

    def check_raw(self) -> None:
        super().check_raw()
        self._emu = EmuEdit(self.raw_dir / self.config.emu_dir)
        self._emu.check_raw()

    def features(self):
        base = self._emu.features() if hasattr(self, "_emu") else EmuEdit(self.raw_dir / self.config.emu_dir).features()
        feats = dict(base)
        for name in EmuEdit.extra_features:
            feats.pop(name, None)
        feats.update(self.extra_features)
        from datasets import Features

        return Features(feats)

    def _annotations(self):
        if not hasattr(self, "_ann"):
            splits_path = self.raw_dir / SPLITS
            splits = read_json(splits_path)
            if not isinstance(splits, dict) or set(splits) - {"train", "validation"}:
                raise RawFormatError(splits_path, f"expected keys 'train' and 'validation', found {sorted(splits) if isinstance(splits, dict) else type(splits).__name__}")
            split_of = {int(i): s for s, ids in splits.items() for i in ids}
            self._ann = (
                parse_instruction_file(self.raw_dir / TRAIN_TXT),
                parse_instruction_file(self.raw_dir / TEST_TXT),
                split_of,
                read_json(self.raw_dir / PARAPHRASES),
            )
        return self._ann

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        train_txt, test_txt, split_of, paraphrases = self._annotations()
        emu_split = "test" if split == "test" else "validation"
        instructions = test_txt if split == "test" else train_txt
        txt_file = str(self.raw_dir / (TEST_TXT if split == "test" else TRAIN_TXT))
        files = self._emu.files
        if emu_split not in files:
            raise RawFormatError(self._emu.raw_dir, f"the Emu Edit copy has no {emu_split!r} split")
        for file, n, row in iter_emu_rows(files[emu_split]):
            idx = row.get("idx")
            if split != "test" and split_of.get(idx) != split:
                continue
            record = f"idx {idx}"
            if idx not in instructions:
                report.skip(split, txt_file, record, "Emu Edit row has no Syned instruction line")
                continue
            raw = instructions[idx]
            instruction = raw.strip()
            if raw != " " + instruction:  # the release writes "<idx> <INSTRUCT> <instruction>"
                report.repair(split, txt_file, record, "surrounding whitespace stripped from the instruction")
            if isinstance(row.get("instruction"), str) and row["instruction"].strip() != instruction:
                report.note(split, txt_file, record, "instruction differs from the Emu Edit row's instruction")
            captions = [instruction]
            if split == "test":
                key = f"{idx} "
                variants = paraphrases.get(key)
                if variants is None:
                    report.note(split, str(self.raw_dir / PARAPHRASES), repr(key), "no paraphrase entry: instruction only")
                    variants = []
                elif not variants:
                    report.note(split, str(self.raw_dir / PARAPHRASES), repr(key), "empty paraphrase list: instruction only")
                for j, text in enumerate(variants):
                    if not isinstance(text, str):
                        report.repair(split, str(self.raw_dir / PARAPHRASES), f"{key!r}[{j}]", "non-string paraphrase dropped")
                        continue
                    cleaned = clean_paraphrase(text)
                    if not cleaned:
                        report.repair(split, str(self.raw_dir / PARAPHRASES), f"{key!r}[{j}]", "empty paraphrase dropped")
                        continue
                    if cleaned != text:
                        report.repair(split, str(self.raw_dir / PARAPHRASES), f"{key!r}[{j}]", "quotes/whitespace stripped")
                    captions.append(cleaned)
            try:
                before, after = edit_pair(row, "image", "edited_image")
            except ValueError as exc:
                report.skip(split, file, record, str(exc))
                continue
            yield PairRecord(
                pair_id=f"{split}_{idx}",
                before=before,
                after=after,
                captions=captions,
                category=row.get("task"),
                extra={"idx": idx, "instruction": instruction},
                source=f"{file}#row {n}",
            )

    def summarize(self, report: BuildReport) -> None:
        train_txt, test_txt, split_of, _ = self._annotations()
        report.count("train_file_idx_without_split", len(set(train_txt) - set(split_of)))

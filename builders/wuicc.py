"""WUICC (Web UI Image Change Captioning, 2026): screenshots of a web page before and after one UI
edit, with one sentence describing the change.

Raw release (the Hugging Face dataset ``zhangsan11111122/WUICC``; its data card is the only
description of the layout): ``train/``, ``val/`` and ``test/``, each a flat folder in which every
sample ``name`` is five files: ``name.png`` (before), ``name_1.png`` (after), ``name.txt`` (the
caption), ``name.html`` (the before page's HTML) and ``name_1.html`` (the after page's). A sample
is a caption file; its pair id is ``<split folder>/<name>``. The caption is the file's one line
without its line break (a second line stops the build, naming the file and line); the two HTML
files are kept as released in ``before_html`` / ``after_html`` (null, and noted, where missing).

A non-meaningful edit is captioned with one of a fixed set of "no change" phrases; the card gives
two, ``There is no difference.`` and ``No change to mention.``, and does not list the rest. A pair
whose caption, stripped of surrounding whitespace, is one of ``no_change_phrases`` is ``no_change``,
any other ``change``; every other caption shared by several pairs is noted in the build report,
so a phrase of the set missing from the option is seen rather than read as a change.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, list_images
from idc_toolkit.building.rawio import read_raw_text
from idc_toolkit.building.report import BuildReport
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

#: the "no change" phrases the data card of zhangsan11111122/WUICC quotes ("Data Fields": "e.g.")
CARD_NO_CHANGE_PHRASES = ("There is no difference.", "No change to mention.")
SPLIT_FOLDERS = ("train", "val", "test")
RAW_LAYOUT = """\
RAW/                      (a local copy of zhangsan11111122/WUICC)
  train/name.png          before (baseline) screenshot
  train/name_1.png        after (candidate) screenshot
  train/name.txt          one sentence describing the change (or a fixed "no change" phrase)
  train/name.html         the before page's HTML
  train/name_1.html       the after page's HTML
  val/..., test/...       the same, flat
"""
CITATION = """@misc{wuicc2026,
  title         = {Beyond Pixel Diffs: Benchmarking Image Change Captioning for Web {UI} Visual Regression Testing},
  author        = {Le, Bach and Zhang, Licheng and Akhtar, Naveed and Zhao, Pengtao},
  year          = {2026},
  eprint        = {2607.01728},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CV}
}"""


def caption_of(path: Path) -> str:
    """The one line of a caption file, without its line break; RawFormatError naming a second line."""
    lines = re.split(r"\r\n|\r|\n", read_raw_text(path, "caption file"))
    while len(lines) > 1 and lines[-1] == "":  # the file's closing line break(s)
        lines.pop()
    if len(lines) > 1:
        raise RawFormatError(path, f"a second line ({lines[1][:60]!r}): a WUICC caption file holds one sentence",
                             "line 2")
    return lines[0]


@dataclass
class WUICCConfig(BuilderConfig):
    """``no_change_phrases``: the captions that mark a no-change pair, separated by ``|`` (default: the
    two the data card quotes; the card does not list the whole set)."""

    no_change_phrases: str = "|".join(CARD_NO_CHANGE_PHRASES)


class WUICC(PairBuilder):
    name = "wuicc"
    config_class = WUICCConfig
    categories = ("change", "no_change")
    split_map = {"train": "train", "val": "validation", "test": "test"}
    extra_features = {"before_html": Value("string"), "after_html": Value("string")}
    extra_docs = {"before_html": "the before page's HTML (`name.html`), as released",
                  "after_html": "the after page's HTML (`name_1.html`), as released"}
    card = CardMeta(
        pretty_name="WUICC",
        description=("Screenshots of synthetic web pages (from WebSight) before and after exactly one UI edit made by "
                     "a language model, with one sentence describing the change; non-meaningful edits (small shifts, "
                     "spacing, minor colour or font changes) are captioned with a fixed \"no change\" phrase and are "
                     "the `no_change` category. The before and after HTML are kept beside the images."),
        license="cc-by-4.0",
        license_note="The Hugging Face repository zhangsan11111122/WUICC is marked CC BY 4.0; its pages derive from "
                     "WebSight (HuggingFaceM4/WebSight, CC BY 4.0).",
        homepage="https://huggingface.co/datasets/zhangsan11111122/WUICC",
        download="hf download zhangsan11111122/WUICC --repo-type dataset --local-dir RAW",
        raw_layout=RAW_LAYOUT,
        citation=CITATION,
        size="6,963 / 982 / 1,961",
        images_from="Hugging Face (flat split folders)",
        source_datasets=("extended|zhangsan11111122/WUICC",),
        category_note=("`no_change` where the caption is one of the build's `no_change_phrases` (default: the two the "
                       "data card quotes, \"There is no difference.\" and \"No change to mention.\"), else `change`."),
    )

    def __init__(self, raw_dir, config=None):
        super().__init__(raw_dir, config)
        self.phrases = frozenset(p.strip() for p in self.config.no_change_phrases.split("|") if p.strip())
        if not self.phrases:
            raise RawFormatError(self.raw_dir, "no_change_phrases names no phrase (phrases are separated by |)")
        self._captions: dict[str, Counter] = {}  # split -> captions of its `change` pairs
        self._first: dict[str, str] = {}

    def folders(self) -> dict[str, Path]:
        return {s: self.raw_dir / s for s in SPLIT_FOLDERS if (self.raw_dir / s).is_dir()}

    def check_raw(self) -> None:
        super().check_raw()
        if not self.folders():
            packed = sorted(p.name for p in self.raw_dir.iterdir() if p.name.split(".")[0] in SPLIT_FOLDERS)
            hint = f" (found {', '.join(packed)}: unpack them into folders of those names)" if packed else ""
            raise RawFormatError(self.raw_dir, f"not a {self.name} raw release: no train/, val/ or test/ folder{hint}. "
                                               f"Expected layout:\n{RAW_LAYOUT}")

    def raw_files(self) -> list[str]:
        return [f"{s}/*.txt" for s in self.folders()]

    def _html(self, path: Path, column: str, split: str, pair_id: str, report: BuildReport) -> str | None:
        if not path.is_file():
            report.note(split, str(path), pair_id, f"HTML file not found: {column} left empty")
            return None
        return read_raw_text(path, "HTML file")

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        folder = self.folders().get(self.release_split(split))
        if folder is None:
            return
        counts = self._captions[split] = Counter()
        for txt in sorted(folder.glob("*.txt")):
            name, pair_id = txt.stem, f"{folder.name}/{txt.stem}"
            caption = caption_of(txt)
            key = caption.strip()
            no_change = key in self.phrases
            if not no_change:
                counts[key] += 1
                self._first.setdefault(key, str(txt))
            yield PairRecord(pair_id=pair_id, before=folder / f"{name}.png", after=folder / f"{name}_1.png",
                             captions=[caption], category="no_change" if no_change else "change",
                             extra={column: self._html(folder / f"{stem}.html", column, split, pair_id, report)
                                    for column, stem in (("before_html", name), ("after_html", f"{name}_1"))},
                             source=str(txt))

    def summarize(self, report: BuildReport) -> None:
        for caption, n in sum(self._captions.values(), Counter()).most_common():
            if n < 2:
                break
            report.note(None, self._first[caption], None,
                        f"caption {caption!r} is shared by {n} pairs marked `change`: if it is one of the release's "
                        "\"no change\" phrases, add it to no_change_phrases")
        used = set()
        for split, folder in self.folders().items():
            for txt in folder.glob("*.txt"):
                used |= {(split, f"{txt.stem}.png"), (split, f"{txt.stem}_1.png")}
        report.count("images_without_annotation", sum(
            1 for split, folder in self.folders().items() for n in list_images(folder)
            if n.lower().endswith(".png") and (split, n) not in used))

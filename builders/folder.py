"""Any folder of image pairs: the user's own photographs as a dataset in the toolkit's schema.

The before and after images are two folders holding the same file names (``before/`` and
``after/``, or ``A/`` and ``B/`` as the change-detection releases name them). Captions are
optional (without them the dataset is for inference: every pair in one split, no reference): a
CSV (one reference per row: ``image``, ``caption``; optional ``category`` and ``split``), JSON
Lines (one pair per line: ``image``, ``captions`` or ``caption``, optional ``category`` and
``split``) or a Karpathy-style JSON (``{"images": [{"filename", "split", "sentences": [{"raw"}]}]}``).
An optional ``label/`` folder holds ground-truth change masks under the same names (or the same
stem with ``.png``): non-zero = changed (channel 0 of a colour label, as LEVIR-CD and LEVIR-MCI
write theirs). They become ``idc-precompute masks``' columns with ``mask_source: annotation``; a
label that is not a lossless image of its pair's size, or resolves outside RAW, skips its pair.
``captions.csv`` is read by the csv module's strict mode, and every malformed row (a stray quote
merging rows, more fields than the header) is named with its line number; caption files are
UTF-8 (a UTF-8 byte-order mark is fine; UTF-16, UTF-32 and other encodings are named). A pair
whose after image differs from its before image only in the case of its name is skipped, saying so.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Container, Iterator, Optional

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.rawio import parse_json, read_karpathy, read_raw_text
from idc_toolkit.building.report import BuildReport
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import MASK_FEATURES, PairRecord, pair_features

RAW_LAYOUT = """\
RAW/
  before/<name>   after/<name>      (or A/<name>  B/<name>): the same file names in both
  captions.csv    image,caption[,category][,split]        one reference per row   (optional:
  captions.jsonl  {"image", "captions" | "caption", ...}  one pair per line        one of the
  captions.json   {"images": [{"filename", "split", "sentences": [{"raw"}]}]}      three)
  label/<name>    optional ground-truth change mask (non-zero = changed)
"""

#: the caption files looked for in RAW, in this order (``captions=`` names another)
CAPTION_FILES = ("captions.csv", "captions.jsonl", "captions.json")
#: a split as users write it -> the toolkit's split
SPLITS = {"train": "train", "restval": "train", "val": "validation", "validation": "validation", "test": "test"}


@dataclass
class FolderConfig(BuilderConfig):
    """``captions``: the caption file (default: the first of ``CAPTION_FILES`` in RAW; ``none``:
    build without references); ``split``: the split of pairs whose file gives none;
    ``pair_style``: ``scene`` (two photographs of one scene) or ``edit`` (an image and its edit)."""

    captions: str = ""
    split: str = "test"
    pair_style: str = "scene"


class FolderOfPairs(PairBuilder):
    name = "folder"
    config_class = FolderConfig
    card = CardMeta(
        pretty_name="Image pairs from a folder",
        description="Before and after images from a folder of the user's own pairs, with the captions given beside them.",
        license="unknown",
        license_note="The images and captions are the user's own; their terms are the user's to state.",
        homepage="(none: the user's own pairs)",
        download="(the user's own folder)",
        raw_layout=RAW_LAYOUT,
        citation="",
        size="yours",
        images_from="your folder",
    )

    def __init__(self, raw_dir: Path | str, config: Optional[BuilderConfig] = None):
        super().__init__(raw_dir, config)
        if self.config.split not in SPLITS:
            raise RawFormatError(self.raw_dir, f"split={self.config.split!r}: choose one of {', '.join(SPLITS)}")
        if self.config.pair_style not in ("scene", "edit"):
            raise RawFormatError(self.raw_dir, f"pair_style={self.config.pair_style!r}: choose scene or edit")
        self.pair_style = self.config.pair_style

    # -- the layout -----------------------------------------------------------------------
    def _folders(self) -> tuple[Path, Path]:
        for before, after in (("before", "after"), ("A", "B")):
            if (self.raw_dir / before).is_dir() and (self.raw_dir / after).is_dir():
                return self.raw_dir / before, self.raw_dir / after
        raise RawFormatError(self.raw_dir, f"no before/ + after/ (or A/ + B/) folders. Expected layout:\n{RAW_LAYOUT}")

    def _caption_file(self) -> Optional[Path]:
        if self.config.captions == "none":
            return None
        if self.config.captions:
            path = Path(self.config.captions)
            path = path if path.is_absolute() else self.raw_dir / path
            if not path.is_file():
                raise RawFormatError(path, "caption file not found")
            return path
        return next((self.raw_dir / n for n in CAPTION_FILES if (self.raw_dir / n).is_file()), None)

    def check_raw(self) -> None:
        if not self.raw_dir.is_dir():
            raise RawFormatError(self.raw_dir, "folder not found")
        self._folders()
        self._rows()

    def raw_files(self) -> list[str]:
        path = self._caption_file()
        return [str(path.relative_to(self.raw_dir)) if path.is_relative_to(self.raw_dir) else str(path)] if path else []

    # -- the annotations ------------------------------------------------------------------
    def _rows(self) -> list[dict[str, Any]]:
        """One ``{image, captions, category, split, record}`` per pair, in file order."""
        if hasattr(self, "_cached"):
            return self._cached
        path = self._caption_file()
        before, after = self._folders()
        if path is None:
            names = sorted(p.name for p in before.iterdir() if p.is_file() and not p.name.startswith("."))
            rows = [{"image": n, "captions": [], "category": None, "split": self.config.split, "record": n} for n in names]
        elif path.suffix == ".csv":
            rows = _csv_rows(path, {p.name for p in before.iterdir()})
        elif path.suffix == ".jsonl":
            rows = _jsonl_rows(path)
        else:
            rows = _karpathy_rows(path)
        for row in rows:
            row["split"] = row.get("split") or self.config.split
            if row["split"] not in SPLITS:
                raise RawFormatError(path, f"unknown split {row['split']!r}; expected one of {', '.join(SPLITS)}", row["record"])
            row["split"] = SPLITS[row["split"]]
        self._cached = rows
        return rows

    def split_names(self) -> list[str]:
        found = {r["split"] for r in self._rows()}
        return [s for s in ("train", "validation", "test") if s in found]

    def release_split(self, split: str) -> str:
        return split

    def features(self):
        names = list(dict.fromkeys(r["category"] for r in self._rows() if r["category"]))
        return pair_features(names or None, {**self.extra_features, **(MASK_FEATURES if self._labels() else {})})

    def _labels(self) -> Optional[Path]:
        folder = self.raw_dir / "label"
        return folder if folder.is_dir() else None

    def _label_columns(self, name: str, split: str, report: BuildReport) -> dict[str, Any]:
        """The ground-truth mask columns of one pair (all None where its label is missing);
        :class:`~idc_toolkit.building.labels.LabelError` where its label is refused."""
        from idc_toolkit.building.labels import first_channel, load_label, mask_columns

        folder = self._labels()
        path = next((p for p in (folder / name, folder / f"{Path(name).stem}.png") if p.is_file()), None)
        if path is None:
            report.note(split, str(folder), name, "no label: its mask columns are empty")
            return {k: None for k in MASK_FEATURES}
        before, _ = self._folders()
        return mask_columns(first_channel(load_label(path, self.raw_root(), before / name)) > 0)

    def _case_twin(self, folder: Path, name: str) -> Optional[str]:
        """The file of ``folder`` whose name differs from ``name`` only in case, where ``name`` itself
        is absent (a case-sensitive file system tells them apart)."""
        if (folder / name).is_file():
            return None
        if not hasattr(self, "_by_case"):
            self._by_case: dict[Path, dict[str, str]] = {}
        if folder not in self._by_case:
            self._by_case[folder] = {p.name.lower(): p.name for p in folder.iterdir() if p.is_file()}
        return self._by_case[folder].get(name.lower())

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        from idc_toolkit.building.labels import LabelError

        before, after = self._folders()
        source = self._caption_file() or before
        for row in self._rows():
            if row["split"] != split:
                continue
            name = row["image"]
            twin = self._case_twin(before, name) if source != before else None
            if twin is not None:
                report.skip(split, str(source), row["record"], f"{before.name}/{twin} differs from {name} ({source.name} "
                                                               "names it) only in case")
                continue
            if not (after / name).is_file():
                twin = self._case_twin(after, name)
                report.skip(split, str(source), row["record"], f"{after / name} does not exist" if twin is None else
                            f"{after.name}/{twin} differs from {before.name}/{name} only in case")
                continue
            try:
                extra = self._label_columns(name, split, report) if self._labels() else {}
            except LabelError as exc:
                report.skip(split, exc.file, row["record"], str(exc))
                continue
            yield PairRecord(pair_id=Path(name).stem, before=before / name, after=after / name, captions=row["captions"],
                             category=row["category"], source=f"{source}#{row['record']}", extra=extra)

    def summarize(self, report: BuildReport) -> None:
        before, _ = self._folders()
        used = {r["image"] for r in self._rows()}
        report.count("images_without_annotation", sum(1 for p in before.iterdir() if p.is_file() and p.name not in used))


def _text(value: Any, path: Path, record: str, what: str) -> str:
    if not isinstance(value, str):
        raise RawFormatError(path, f"{what} must be a string, found {type(value).__name__}", record)
    return value


#: malformed rows named in one error, at most
SHOWN_ROWS = 20


def _csv_rows(path: Path, names: Container[str] = ()) -> list[dict[str, Any]]:
    """The pairs of a ``captions.csv``, read by the csv module's strict mode: a row it cannot
    parse, a row of more fields than the header (an unquoted comma in a caption) and a quoted
    caption that runs over a line starting with one of ``names`` (a stray quote merging rows) are
    all named, with their line numbers, in one error."""
    reader = csv.reader(io.StringIO(read_raw_text(path, "caption file"), newline=""), strict=True)
    try:
        header = next(reader, [])
    except csv.Error as exc:
        raise RawFormatError(path, f"malformed CSV header: {exc}", "line 1") from None
    missing = {"image", "caption"} - set(header)
    if missing:
        raise RawFormatError(path, f"the header lacks {', '.join(sorted(missing))}; columns: image,caption[,category][,split]")
    by_image: dict[str, dict[str, Any]] = {}
    malformed: list[str] = []
    start = reader.line_num + 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            runs = f" (the row runs to line {reader.line_num}: a stray quote?)" if reader.line_num > start else ""
            malformed.append(f"line {start}: {exc}{runs}")
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not fields:
            continue
        if len(fields) > len(header):
            malformed.append(f"line {line}: {len(fields)} fields where the header has {len(header)} "
                             "(quote a caption that holds a comma)")
            continue
        merged = [ln for f in fields for ln in f.splitlines()[1:] if ln.split(",", 1)[0].strip() in names]
        if merged:
            malformed.append(f"line {line}: a quoted field runs to line {start - 1} over the row {merged[0][:40]!r} "
                             "(a stray quote?)")
            continue
        rec = dict(zip(header, fields))
        record = f"line {line}"
        image = (rec.get("image") or "").strip()
        if not image:
            raise RawFormatError(path, "no image name", record)
        row = by_image.setdefault(image, {"image": image, "captions": [], "category": rec.get("category") or None,
                                          "split": rec.get("split") or None, "record": record})
        for key in ("category", "split"):
            if (rec.get(key) or None) != row[key]:
                raise RawFormatError(path, f"{image}: {key} {rec.get(key)!r} differs from {row[key]!r} on an earlier line", record)
        row["captions"].append(rec.get("caption") or "")
    if malformed:
        more = f"; ... ({len(malformed)} in all)" if len(malformed) > SHOWN_ROWS else ""
        raise RawFormatError(path, f"{len(malformed)} malformed CSV row{'s' if len(malformed) > 1 else ''}: "
                                   + "; ".join(malformed[:SHOWN_ROWS]) + more)
    return list(by_image.values())


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line, text in enumerate(read_raw_text(path, "caption file").splitlines(), start=1):
        if not text.strip():
            continue
        record = f"line {line}"
        try:
            item = parse_json(text)
        except json.JSONDecodeError as exc:
            raise RawFormatError(path, f"not JSON: {exc.msg}", record) from None
        except ValueError as exc:
            raise RawFormatError(path, str(exc), record) from None
        if not isinstance(item, dict):
            raise RawFormatError(path, f"expected an object, found {type(item).__name__}", record)
        captions = item.get("captions", [item["caption"]] if "caption" in item else [])
        if not isinstance(captions, list):
            raise RawFormatError(path, "captions must be a list of strings", record)
        rows.append({"image": _text(item.get("image"), path, record, "image"),
                     "captions": [_text(c, path, record, "a caption") for c in captions],
                     "category": item.get("category") or None, "split": item.get("split") or None, "record": record})
    return rows


def _karpathy_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for i, img in enumerate(read_karpathy(path)):
        record = f"images[{i}]"
        if not isinstance(img, dict):
            raise RawFormatError(path, "expected an object", record)
        sentences = img.get("sentences") or []
        raws = [s.get("raw") if isinstance(s, dict) else None for s in sentences]
        rows.append({"image": _text(img.get("filename"), path, record, "filename"),
                     "captions": [_text(r, path, record, "a sentence's raw") for r in raws],
                     "category": img.get("category") or None, "split": img.get("split") or None, "record": record})
    return rows

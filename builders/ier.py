"""Image Editing Request (Tan et al., ACL 2019, "Expressing Visual Relationships via Language").

Raw release: ``{train,valid,test}.json`` (lists of ``{"img0", "img1", "sents", "uid"}``; the
repository keeps them at ``dataset/adobe/``) and the image pairs in ``images/`` beside them.
One row per ``uid`` (3061 / 383 / 495). File suffixes are mixed (jpg, JPG, jpeg, png, gif)
and images are read by content. The same image pair can occur under several uids (each with
its own sentences) and a few pairs occur in two splits (55 between valid and test): every
uid is kept, as the field evaluates per uid, and each such pair is noted in the report.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder, caption_list, list_images
from idc_toolkit.cards import citations
from idc_toolkit.errors import RawFormatError
from idc_toolkit.building.rawio import read_json
from idc_toolkit.building.report import BuildReport
from idc_toolkit.schema import PairRecord

RAW_LAYOUT = """\
RAW/
  train.json    [{"img0": "...jpg", "img1": "...jpg", "sents": ["..."], "uid": "Reddit_1052"}, ...]
  valid.json
  test.json
  images/<img0>, images/<img1>     (flat folder, mixed jpg/png/gif)
"""


@dataclass
class IERConfig(BuilderConfig):
    """IER has no options: one row per uid, as the release and its evaluation define pairs."""


class ImageEditingRequest(PairBuilder):
    name = "ier"
    pair_style = "edit"
    train_reference = "shortest"  # BLIP2IDC's code trains IER on each pair's shortest reference
    config_class = IERConfig
    split_map = {"train": "train", "valid": "validation", "test": "test"}
    required = ("train.json", "valid.json", "test.json", "images")
    extra_features = {"img0": Value("string"), "img1": Value("string")}
    extra_docs = {"img0": "file name of the before image in the release", "img1": "file name of the after image"}
    card = CardMeta(
        pretty_name="Image Editing Request (IER)",
        description=(
            "Photo pairs from Reddit and Zhopped edit requests: the original photo, the edited result "
            "and the editing request(s) that describe the change (one sentence per training pair, "
            "three for validation and test). One row per `uid`."
        ),
        license="unknown",
        license_note="The VisualRelationships repository (airsplay/VisualRelationships) states no licence.",
        homepage="https://github.com/airsplay/VisualRelationships",
        download=(
            "annotations: dataset/adobe/{train,valid,test}.json in airsplay/VisualRelationships; images: "
            "the Google Drive folder named in its README (mirror: archive.org/details/image-editing-dataset)"
        ),
        raw_layout=RAW_LAYOUT,
        citation=citations.IER,
        size="3,061 / 383 / 495",
        images_from="the release's image zip",
    )

    def _items(self, split: str) -> tuple[str, list]:
        release = self.release_split(split)
        path = self.raw_dir / f"{release}.json"
        items = read_json(path)
        if not isinstance(items, list):
            raise RawFormatError(path, f"expected a list of {{img0, img1, sents, uid}} items, found {type(items).__name__}")
        return str(path), items

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        path, items = self._items(split)
        images = self.raw_dir / "images"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                report.skip(split, path, f"item {i}", "not an object")
                continue
            uid = item.get("uid")
            record = f"item {i} (uid {uid})"
            missing = [k for k in ("img0", "img1", "uid") if not isinstance(item.get(k), str) or not item.get(k)]
            if missing:
                report.skip(split, path, record, f"missing or non-string field(s): {', '.join(missing)}")
                continue
            try:
                sents = caption_list(item.get("sents"))
            except ValueError as exc:
                report.skip(split, path, record, str(exc))
                continue
            yield PairRecord(
                pair_id=uid,
                before=images / item["img0"],
                after=images / item["img1"],
                captions=sents,
                extra={"img0": item["img0"], "img1": item["img1"]},
                source=f"{path}#{record}",
            )

    def summarize(self, report: BuildReport) -> None:
        uids_by_pair: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        referenced: set[str] = set()
        files: dict[str, str] = {}
        for split in self.split_names():
            path, items = self._items(split)
            files[split] = path
            for it in items:
                if isinstance(it, dict) and isinstance(it.get("img0"), str) and isinstance(it.get("img1"), str):
                    uids_by_pair[(it["img0"], it["img1"])][split].append(str(it.get("uid")))
                    referenced.update((it["img0"], it["img1"]))
        repeated = cross = 0
        for (img0, img1), per_split in uids_by_pair.items():
            for split, uids in per_split.items():
                if len(uids) > 1:
                    repeated += 1
                    report.note(split, files[split], "uids " + ",".join(uids), f"pair ({img0}, {img1}) repeats under {len(uids)} uids")
            if len(per_split) > 1:
                cross += 1
                where = "; ".join(f"{s}: {','.join(u)}" for s, u in per_split.items())
                report.note(None, ", ".join(files[s] for s in per_split), where, f"pair ({img0}, {img1}) occurs in {len(per_split)} splits")
        report.count("pairs_repeated_under_several_uids", repeated)
        report.count("pairs_shared_between_splits", cross)
        report.count("images_without_annotation", len(list_images(self.raw_dir / "images") - referenced))
        self.note_unread_files(report, self.raw_dir, "*.json")

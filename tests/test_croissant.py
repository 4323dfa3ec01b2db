"""``croissant.json`` beside every dataset folder the toolkit writes: mlcroissant validates it and
reads from it the rows ``datasets.load_dataset`` reads (a build in several shards per split, a
folder of pairs, and a dataset with change masks added); the RAI fields the toolkit does not know
are the literal ``"unknown"``; it is written without mlcroissant and the same at every write."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

mlc = pytest.importorskip("mlcroissant", reason="mlcroissant (the test extra) validates croissant.json")
pytestmark = [  # mlcroissant's own dependencies deprecating what it calls
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index"),
]

#: what the toolkit cannot know and does not invent: no publication date, no dataset version
ALWAYS_WARNED = {"https://schema.org/datePublished", "https://schema.org/version"}


def _validated(folder: Path):
    """mlcroissant's dataset of ``folder/croissant.json``: no error (it raises on one), and the
    properties it warns about."""
    ds = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    issues = ds.metadata.ctx.issues
    assert not issues.errors, issues.report()
    warned = {w.split('Property "')[1].split('"')[0] for w in map(str, issues.warnings) if 'Property "' in w}
    assert len(warned) == len(issues.warnings), issues.report()  # every warning is a missing recommended property
    return ds, warned


def _image_matches(cell: dict, img: Image.Image) -> None:
    """mlcroissant yields the image PIL opened from the parquet cell's bytes: the same bytes
    (while PIL still holds them) and the same pixels as the cell datasets reads."""
    raw = cell["bytes"]
    fp = getattr(img, "fp", None)
    if hasattr(fp, "getvalue"):
        assert hashlib.sha256(fp.getvalue()).hexdigest() == hashlib.sha256(raw).hexdigest()
    with Image.open(io.BytesIO(raw)) as ref:
        assert img.format == ref.format and img.size == ref.size and img.mode == ref.mode
        assert np.array_equal(np.asarray(img), np.asarray(ref))


def _same_rows(folder: Path, ds, image_rows: int = 3) -> dict:
    """Every split's records from croissant.json against ``load_dataset(folder)``: pair ids and
    captions in order, category names through the ClassLabel enumeration, every other plain
    column, and the images of the first ``image_rows`` rows of each split."""
    from datasets import ClassLabel, Image as ImageFeature, load_dataset

    loaded = load_dataset(str(folder))
    records: dict[str, list[dict]] = {}
    for rec in ds.records("default"):
        records.setdefault(rec["default/split"].decode(), []).append(rec)
    assert sorted(records) == sorted(loaded)
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    for split, hf in loaded.items():
        rows = records[split]
        assert [text(r["default/pair_id"]) for r in rows] == hf["pair_id"]
        assert [[text(c) for c in r["default/captions"]] for r in rows] == hf["captions"]
        features = hf.features
        if isinstance(features.get("category"), ClassLabel):
            names = {r["category_names/index"]: text(r["category_names/name"]) for r in ds.records("category_names")}
            assert [names[r["default/category"]] for r in rows] == [features["category"].int2str(c) for c in hf["category"]]
        raw = hf.cast_column("before", ImageFeature(decode=False))
        images = [c for c, f in features.items() if isinstance(f, ImageFeature)]
        for name in images:
            raw = raw.cast_column(name, ImageFeature(decode=False))
        for k in range(min(image_rows, len(hf))):
            for name in images:
                if raw[k][name] is not None:
                    _image_matches(raw[k][name], rows[k][f"default/{name}"])
        for name in (c for c in features if c not in ("pair_id", "captions", "category", *images)):
            got = [r[f"default/{name}"] for r in rows]
            want = hf[name]
            for g, w in zip(got, want):
                if isinstance(w, list):
                    assert np.allclose(np.asarray(g, dtype=float).reshape(np.shape(w)), np.asarray(w, dtype=float)), name
                elif isinstance(w, float):
                    assert np.isclose(g, w) or (w != w and g != g), name
                else:
                    assert text(g) == w or (w is None and (g is None or g != g)), name
    return records


def _doc(folder: Path) -> dict:
    return json.loads((folder / "croissant.json").read_text(encoding="utf-8"))


def _shards_hashed(folder: Path, doc: dict) -> None:
    """One FileObject per shard, its sha256 that of the file, its path relative to the folder."""
    objects = {d["contentUrl"]: d for d in doc["distribution"] if d["@type"] == "cr:FileObject"}
    shards = sorted(p.relative_to(folder).as_posix() for p in (folder / "data").glob("*.parquet"))
    assert sorted(objects) == shards
    for url, entry in objects.items():
        assert entry["sha256"] == hashlib.sha256((folder / url).read_bytes()).hexdigest()


def test_a_build_in_several_shards_validates_and_reads_as_datasets_reads_it(demo_dataset, monkeypatch):
    ds, warned = _validated(demo_dataset)
    assert warned == ALWAYS_WARNED  # licence, citation, name, description, url are all there
    records = _same_rows(demo_dataset, ds)
    assert {split: len(rows) for split, rows in records.items()} == {"train": 30, "validation": 10, "test": 10}
    doc = _doc(demo_dataset)
    _shards_hashed(demo_dataset, doc)
    assert len([d for d in doc["distribution"] if d["@type"] == "cr:FileObject"]) == 8  # max_shard_rows=8: 4 + 2 + 2
    assert doc["conformsTo"] == ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
    assert doc["name"] == "CLEVR-Change" and doc["url"] == "https://github.com/Seth-Park/RobustChangeCaptioning"
    assert doc["license"]["name"] == "unknown" and "CC BY 4.0" in doc["license"]["description"]
    assert doc["citeAs"].startswith("@inproceedings{park2019robust")
    # what the toolkit knows, from the builder, the report and the data; the rest "unknown"
    assert "`idc-build clevr_change`" in doc["rai:dataCollection"]
    assert doc["rai:dataCollectionMissingData"].startswith("0 records of the release skipped by the build")
    assert "distractor 15" in " ".join(doc["rai:dataBiases"])
    assert doc["rai:annotationsPerItem"].startswith("Counted in the data: 3 to 4 reference captions per pair")
    for name in ("dataCollectionType", "dataAnnotationPlatform", "dataAnnotationAnalysis", "annotatorDemographics",
                 "machineAnnotationTools", "personalSensitiveInformation"):
        assert doc[f"rai:{name}"] == ["unknown"], name
    for name in ("dataSocialImpact", "dataReleaseMaintenancePlan"):
        assert doc[f"rai:{name}"] == "unknown", name
    # written without mlcroissant, and the same bytes again (nothing in it depends on the time)
    from datasets import load_dataset_builder

    from idc_toolkit.cards.croissant import croissant_jsonld, read_croissant

    assert read_croissant(demo_dataset) == doc
    monkeypatch.setitem(sys.modules, "mlcroissant", None)
    from idc_toolkit.runs.parquet import SplitSummary

    features = load_dataset_builder(str(demo_dataset)).info.features
    summaries = {}
    for obj in (d for d in doc["distribution"] if d["@type"] == "cr:FileObject"):
        summary = summaries.setdefault(obj["name"].split("-")[0], SplitSummary())
        summary.files.append(obj["name"])
    from idc_toolkit.cards import CORE_DOCS
    from idc_toolkit.cards.croissant import CroissantMeta

    again = croissant_jsonld(demo_dataset, features, summaries, CroissantMeta("x", "y", column_docs=CORE_DOCS))
    assert again["distribution"] == doc["distribution"] and again["recordSet"] == doc["recordSet"]


def test_a_folder_of_pairs_validates_and_reads_as_datasets_reads_it(tmp_path):
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building import build_dataset

    raw = tmp_path / "mine"
    for k, name in enumerate(["a.png", "b.png", "c.jpg"]):
        for folder, shade in (("before", 40), ("after", 200)):
            (raw / folder).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (24, 16), (shade, 10 * k, 0)).save(raw / folder / name)
    (raw / "before" / "d.png").write_bytes((raw / "before" / "a.png").read_bytes())
    (raw / "after" / "d.png").write_bytes(b"not an image")  # skipped, and said so
    (raw / "captions.csv").write_text("image,caption,category,split\n"
                                      "d.png,a broken pair,drop,train\n"
                                      "a.png,the car is gone,drop,train\n"
                                      "a.png,a car left,drop,train\n"
                                      "b.png,a bike appeared,add,test\n"
                                      "c.jpg,,no_change,test\n")
    out = build_dataset(make_builder("folder", raw), tmp_path / "out", progress=False).out_dir
    ds, warned = _validated(out)
    assert warned == ALWAYS_WARNED | {"http://mlcommons.org/croissant/citeAs"}  # your pairs: no citation known
    records = _same_rows(out, ds)
    assert {split: len(rows) for split, rows in records.items()} == {"train": 1, "test": 2}
    doc = _doc(out)
    _shards_hashed(out, doc)
    assert "url" not in doc and "citeAs" not in doc  # no homepage, no citation: none invented
    assert doc["license"]["name"] == "unknown"
    gaps = doc["rai:dataCollectionMissingData"]
    assert gaps.startswith("1 record of the release skipped by the build") and "Skipped, by reason: 1 x after image" in gaps
    assert "1 empty reference string kept as released" in gaps
    assert doc["rai:dataLimitations"] == [line for line in doc["rai:dataBiases"] if not line.startswith("Counted")][:-1]


def test_masks_added_keep_the_source_metadata_and_describe_the_new_columns_and_shards(demo_dataset, tmp_path):
    from idc_toolkit.masks.column import add_change_masks

    out = tmp_path / "masks"
    add_change_masks(demo_dataset, out, rows_per_part=8, progress=False)
    ds, warned = _validated(out)
    assert warned == ALWAYS_WARNED
    records = _same_rows(out, ds)
    from datasets import Image as ImageFeature, load_dataset

    masks = load_dataset(str(out), split="test").cast_column("change_mask", ImageFeature(decode=False))
    for k in range(3):
        _image_matches(masks[k]["change_mask"], records["test"][k]["default/change_mask"])
    doc, source = _doc(out), _doc(demo_dataset)
    _shards_hashed(out, doc)
    fields = {f["name"]: f for f in next(rs for rs in doc["recordSet"] if rs["@id"] == "default")["field"]}
    assert fields["change_boxes"]["isArray"] and fields["change_boxes"]["arrayShape"] == "-1,4"
    assert fields["change_mask"]["dataType"] == "sc:ImageObject" and fields["mask_source"]["dataType"] == "sc:Text"
    assert "idc-precompute masks" in fields["change_mask"]["description"]
    for key in ("name", "description", "url", "license", "citeAs", "rai:dataCollection", "rai:dataBiases",
                "rai:annotationsPerItem", "rai:dataUseCases"):
        assert doc[key] == source[key], key
    assert doc["rai:dataPreprocessingProtocol"][:-1] == source["rai:dataPreprocessingProtocol"]
    assert doc["rai:dataPreprocessingProtocol"][-1].startswith("Change masks (idc-precompute masks): adds `change_mask`")
    assert doc["rai:machineAnnotationTools"] == [
        "the source's own: unknown", "Change masks (idc-precompute masks): `change_mask`, `change_boxes`, `mask_source`"]

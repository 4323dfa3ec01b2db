"""``croissant.json``: Croissant 1.1 metadata with the Responsible-AI (RAI 1.0) fields, written
beside the card of every dataset folder a build, a column pass or an augmentation writes.

The structure is the Hub's own Croissant export of a parquet dataset (the dataset viewer's
``croissant_crumbs``, ``datasets/1.1/huggingface-*`` in the Croissant repository), laid on the
local folder:

* ``distribution``: one ``cr:FileObject`` per parquet shard (``contentUrl`` relative to the
  folder, ``sha256``, size), and one ``cr:FileSet`` of them all (``data/*.parquet``) that the
  fields read, since a split has several shards and a field has one source;
* ``recordSet``: ``default_splits`` (``cr:Split``, the split names inline), one enumeration per
  ``ClassLabel`` column (``<column>_names``: index and name inline) and ``default``, one record
  per row, whose ``split`` field comes from the shard's path and references ``default_splits``;
  a field per column (``extract.column``; images as ``sc:ImageObject`` from the cell's
  ``bytes``, lists with ``isArray`` and ``arrayShape``, numbers and booleans with the Hub's
  types);
* the dataset's name, description, url, licence and citation, and the RAI fields: those the
  toolkit knows are filled from the builder's card metadata, the build report and the data;
  those it does not know hold the literal string ``"unknown"``.

Written without mlcroissant (which validates it in the tests): the standard library, pyarrow
and datasets' feature types. Nothing in it depends on the time of writing, so a resumed run
writes the same bytes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Features

    from ..building.builder import PairBuilder
    from ..building.report import BuildReport
    from ..runs.parquet import SplitSummary

CROISSANT_FILE = "croissant.json"
UNKNOWN = "unknown"
CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
RECORD_SET = "default"
SPLITS_RECORD_SET = f"{RECORD_SET}_splits"
FILE_SET = "parquet-files"

#: the @context of Croissant 1.1 as mlcroissant writes it (``mlcroissant._src.core.rdf.make_context``)
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

#: ``datasets`` Value dtypes -> Croissant data types (the dataset viewer's HF_TO_CROISSANT_VALUE_TYPE)
VALUE_TYPES = {
    "bool": "sc:Boolean", "string": "sc:Text", "large_string": "sc:Text", "binary": "sc:Text",
    "float16": "cr:Float16", "float32": "cr:Float32", "float64": "cr:Float64",
    "int8": "cr:Int8", "int16": "cr:Int16", "int32": "cr:Int32", "int64": "cr:Int64",
    "uint8": "cr:UInt8", "uint16": "cr:UInt16", "uint32": "cr:UInt32", "uint64": "cr:UInt64",
    "date32": "sc:Date", "date64": "sc:Date",
}

#: Hub licence ids -> SPDX identifiers
SPDX = {"mit": "MIT", "apache-2.0": "Apache-2.0", "cc0-1.0": "CC0-1.0", "cc-by-4.0": "CC-BY-4.0",
        "cc-by-sa-4.0": "CC-BY-SA-4.0", "cc-by-nc-4.0": "CC-BY-NC-4.0", "cc-by-nc-sa-4.0": "CC-BY-NC-SA-4.0",
        "cc-by-nc-nd-4.0": "CC-BY-NC-ND-4.0", "cc-by-nd-4.0": "CC-BY-ND-4.0", "bsd-3-clause": "BSD-3-Clause",
        "gpl-3.0": "GPL-3.0-only", "odc-by": "ODC-By-1.0", "cdla-permissive-2.0": "CDLA-Permissive-2.0"}

#: every RAI 1.0 property mlcroissant reads, in the order written; ``ONE``: a single text
RAI_FIELDS = {
    "dataCollection": "ONE", "dataCollectionType": "MANY", "dataCollectionRawData": "ONE",
    "dataCollectionMissingData": "ONE", "dataPreprocessingProtocol": "MANY", "dataManipulationProtocol": "ONE",
    "dataImputationProtocol": "ONE", "dataAnnotationProtocol": "MANY", "dataAnnotationPlatform": "MANY",
    "dataAnnotationAnalysis": "MANY", "annotationsPerItem": "ONE", "annotatorDemographics": "MANY",
    "machineAnnotationTools": "MANY", "dataBiases": "MANY", "dataLimitations": "MANY", "dataUseCases": "MANY",
    "dataSocialImpact": "ONE", "personalSensitiveInformation": "MANY", "dataReleaseMaintenancePlan": "ONE",
}
# RAI 1.0's ``dataCollectionTimeframe`` is left out: it is typed ``sc:DateTime`` and "unknown" is
# no date (mlcroissant reads it as no value); docs/schema.md says so

#: how the entries computed from the data begin (replaced, not inherited, by a derived dataset)
COUNTED = "Counted in the data: "
NAME_PATTERN = re.compile(r"[^a-zA-Z0-9\-_.]")


@dataclass
class CroissantMeta:
    """What ``croissant.json`` says about a dataset besides its files and records.

    ``rai``: RAI property (without ``rai:``) -> text or list of texts; a property left out is
    written as ``"unknown"``. ``column_docs``: column -> what it holds (the fields' descriptions).
    """

    name: str
    description: str
    url: Optional[str] = None
    license: str = UNKNOWN
    license_note: str = ""
    cite_as: Optional[str] = None
    keywords: Sequence[str] = ()
    languages: Sequence[str] = ("en",)
    rai: dict[str, Any] = field(default_factory=dict)
    column_docs: Mapping[str, str] = field(default_factory=dict)


# -- the metadata of a folder -----------------------------------------------------------------
def croissant_jsonld(folder: Path, features: "Features", summaries: Mapping[str, "SplitSummary"],
                     meta: CroissantMeta) -> dict[str, Any]:
    """The Croissant JSON-LD of ``folder``: its shards (``summaries``: the splits written, their
    files and the files' sha256), its records (``features``) and ``meta``."""
    folder = Path(folder)
    splits = [s for s, summary in summaries.items() if summary.files]
    files = [(split, name, summary.file_sha256.get(name) or _sha256(folder / "data" / name))
             for split, summary in summaries.items() for name in summary.files]
    distribution: list[dict[str, Any]] = [
        {"@type": "cr:FileObject", "@id": name, "name": name, "description": f"{split} split, parquet shard",
         "contentUrl": f"data/{name}", "contentSize": f"{(folder / 'data' / name).stat().st_size} B",
         "encodingFormat": "application/x-parquet", "sha256": sha}
        for split, name, sha in files]
    record_sets: list[dict[str, Any]] = []
    if files:
        distribution.append({
            "@type": "cr:FileSet", "@id": FILE_SET, "name": FILE_SET,
            "description": "The parquet shards above, every split (the split is in each file's name).",
            "encodingFormat": "application/x-parquet", "includes": "data/*.parquet"})
        record_sets = _record_sets(features, splits, meta.column_docs)
    rai = {**{name: UNKNOWN for name in RAI_FIELDS}, **meta.rai}
    counted = counted_in_data(folder, features, summaries)
    rai["annotationsPerItem"] = counted["annotationsPerItem"] or rai["annotationsPerItem"]
    rai["dataBiases"] = _known(counted["dataBiases"] + _inherited(rai["dataBiases"]))
    doc: dict[str, Any] = {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": meta.name, "description": meta.description,
        **({"url": meta.url} if meta.url else {}),
        "license": license_entry(meta.license, meta.license_note),
        **({"citeAs": meta.cite_as} if meta.cite_as else {}),
        **({"keywords": list(meta.keywords)} if meta.keywords else {}),
        "inLanguage": list(meta.languages),
    }
    for name, cardinality in RAI_FIELDS.items():
        value = rai[name]
        if cardinality == "ONE":
            value = " ".join(value) if isinstance(value, list) else value
        else:
            value = value if isinstance(value, list) else [value]
        doc[f"rai:{name}"] = value
    doc["distribution"] = distribution
    doc["recordSet"] = record_sets
    return doc


def write_croissant(folder: Path, features: "Features", summaries: Mapping[str, "SplitSummary"],
                    meta: CroissantMeta) -> Path:
    """Write ``folder/croissant.json`` (see :func:`croissant_jsonld`)."""
    path = Path(folder) / CROISSANT_FILE
    doc = croissant_jsonld(folder, features, summaries, meta)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_croissant(folder: Path | str) -> Optional[dict[str, Any]]:
    """A folder's ``croissant.json`` (``None`` when it has none or it cannot be read)."""
    path = Path(folder) / CROISSANT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def license_entry(license: str, note: str = "") -> dict[str, Any]:
    """The licence as a ``sc:CreativeWork``: the Hub id as its name, the SPDX page where the id
    is an SPDX licence, the card's licence note as its description."""
    spdx = SPDX.get(license.lower())
    return {"@type": "sc:CreativeWork", "name": license,
            **({"url": f"https://spdx.org/licenses/{spdx}.html"} if spdx else {}),
            **({"description": note} if note else {})}


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- record sets -----------------------------------------------------------------------------
def _escape(name: str, taken: set[str]) -> str:
    out = NAME_PATTERN.sub("_", name)
    while out in taken:
        out += "_0"
    taken.add(out)
    return out


def _record_sets(features: "Features", splits: list[str], docs: Mapping[str, str]) -> list[dict[str, Any]]:
    from datasets import ClassLabel

    taken = {RECORD_SET, SPLITS_RECORD_SET}
    split_key = f"{SPLITS_RECORD_SET}/split_name"
    sets: list[dict[str, Any]] = [{
        "@type": "cr:RecordSet", "@id": SPLITS_RECORD_SET, "name": SPLITS_RECORD_SET, "dataType": "cr:Split",
        "description": "The splits of the dataset.", "key": {"@id": split_key},
        "field": [{"@type": "cr:Field", "@id": split_key, "name": "split_name", "description": "The name of the split.",
                   "dataType": "sc:Text"}],
        "data": [{split_key: split} for split in splits]}]
    names = "|".join(re.escape(s) for s in splits)
    # mlcroissant applies the regex to the path, then again to the joined value: both match
    fields: list[dict[str, Any]] = [{
        "@type": "cr:Field", "@id": f"{RECORD_SET}/split", "name": "split",
        "description": "The split of the pair (from its shard's file name).", "dataType": "sc:Text",
        "source": {"fileSet": {"@id": FILE_SET}, "extract": {"fileProperty": "fullpath"},
                   "transform": {"regex": rf"^(?:data/)?({names})(?:-\d+-of-\d+\.parquet)?$"}},
        "references": {"field": {"@id": split_key}}}]
    seen: set[str] = {"split"}
    for column, feature in features.items():
        field_id = f"{RECORD_SET}/{_escape(column, seen)}"
        entry = _field(field_id, column, feature, docs.get(column, ""))
        if entry is None:
            continue
        if isinstance(feature, ClassLabel):
            enum = _escape(f"{column}_names", taken)
            sets.append({
                "@type": "cr:RecordSet", "@id": enum, "name": enum, "dataType": "sc:Enumeration",
                "description": f"The names of the `{column}` values (datasets ClassLabel).",
                "key": {"@id": f"{enum}/index"},
                "field": [{"@type": "cr:Field", "@id": f"{enum}/index", "name": "index", "dataType": "sc:Integer"},
                          {"@type": "cr:Field", "@id": f"{enum}/name", "name": "name", "dataType": "sc:Text"}],
                "data": [{f"{enum}/index": i, f"{enum}/name": n} for i, n in enumerate(feature.names)]})
            entry["references"] = {"field": {"@id": f"{enum}/index"}}
        fields.append(entry)
    sets.append({"@type": "cr:RecordSet", "@id": RECORD_SET, "name": RECORD_SET,
                 "description": "Every pair of the dataset, one record per parquet row; `split` names its split.",
                 "field": fields})
    return sets


def _field(field_id: str, column: str, feature: Any, doc: str) -> Optional[dict[str, Any]]:
    """A ``cr:Field`` for one column (the dataset viewer's ``feature_to_croissant_field``);
    ``None`` for a type Croissant cannot read from parquet (left out)."""
    from datasets import ClassLabel, Image, LargeList, List, Value

    shape: list[str] = []
    inner = feature
    while isinstance(inner, (List, LargeList)):
        length = getattr(inner, "length", -1)
        shape.append(str(length if length and length > 0 else -1))
        inner = inner.feature
    source: dict[str, Any] = {"fileSet": {"@id": FILE_SET}, "extract": {"column": column}}
    if isinstance(inner, Value) and inner.dtype in VALUE_TYPES:
        data_type = VALUE_TYPES[inner.dtype]
    elif isinstance(inner, ClassLabel):
        data_type = "sc:Integer"
    elif isinstance(inner, Image) and not shape:
        data_type = "sc:ImageObject"
        source["transform"] = {"jsonPath": "bytes"}
    else:
        return None
    entry: dict[str, Any] = {"@type": "cr:Field", "@id": field_id, "name": column,
                             **({"description": doc} if doc else {}), "dataType": data_type, "source": source}
    if shape:
        entry["isArray"] = True
        entry["arrayShape"] = ",".join(shape)
    return entry


# -- what is counted in the data -------------------------------------------------------------
def counted_in_data(folder: Path, features: "Features", summaries: Mapping[str, "SplitSummary"]) -> dict[str, Any]:
    """The RAI entries computed from the shards: references per pair (``annotationsPerItem``)
    and the category counts per split (``dataBiases``)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from datasets import ClassLabel

    category = next((c for c, f in features.items() if c == "category" and isinstance(f, ClassLabel)), None)
    captions = "captions" if "captions" in features else None
    lengths: list[int] = []
    counts: dict[str, Counter] = {}
    for split, summary in summaries.items():
        for name in summary.files:
            columns = [c for c in (captions, category) if c]
            if not columns:
                continue
            table = pq.read_table(Path(folder) / "data" / name, columns=columns)
            if captions:
                lengths += [n or 0 for n in pc.list_value_length(table[captions]).to_pylist()]
            if category:
                counts.setdefault(split, Counter()).update(v for v in table[category].to_pylist() if v is not None)
    per_item = ""
    if lengths:
        per_item = (f"{COUNTED}{min(lengths)} to {max(lengths)} reference captions per pair, "
                    f"{sum(lengths) / len(lengths):.2f} on average, over {_n(len(lengths), 'pair')}.")
    biases = []
    if category:
        names = features[category].names
        for split, counter in counts.items():
            total = sum(counter.values())
            shown = ", ".join(f"{names[i]} {counter.get(i, 0)}" for i in range(len(names)))
            biases.append(f"{COUNTED}`{category}` in {split} ({_n(total, 'pair')}): {shown}.")
    return {"annotationsPerItem": per_item, "dataBiases": biases}


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _inherited(value: Any) -> list[str]:
    """``value``'s entries less those computed from the data (a derived dataset recounts them)
    and ``unknown``."""
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, str) and not v.startswith(COUNTED) and v != UNKNOWN]


def _known(values: list[str]) -> list[str]:
    return values or [UNKNOWN]


# -- what a build knows ----------------------------------------------------------------------
def report_gaps(report: Mapping[str, Any], report_file: str = "build_report.json", shown: int = 5) -> list[str]:
    """What the build report says is missing or altered, counted: skipped and repaired records
    (the commonest reasons), notes, the builder's counters (dead links, unannotated images,
    ...), empty references kept."""
    counts = report.get("counts", {})
    problems = report.get("problems", [])
    lines = [f"{_n(counts.get('skipped', 0), 'record')} of the release skipped by the build, "
             f"{_n(counts.get('repaired', 0), 'value')} repaired, {_n(counts.get('notes', 0), 'note')}; every one "
             f"with its file, record id and reason in {report_file}."]
    for action in ("skipped", "repaired"):
        reasons = Counter(str(p.get("reason", ""))[:200] for p in problems if p.get("action") == action)
        if reasons:
            top = "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(shown))
            more = f"; and {len(reasons) - shown} other reasons" if len(reasons) > shown else ""
            lines.append(f"{action.capitalize()}, by reason: {top}{more}.")
    counters = {k: v for k, v in sorted(report.get("counters", {}).items()) if v}
    if counters:
        lines.append("Counted by the builder: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counters.items()) + ".")
    empty = sum(s.get("empty_captions", 0) for s in report.get("splits", {}).values())
    if empty:
        lines.append(f"{_n(empty, 'empty reference string')} kept as released.")
    return lines


def build_meta(builder: "PairBuilder", report: "BuildReport", column_docs: Mapping[str, str],
               keywords: Sequence[str], task: str) -> CroissantMeta:
    """What a build knows: the builder's card metadata (name, description, homepage, licence,
    citation, where the images come from, personal information) and its report (gaps)."""
    from .. import __version__

    card = builder.card
    report_dict = report.to_dict()
    gaps = report_gaps(report_dict)
    url = card.homepage if card.homepage.startswith(("http://", "https://")) else None
    read = ", ".join(builder.raw_files())
    rai: dict[str, Any] = {
        "dataCollection": (f"The pairs, images and references of {card.pretty_name} as its authors released them, "
                           f"read by idc-toolkit {__version__} (`idc-build {builder.name}`) from the original raw release; "
                           f"images from {card.images_from or UNKNOWN}. How the release's authors collected them: "
                           f"{UNKNOWN} to idc-toolkit (see the citation)."),
        "dataCollectionRawData": (f"The raw release of {card.pretty_name}: {card.download}; homepage {card.homepage}; "
                                  f"files read: {read or 'the folder'}."),
        "dataCollectionMissingData": " ".join(gaps),
        "dataPreprocessingProtocol": [
            "idc-build: one schema (pair_id, before, after, captions, category where the release has one); records "
            "whose image is missing, unreadable or outside the raw folder, whose category is unknown or whose "
            "pair_id repeats an earlier one are skipped and listed in build_report.json; splits mapped to "
            "train / validation / test."],
        "dataManipulationProtocol": ("Images are the release's own encoded bytes, never decoded or re-encoded; "
                                     "references are kept exactly as released, in release order, empty strings "
                                     "included; a value changed from the release is listed as repaired in "
                                     "build_report.json."),
        "dataImputationProtocol": "idc-toolkit imputes no value: a value the release lacks stays null.",
        "dataAnnotationProtocol": [
            "References (captions) and categories as the release's authors wrote them; idc-toolkit adds no "
            f"annotation. How they were written: {UNKNOWN} to idc-toolkit (see the citation)."],
        "dataBiases": [*(gaps if gaps[1:] else []), f"Biases of the release beyond what is counted here: {UNKNOWN}."],
        "dataLimitations": gaps,
        "dataUseCases": [task, "Splits as the release defines them: " + ", ".join(report_dict["splits"]) + "."],
        **({"personalSensitiveInformation": [card.personal_info]} if card.personal_info else {}),
    }
    return CroissantMeta(name=card.pretty_name, description=card.description, url=url, license=card.license,
                         license_note=card.license_note, cite_as=card.citation.strip() or None, keywords=keywords,
                         rai=rai, column_docs=column_docs)


# -- what a derived dataset keeps of its source ----------------------------------------------
def derived_meta(source: Optional[Mapping[str, Any]], *, name: str, license: str, step: str, step_text: str,
                 column_docs: Mapping[str, str], keywords: Sequence[str], description: Optional[str] = None,
                 machine_tools: Sequence[str] = (), rai: Optional[Mapping[str, Any]] = None,
                 same_rows: bool = True) -> CroissantMeta:
    """The metadata of a dataset made from ``source`` (its ``croissant.json``, or ``None`` where
    it has none: a Hub dataset, an older folder) by ``step``: the source's name, url, licence,
    citation and RAI fields, ``step_text`` added to the preprocessing protocol, ``machine_tools``
    to the machine annotation tools and ``rai`` set over them. Without ``same_rows`` (new pairs,
    not the source's with new columns) the source's url and name are not this dataset's."""
    source = dict(source) if isinstance(source, Mapping) else {}
    values: dict[str, Any] = {}
    for key, cardinality in RAI_FIELDS.items():  # what a hand-edited file holds of another shape is left out
        raw = source.get(f"rai:{key}")
        texts = [t for t in _texts(raw if isinstance(raw, list) else [raw]) if t != UNKNOWN and not t.startswith(COUNTED)]
        if texts:
            values[key] = texts if cardinality == "MANY" else " ".join(texts)
    values["dataPreprocessingProtocol"] = [*values.get("dataPreprocessingProtocol", []), f"{step}: {step_text}"]
    if machine_tools:
        earlier = values.get("machineAnnotationTools") or [f"the source's own: {UNKNOWN}"]
        values["machineAnnotationTools"] = [*earlier, *machine_tools]
    values.update(rai or {})
    docs = {_text(f.get("name")): _text(f.get("description")) for rs in _dicts(source.get("recordSet"))
            if rs.get("@id") == RECORD_SET for f in _dicts(rs.get("field"))}
    lic = source.get("license")
    lic = lic[0] if isinstance(lic, list) and lic else lic
    lic = lic if isinstance(lic, dict) else {"name": lic}
    name = (_text(source.get("name")) if same_rows else None) or name
    return CroissantMeta(
        name=name, description=description or _text(source.get("description")) or name,
        url=_text(source.get("url")) if same_rows else None, license=_text(lic.get("name")) or license,
        license_note=_text(lic.get("description")) or "", cite_as=_text(source.get("citeAs")),
        keywords=list(keywords) or _texts(source.get("keywords")), languages=_texts(source.get("inLanguage")) or ["en"],
        rai=values,
        column_docs={**{k: v for k, v in docs.items() if k and v}, **column_docs})


def _text(value: Any) -> Optional[str]:
    """A JSON-LD text: a string, or the English (else the first) of a language map; else ``None``."""
    if isinstance(value, dict):
        value = value.get("en", next(iter(value.values()), None))
    return value if isinstance(value, str) else None


def _texts(value: Any) -> list[str]:
    return [t for t in map(_text, value) if t] if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

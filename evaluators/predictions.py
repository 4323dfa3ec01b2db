"""Scoring any predictions file: reading predictions and references, checking that they fit.

Predictions: a JSON dict ``{pair_id: caption}``, a coco results list
``[{"image_id": ..., "caption": ...}]``, or JSON Lines with ``pair_id`` (or ``image_id``) and
``caption``. References: a dataset written by ``idc-build`` (its ``captions`` and
``category`` columns), anything ``load_dataset`` takes, or a coco-caption annotation file
with an optional category map.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

from idc_toolkit.errors import EvaluationError
from idc_toolkit.files import read_text
from idc_toolkit.metrics.text import has_separator, one_copy
from idc_toolkit.schema import CAPTIONS, CATEGORY, NO_CHANGE_CATEGORIES, PAIR_ID

from .groups import listed_ids, read_category_map
from .protocols import rcc_id

#: group names the scorer writes itself; a category may not take them
RESERVED_GROUPS = frozenset({"overall", "change_only"})

MISSING_NOTE = "reference pair(s) have no prediction and were not scored (--allow-missing)"


@dataclass
class References:
    captions: dict[str, list[str]]  # pair_id -> references, in dataset order
    categories: dict[str, Optional[str]]  # pair_id -> category name (or None)
    source: str
    fingerprint: str = ""
    #: category names in the dataset's own order (ClassLabel order), for the tables
    category_order: list[str] = field(default_factory=list)
    #: pair_id -> every category it is listed under, where a category map lists it under
    #: several (RCC's evaluate.py scores such a pair in each); ``categories`` holds the first
    memberships: dict[str, list[str]] = field(default_factory=dict)
    #: pair_id -> viewpoint IoU (``--iou-file`` / ``--iou-column``): adds the difficulty groups
    ious: dict[str, Optional[float]] = field(default_factory=dict)
    #: other dataset columns asked for (``--differences-column``): column -> {pair_id: value}
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)

    def groups_of(self, pid: str) -> list[str]:
        """Every category the pair is scored in (none when it has no category)."""
        category = self.categories.get(pid)
        return self.memberships.get(pid) or ([category] if category is not None else [])


def _caption(value: Any, where: Any) -> str:
    """``value`` as one caption; ``where``: the place a refusal names (a string, or a function
    giving it: formatted only for a refusal)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    raise EvaluationError(f"{where() if callable(where) else where}: the caption must be a string, "
                          f"found {type(value).__name__}")


#: how a predictions argument is given: a file, or ``{pair_id: caption}`` in memory
Predictions = Union[str, Path, Mapping[str, str]]


def source_name(predictions: Predictions) -> str:
    """How a predictions argument is named in the outputs."""
    return "<in memory>" if isinstance(predictions, Mapping) else str(predictions)


@dataclass
class Record:
    """One caption of a reference or predictions file, where the file gives it."""

    pair_id: Any
    caption: Any
    place: tuple  # ("line", 3), ("item", 0), ("key", "x"), ("key", "x", 1), ("annotation", 2)
    fields: Optional[dict[str, Any]] = None  # the record's object (JSON Lines, a results list)

    @property
    def where(self) -> str:
        """"line 3", "item 0", "key 'x'", "key 'x', reference 1", "annotation 2": written only for a
        message (a file of 400,000 captions is read without formatting one)."""
        kind, at, *reference = self.place
        return f"{kind} {at!r}" + (f", reference {reference[0]}" if reference else "") if kind == "key" else f"{kind} {at}"


@dataclass
class CaptionsFile:
    """A reference or predictions file read and decoded once: its records, and the problems found
    reading them (:func:`file_problems` adds those of their ids and captions)."""

    path: Path
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    data: Any = None  # the file's JSON value, where it is one (not JSON Lines)
    #: several captions per id allowed: a coco annotation file or a {id: [captions]} mapping
    references: bool = False


class Annotation(NamedTuple):
    """A coco annotation as :func:`read_captions_file` reads it by default, its ``image_id`` and
    ``caption`` (whatever else it holds): a tuple holds it in a third of a dict's memory."""

    image_id: Any
    caption: Any


def _not_json(path: Path, text: str, exc: json.JSONDecodeError, where: str = "") -> str:
    offset = len(text[: exc.pos].encode("utf-8"))
    return (f"{path}{where}: not JSON at byte {offset} (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"it starts {text[:24]!r}")


def _record_id(obj: dict[str, Any]) -> Any:
    return obj.get("pair_id", obj.get("image_id"))


def read_captions_file(path: Path | str, records: bool = True,
                       annotation: Callable[[Any, Any], Any] = Annotation) -> CaptionsFile:
    """Every format the scorer reads (module docstring), parsed once: JSON Lines where the file is
    named ``.jsonl`` or holds several JSON values, one JSON value otherwise. ``records=False``:
    a coco annotation file's ``data`` alone, without a record per annotation, each object with an
    ``image_id`` and a ``caption`` read as ``annotation(image_id, caption)`` as soon as it is parsed
    (an :class:`Annotation` by default)."""
    from idc_toolkit.files import UnreadableJSON, parse_json

    path = Path(path)
    text = read_text(path, EvaluationError, "reference or predictions file")
    out = CaptionsFile(path)
    repeated: list[str] = []
    one = one_copy()

    def shared(value: Any) -> Any:
        return one(value) if type(value) is str else value

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        seen = dict(pairs)  # the last value of a repeated key, as JSON keeps it
        if not records and len(seen) == len(pairs) and "caption" in seen and "image_id" in seen:
            # a repeated id or caption is let go as soon as it is parsed: no hole is left behind in memory
            return annotation(shared(seen["image_id"]), shared(seen["caption"]))
        if len(seen) < len(pairs):  # a key given twice: named below
            counted: dict[str, int] = {}
            for key, _ in pairs:
                counted[key] = counted.get(key, 0) + 1
            repeated.extend(k for k, n in counted.items() if n > 1)
        return seen

    lines = path.suffix == ".jsonl" and bool(text.strip())
    if not lines:
        try:
            out.data = parse_json(text, object_pairs_hook=hook)
        except UnreadableJSON as exc:
            out.problems.append(f"{path}: {exc}")
            return out
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                out.problems.append(_not_json(path, text, exc))
                return out
            lines = True  # several JSON values: JSON Lines
    if lines:
        out.data = None
        _read_lines(out, text)
        return out
    if repeated:
        out.problems.append(f"{path}: id(s) {listed_ids(sorted(set(repeated)))} appear twice in one JSON object "
                            "(JSON keeps the last: which caption is meant?)")
    _read_value(out, out.data, records)
    return out


def _read_lines(out: CaptionsFile, text: str) -> None:
    from idc_toolkit.files import UnreadableJSON, parse_json

    # "\n" only: str.splitlines() also splits at U+2028 / U+0085, which are valid inside a
    # JSON string (and in the toolkit's own predictions.jsonl, written with ensure_ascii=False)
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
        except UnreadableJSON as exc:
            out.problems.append(f"{out.path}: line {lineno}: {exc}")
            continue
        except json.JSONDecodeError as exc:
            out.problems.append(_not_json(out.path, line, exc, f": line {lineno}"))
            continue
        if not isinstance(obj, dict):
            out.problems.append(f"{out.path}: line {lineno}: expected an object with pair_id and caption")
            continue
        out.records.append(Record(_record_id(obj), obj.get("caption"), ("line", lineno), obj))


def _read_value(out: CaptionsFile, data: Any, records: bool = True) -> None:
    annotations = isinstance(data, dict) and isinstance(data.get("annotations"), list)
    out.references = annotations or (isinstance(data, dict) and any(isinstance(v, list) for v in data.values()))
    if annotations and not records:
        return
    if annotations:
        for i, ann in enumerate(data["annotations"]):
            ann = ann if isinstance(ann, dict) else {}
            out.records.append(Record(ann.get("image_id"), ann.get("caption"), ("annotation", i)))
    elif isinstance(data, dict):
        for key, value in data.items():
            several = isinstance(value, list)
            for k, caption in enumerate(value if several else [value]):
                out.records.append(Record(key, caption, ("key", key, k) if several else ("key", key)))
    elif isinstance(data, list):
        for i, obj in enumerate(data):
            obj = obj if isinstance(obj, dict) else {}
            out.records.append(Record(_record_id(obj), obj.get("caption"), ("item", i), obj))
    else:
        out.problems.append(f"{out.path}: expected a coco annotation file, a mapping, a coco results list or JSON lines")


def file_problems(parsed: CaptionsFile) -> tuple[list[str], list[str], dict[str, int]]:
    """The problems of a file read by :func:`read_captions_file` (empty: none), its
    warnings and what it holds (``ids``, ``captions``)."""
    path = parsed.path
    problems = list(parsed.problems)
    ids: dict[str, int] = {}
    empty: list[str] = []
    for r in parsed.records:
        if r.pair_id is None:
            problems.append(f"{path}: {r.where}: no pair_id / image_id")
            continue
        ids[str(r.pair_id)] = ids.get(str(r.pair_id), 0) + 1
        if not isinstance(r.caption, str):
            problems.append(f"{path}: {r.where} (id {r.pair_id!r}): the caption is {type(r.caption).__name__}, not a string")
        elif not r.caption.strip():
            empty.append(str(r.pair_id))
    twice = [] if parsed.references else sorted(i for i, n in ids.items() if n > 1)  # references may give several
    if twice:
        problems.append(f"{path}: {len(twice)} id(s) have several predictions: {listed_ids(twice)}")
    warnings = [f"{path}: {len(empty)} empty caption(s), of id(s) {listed_ids(empty)}: scored as given "
                "(--drop-empty-references drops them)"] if empty else []
    return problems, warnings, {"ids": len(ids), "captions": sum(ids.values())}


def refuse(parsed: CaptionsFile) -> None:
    """What every scoring run does before it starts: refuse a file with any of :func:`file_problems`'
    problems, each on its own line (warnings are the scorer's to give)."""
    from idc_toolkit.errors import EvaluationError

    problems, _, _ = file_problems(parsed)
    if problems:
        raise EvaluationError("\n".join(problems) + ("" if len(problems) == 1 else f"\n{parsed.path}: {len(problems)} "
                                                     "problems (idc-eval check-references lists them)"))


def predictions_of(parsed: CaptionsFile) -> dict[str, str]:
    """The ``{pair_id: caption}`` of a predictions file that :func:`file_problems`
    passed: one caption per pair, and a record naming its pair twice names it once."""
    path = parsed.path
    one = one_copy()
    if isinstance(parsed.data, dict):
        return {str(pid): one(_caption(caption, f"{path}: key {pid!r}")) for pid, caption in parsed.data.items()}
    preds: dict[str, str] = {}
    for r in parsed.records:
        ids = {k: r.fields[k] for k in ("pair_id", "image_id") if r.fields.get(k) is not None}
        if len(ids) == 2 and str(ids["pair_id"]) != str(ids["image_id"]):
            raise EvaluationError(f"{path}: {r.where}: 'pair_id' {ids['pair_id']!r} and 'image_id' {ids['image_id']!r} "
                                  "disagree; which pair is meant?")
        preds[str(r.pair_id)] = one(r.caption)
    return preds


def load_predictions(path: Path | str) -> dict[str, str]:
    """Read a predictions file in any of its formats, refusing it with every problem
    ``idc-eval check-references`` lists; ids become strings."""
    parsed = read_captions_file(path)
    refuse(parsed)
    return predictions_of(parsed)


def read_predictions(predictions: Predictions) -> dict[str, str]:
    """``{pair_id: caption}`` of a predictions argument: a file (:func:`load_predictions`) or a mapping."""
    if isinstance(predictions, Mapping):
        return {str(k): v for k, v in predictions.items()}
    return load_predictions(predictions)


def _fingerprint(captions: dict[str, list[str]], categories: dict[str, Optional[str]]) -> str:
    h = hashlib.sha256()
    for pid, refs in captions.items():
        h.update(json.dumps([pid, refs, categories.get(pid)]).encode())
    return h.hexdigest()[:16]


class _Pairs:
    """A coco file's captions gathered by pair, annotation after annotation, and the first pair whose
    image_id is spelled two ways (``(annotation, image_id, the first spelling)``)."""

    def __init__(self) -> None:
        self.captions: dict[str, list[str]] = {}
        self.spelled: dict[str, Any] = {}  # the first image_id as written, per pair
        self.clash: Optional[tuple[int, Any, Any]] = None
        self.count = 0

    def add(self, raw: Any, caption: str) -> None:
        key = str(raw)
        first = self.spelled.setdefault(key, raw)
        if type(first) is not type(raw) and self.clash is None:
            self.clash = (self.count, raw, first)
        self.captions.setdefault(key, []).append(caption)  # shared as it was parsed
        self.count += 1


#: what the coco reader leaves in 'annotations' for an annotation it has put into its pair's captions
GATHERED = Annotation(None, None)


def load_references_coco(path: Path | str, category_map: Optional[Path | str] = None) -> References:
    """References from a coco-caption annotation file (``annotations`` grouped by image_id), each
    annotation put into its pair's captions as it is parsed: no object per annotation is kept."""
    pairs = _Pairs()

    def gather(raw: Any, caption: Any) -> Any:
        if raw is None or type(caption) is not str:
            return Annotation(raw, caption)  # refused below, with every problem named
        pairs.add(raw, caption)
        return GATHERED

    parsed = read_captions_file(path, records=False, annotation=gather)
    data = parsed.data
    annotations = data.get("annotations") if isinstance(data, dict) else None
    # a record per annotation only where one is wrong (it lacks an id or a caption): the refusal lists every problem
    if parsed.problems or not isinstance(annotations, list) or not all(a is GATHERED for a in annotations):
        refuse(read_captions_file(path))
    path = parsed.path
    if not isinstance(annotations, list):
        raise EvaluationError(f"{path}: not a coco-caption annotation file (no 'annotations' list)")
    if pairs.count != len(annotations):  # objects with an image_id and a caption outside 'annotations' too
        pairs = _Pairs()
        for ann in read_captions_file(path, records=False).data["annotations"]:
            pairs.add(ann.image_id, ann.caption)
    if pairs.clash is not None:
        i, raw, first = pairs.clash
        raise EvaluationError(f"{path}: annotation {i}: image_id {raw!r} and {first!r} (a {type(first).__name__}) "
                              "would be merged into one pair; use one spelling per pair")
    captions = pairs.captions
    cats = read_category_map(category_map) if category_map else {}

    of = {pid: cats.get(rcc_id(pid), []) for pid in captions} if cats else {}
    categories = {pid: (of[pid][0] if of.get(pid) else None) for pid in captions}
    memberships = {pid: names for pid, names in of.items() if len(names) > 1}
    order = list(dict.fromkeys(c for names in cats.values() for c in names))
    return References(captions, categories, str(path), _fingerprint(captions, categories), order, memberships)


def _class_label_names(schema, column: str) -> Optional[list[str]]:
    """The ClassLabel names of ``column`` from the features ``datasets`` stores in a parquet
    file's schema metadata (``huggingface`` -> ``info.features``), or ``None``."""
    raw = (schema.metadata or {}).get(b"huggingface")
    if not raw:
        return None
    try:
        feature = json.loads(raw)["info"]["features"].get(column)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and isinstance(feature.get("names"), list):
        return [str(n) for n in feature["names"]]
    return None


def load_references_dataset(dataset: str, split: str = "test", id_column: str = PAIR_ID,
                            group_by: Optional[str] = None, iou_column: Optional[str] = None,
                            extra: Sequence[str] = (), optional: Sequence[str] = ()) -> References:
    """References from a dataset in the idc-toolkit schema (an ``idc-build`` folder or Hub id);
    ``group_by`` names a column whose values are the groups instead of ``category``,
    ``iou_column`` one holding each pair's viewpoint IoU, ``extra`` columns kept in ``columns``
    (``optional`` ones too, where the split has them: a multiple-choice item's question columns).

    A local ``idc-build`` folder is read straight from its parquet shards, only the id,
    captions and category columns, so no image is decoded or copied into a cache.
    """
    from idc_toolkit.runs.rows import local_split_files

    shards = local_split_files(dataset, split)
    group_column = group_by or CATEGORY
    if shards:  # pyarrow alone: no `datasets` (and pandas) import on the scoring path
        import pyarrow.parquet as pq

        from idc_toolkit.errors import RunError
        from idc_toolkit.runs.rows import check_against_card

        try:  # the one shared check of a folder against its card, before any scoring
            check_against_card(dataset, split, shards)
        except RunError as exc:
            raise EvaluationError(str(exc)) from None
        schema = pq.read_schema(shards[0])
        names = _class_label_names(schema, group_column)
        cols = [c for c in dict.fromkeys((id_column, CAPTIONS, group_column, iou_column, *extra, *optional))
                if c and c in schema.names]
        rows: dict[str, list] = {c: [] for c in cols}
        for shard in shards:
            table = pq.ParquetFile(shard).read(columns=cols)  # (read_table would import pyarrow.dataset and pandas)
            for c in cols:
                rows[c].extend(table.column(c).to_pylist())
    else:
        from datasets import ClassLabel, load_dataset

        from idc_toolkit.runs.rows import check_hub_repo

        check_hub_repo(dataset, "dataset", "--dataset")
        try:
            ds = load_dataset(dataset, split=split)
        except ValueError as exc:
            raise EvaluationError(f"{dataset}: cannot load split {split!r}: {exc}") from None
        feature = ds.features.get(group_column)
        names = list(feature.names) if isinstance(feature, ClassLabel) else None
        cols = [c for c in dict.fromkeys((id_column, CAPTIONS, group_column, iou_column, *extra, *optional))
                if c and c in ds.column_names]
        rows = {c: list(ds[c]) for c in cols}
    for needed in (id_column, CAPTIONS, group_by, iou_column, *extra):
        if needed and needed not in rows:
            raise EvaluationError(f"{dataset}: split {split!r} has no {needed!r} column")
    if not rows[id_column]:
        raise EvaluationError(f"{dataset}: split {split!r} is empty (0 rows); nothing to score against")
    captions: dict[str, list[str]] = {}
    categories: dict[str, Optional[str]] = {}
    one = one_copy()
    for k, pid in enumerate(rows[id_column]):
        pid = str(pid)
        if pid in captions:
            raise EvaluationError(f"{dataset}: pair id {pid!r} occurs twice in split {split!r}")
        cell = rows[CAPTIONS][k]
        if cell is not None and (not isinstance(cell, list) or not all(isinstance(c, str) for c in cell)):
            raise EvaluationError(f"{dataset} [{split}], pair {pid!r}: 'captions' is a {type(cell).__name__}, not a list of "
                                  "strings; the folder was changed after it was written")
        captions[pid] = [one(c) for c in cell or []]
        cat = rows[group_column][k] if group_column in rows else None
        categories[pid] = names[cat] if (names is not None and cat is not None) else (None if cat is None else str(cat))
    refs = References(captions, categories, f"{dataset} [{split}]", _fingerprint(captions, categories), list(names or []))
    if iou_column:
        from .groups import check_iou

        refs.ious = {str(pid): None if v is None else check_iou(v, f"{dataset} [{split}] column {iou_column!r}, pair {pid!r}")
                     for pid, v in zip(rows[id_column], rows[iou_column])}
    refs.columns = {c: {str(pid): v for pid, v in zip(rows[id_column], rows[c])} for c in (*extra, *optional) if c in rows}
    return refs


@dataclass
class Prepared:
    hypotheses: dict[str, str]
    references: dict[str, list[str]]
    groups: dict[str, list[str]]  # category name -> ids; plus "change_only"
    categories: dict[str, Optional[str]]
    warnings: list[str]
    n_missing: int = 0


def prepare(
    predictions: dict[str, str],
    refs: References,
    *,
    allow_missing: bool = False,
    drop_empty_references: bool = False,
    breakdown: bool = True,
) -> Prepared:
    """Align predictions with references; every problem is an error or a counted warning. A pair
    with no reference that asks a multiple-choice question (``refs.columns``) is scored on that
    alone; one that has neither is an error."""
    warnings: list[str] = []
    missing = missing_pairs(predictions, refs, allow_missing, warnings)
    references = scored_references(predictions, refs, drop_empty_references, warnings)
    hypotheses = {pid: predictions[pid] for pid in references}
    with_separators = sum(1 for h in hypotheses.values() if has_separator(h)) + sum(
        1 for caps in references.values() for c in caps if has_separator(c)
    )
    if with_separators:
        warnings.append(f"{with_separators} caption(s) contained line separators; each was replaced by a space")
    empty_preds = sum(1 for h in hypotheses.values() if not h.strip())
    if empty_preds:
        warnings.append(f"{empty_preds} empty prediction(s) score 0, as in coco-caption")
    groups = breakdown_groups(refs, list(references), warnings) if breakdown else {}
    return Prepared(hypotheses, references, groups, _categories_of(refs.categories, references), warnings, len(missing))


def _categories_of(categories: dict[str, Optional[str]], references: dict[str, list[str]]) -> dict[str, Optional[str]]:
    """Each scored pair's category; ``categories`` itself where it holds those pairs in their order
    (one mapping of every pair, not two)."""
    if len(categories) == len(references) and all(a == b for a, b in zip(categories, references)):
        return categories
    return {p: categories.get(p) for p in references}


def missing_pairs(predictions: dict[str, str], refs: References, allow_missing: bool, warnings: list[str]) -> list[str]:
    """The reference pairs without a prediction (an error unless ``allow_missing``); a prediction
    for a pair the references do not have is always one."""
    extra = [pid for pid in predictions if pid not in refs.captions]
    if extra:
        raise EvaluationError(
            f"{len(extra)} prediction(s) for ids that are not in the references ({refs.source}): {listed_ids(extra)}. "
            "Wrong split or wrong id format?"
        )
    missing = [pid for pid in refs.captions if pid not in predictions]
    if missing and not allow_missing:
        raise EvaluationError(
            f"no prediction for {len(missing)} reference id(s): {listed_ids(missing)}; pass --allow-missing to score the rest"
        )
    if missing:
        warnings.append(f"{len(missing)} {MISSING_NOTE}")
    return missing


def scored_references(predictions: dict[str, str], refs: References, drop_empty_references: bool,
                      warnings: list[str]) -> dict[str, list[str]]:
    """The references of the predicted pairs (empty strings dropped where asked); a pair left with
    none that asks no question is an error."""
    from idc_toolkit.multiple_choice import QUESTION, asks

    questions = refs.columns.get(QUESTION) or {}
    references: dict[str, list[str]] = {}
    empty_refs = 0
    no_refs: list[str] = []
    for pid, caps in refs.captions.items():
        if pid not in predictions:
            continue
        empty_refs += sum(1 for c in caps if not c.strip())
        kept = [c for c in caps if c.strip()] if drop_empty_references else caps  # the list itself: never changed
        if not kept and not asks(questions.get(pid)):
            no_refs.append(pid)
        references[pid] = kept
    if no_refs:
        raise EvaluationError(f"pair(s) with no reference at all: {listed_ids(no_refs)}")
    if len(references) == len(refs.captions) and all(references[p] is c for p, c in refs.captions.items()):
        references = refs.captions  # every pair, as it was: one mapping of every pair, not two
    if empty_refs:
        if drop_empty_references:
            warnings.append(f"{empty_refs} empty reference(s) dropped (--drop-empty-references)")
        else:
            warnings.append(
                f"{empty_refs} empty reference(s) kept, as coco-caption keeps them (published scores include them); "
                "--drop-empty-references drops them"
            )
    return references


def breakdown_groups(refs: References, ids: list[str], warnings: list[str]) -> dict[str, list[str]]:
    """The groups each scored on its own: the categories (a pair listed under several in each),
    ``change_only`` beside no-change categories, and the viewpoint-difficulty groups."""
    from .groups import IOU_GROUPS, iou_groups

    taken = RESERVED_GROUPS | (frozenset(IOU_GROUPS) if refs.ious else frozenset())
    reserved = sorted(taken & ({str(c) for c in refs.categories.values() if c is not None}
                               | {c for cats in refs.memberships.values() for c in cats}))
    if reserved:
        raise EvaluationError(f"category name(s) {', '.join(map(repr, reserved))} are reserved for the toolkit's own "
                              f"rows ({', '.join(sorted(taken))}); rename them in {refs.source} or the category map")
    groups: dict[str, list[str]] = {}
    for pid in ids:
        for cat in refs.groups_of(pid):
            groups.setdefault(str(cat), []).append(pid)
    several = [pid for pid in ids if len(refs.memberships.get(pid, ())) > 1]
    if several:
        warnings.append(f"{len(several)} pair(s) are listed under several categories and are scored in each "
                        f"(as RCC's evaluate.py does): {listed_ids(several)}")
    rank = {name: k for k, name in enumerate(refs.category_order)}
    groups = dict(sorted(groups.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))
    if groups and NO_CHANGE_CATEGORIES & set(groups):
        groups["change_only"] = [pid for pid in ids if any(c not in NO_CHANGE_CATEGORIES for c in refs.groups_of(pid))]
    if refs.ious:
        groups.update(iou_groups(refs.ious, ids, refs.categories, refs.source))
    counts = Counter(refs.categories.get(pid) for pid in ids)
    if None in counts and len(counts) > 1:
        warnings.append(f"{counts[None]} pair(s) have no category and appear only in 'overall'")
    return groups

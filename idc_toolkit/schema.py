"""The one schema every idc-toolkit dataset shares.

Every builder writes, and every consumer (scorer, precompute passes, evaluators) reads, rows
with these columns. Defining them once here is what lets ``idc-eval --dataset X`` work for any X.

Core columns
    pair_id   string, unique within a dataset: the release's own id (Spot-the-Diff ``img_id``,
              CLEVR ``000123`` / ``000123_n``, IER ``uid``, LEVIR-CC file stem, Emu Edit and
              Syned ``<split>_<idx>`` since their ``idx`` restarts in every split)
    before    Image, the "before" image, stored as the release's own encoded bytes
    after     Image, the "after" image
    captions  list of strings: every reference exactly as released (empty strings included,
              because the field's standard reference files keep them and published scores
              depend on them)
    category  ClassLabel with the dataset's own names; absent where the release has none

Later passes add columns with :func:`add_columns` (change masks, entities); their feature
types are defined here too (:data:`MASK_FEATURES`, :data:`ENTITY_FEATURES`) so that a dataset
grows by adding columns rather than by changing the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Features

# ``datasets`` is imported inside the functions (and for the column features below, on first
# use): the scorer reads these names on every ``idc-eval --predictions``, which then starts
# without importing ``datasets`` and pandas (~1 s on 2 cores).

PAIR_ID = "pair_id"
BEFORE = "before"
AFTER = "after"
CAPTIONS = "captions"
CATEGORY = "category"
CORE_COLUMNS = (PAIR_ID, BEFORE, AFTER, CAPTIONS)

#: The toolkit's split names (builders map their release's names onto these).
SPLITS = ("train", "validation", "test")

#: Category names that mean "nothing semantic changed". Groups without them form ``change_only``.
NO_CHANGE_CATEGORIES = frozenset({"distractor", "no_change"})

#: CLEVR-Change / CLEVR-DC change types, in the order the papers' tables use.
CLEVR_CATEGORIES = ("color", "material", "add", "drop", "move", "distractor")

ImageSource = Union[Path, bytes]

#: the column features of the passes (``MASK_FEATURES``, ``ENTITY_FEATURES``, ``RDD_FEATURES``), built on first use
_PASS_FEATURES = ("MASK_FEATURES", "ENTITY_FEATURES", "RDD_FEATURES")


def __getattr__(name: str) -> Any:
    """``MASK_FEATURES``: columns added by ``idc-precompute masks``; ``ENTITY_FEATURES``: by
    ``idc-precompute entities``; ``RDD_FEATURES``: by ``--phrases rdd`` (ACR's noun text and verb
    text, one per reference, in the order of ``captions``)."""
    if name not in _PASS_FEATURES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from datasets import Image, List, Value

    features = {
        "MASK_FEATURES": {"change_mask": Image(), "change_boxes": List(List(Value("float32"), length=4)),
                          "mask_source": Value("string")},
        "ENTITY_FEATURES": {"entities": List(Value("string")), "entity_scores": List(Value("float32")),
                            "gt_entities": List(Value("string"))},
        "RDD_FEATURES": {"noun_texts": List(Value("string")), "verb_texts": List(Value("string"))},
    }[name]
    globals()[name] = features
    return features


@dataclass
class PairRecord:
    """One before/after pair as a builder yields it, before images are read.

    ``before``/``after`` are paths (read and checked by the build pipeline) or already
    encoded bytes (releases that ship images inside parquet, e.g. Emu Edit).
    """

    pair_id: str
    before: ImageSource
    after: ImageSource
    captions: list[str]
    category: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the annotation file and record this pair came from, for error messages
    source: str = ""


def pair_features(
    categories: Optional[Sequence[str]] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> Features:
    """Features of a dataset in the idc-toolkit schema.

    ``categories`` gives the ClassLabel names; ``None`` means the release has no category and
    the column is left out. ``extra`` adds dataset-specific columns after the core ones.
    """
    from datasets import ClassLabel, Features, Image, List, Value

    cols: dict[str, Any] = {
        PAIR_ID: Value("string"),
        BEFORE: Image(),
        AFTER: Image(),
        CAPTIONS: List(Value("string")),
    }
    if categories is not None:
        if len(set(categories)) != len(categories):
            raise ValueError(f"duplicate category names: {list(categories)}")
        cols[CATEGORY] = ClassLabel(names=list(categories))
    for name, feature in (extra or {}).items():
        if name in cols:
            raise ValueError(f"extra column {name!r} clashes with a core column")
        cols[name] = feature
    return Features(cols)


def add_columns(features: Features, new: Mapping[str, Any]) -> Features:
    """Return ``features`` with ``new`` columns appended (existing ones are replaced in place)."""
    from datasets import Features

    merged = dict(features)
    merged.update(new)
    return Features(merged)


def category_names(features: Features) -> Optional[list[str]]:
    """ClassLabel names of the ``category`` column, or ``None`` where the dataset has none."""
    from datasets import ClassLabel

    feature = features.get(CATEGORY)
    if feature is None:
        return None
    if isinstance(feature, ClassLabel):
        return list(feature.names)
    raise TypeError(f"column {CATEGORY!r} must be a ClassLabel, found {feature!r}")


def validate_features(features: Features) -> None:
    """Raise ``ValueError`` naming what is wrong when ``features`` does not follow the schema."""
    expected = pair_features()
    for name in CORE_COLUMNS:
        if name not in features:
            raise ValueError(f"dataset has no {name!r} column; the idc-toolkit schema needs {list(CORE_COLUMNS)}")
        if features[name] != expected[name]:
            raise ValueError(f"column {name!r} is {features[name]!r}, expected {expected[name]!r}")
    category_names(features)

"""``idc-eval check-references FILE``: every problem of a reference or predictions file, one line
each, before any scoring: JSON that does not parse (with its byte offset and what the file starts
with: CARD's reference file circulated with stray bytes before its first ``{``), ids given twice,
non-string captions, and, with a dataset, ids the dataset does not have. Empty captions are a
warning, not an error: real releases keep them (Spot-the-Diff's and CARD's reference files) and
the scorer scores them as given unless ``--drop-empty-references``.

The formats are those the scorer reads, parsed once by :func:`~.predictions.read_captions_file`
(the scorer refuses what this lists, from the same parse): a coco-caption annotation file
(``{"annotations": [{"image_id", "caption"}, ...]}``), a ``{id: caption}`` or ``{id: [captions]}``
mapping, a coco results list (``[{"image_id", "caption"}]``) and JSON Lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from idc_toolkit.options import option
from idc_toolkit.stores import STORE_DATASET

from .groups import listed_ids
from .predictions import file_problems, read_captions_file, refuse  # noqa: F401  (refuse: public here too)


@dataclass
class CheckReferencesArgs:
    """``idc-eval check-references FILE``: what else the file is checked against."""

    dataset: Optional[str] = option(None, "also check that every id is a pair of this dataset" + STORE_DATASET)
    split: str = option("test", "the dataset's split")


def check_file(path: Path | str, dataset: Optional[str] = None,
               split: str = "test") -> tuple[list[str], list[str], dict[str, int]]:
    """The problems of ``path`` (empty: none), its warnings and what it holds (``ids``, ``captions``);
    with ``dataset``, ids that split does not have are problems too."""
    parsed = read_captions_file(path)
    problems, warnings, counts = file_problems(parsed)
    if dataset is not None and counts["ids"]:
        from .predictions import load_references_dataset

        known = set(load_references_dataset(dataset, split).captions)
        absent = list(dict.fromkeys(str(r.pair_id) for r in parsed.records
                                    if r.pair_id is not None and str(r.pair_id) not in known))
        if absent:
            problems.append(f"{parsed.path}: {len(absent)} id(s) are not in {dataset} [{split}]: {listed_ids(absent)}")
    return problems, warnings, counts


def refuse_bad_file(path: Path | str) -> None:
    """:func:`refuse` of the file at ``path``."""
    refuse(read_captions_file(path))

"""Reading a dataset card: its YAML, the facts a dataset carries, the run record, the split
fingerprints, and how a derived dataset names its source. ``cards/`` renders cards; everything
that reads them reads through here."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .facts import DatasetFacts


#: card YAML key holding the dataset's facts (pair style, categories, builder)
FACTS_KEY = "idc_toolkit"
#: card YAML key holding the run record (kind, fingerprint, fields) of the run that wrote it
RUN_KEY = "idc_toolkit_run"
#: how the config's ``description`` begins when it names each split's data files (:func:`files_description`)
FILES_DESCRIPTION_PREFIX = "idc-toolkit data files"


def files_description(split_fingerprints: dict[str, str]) -> str:
    """The config's ``description``: each split's data-files fingerprint
    (``runs.fingerprint.parquet_files_fingerprint``: names and contents),
    ``"idc-toolkit data files test=1a2b... train=3c4d..."``.

    ``load_dataset(folder)`` keys its Arrow cache by the folder's name and the card's
    ``configs`` / ``dataset_info`` only, never by the data files (``datasets`` 5.2,
    ``LocalDatasetModuleFactory``). A folder rebuilt after a one-digit annotation fix has an
    equal card, and loading it returned the rows of the previous build. ``description`` is a
    ``BuilderConfig`` field, so the Hub and ``datasets`` pass it through, and it enters that
    key: any change of content is a new cache entry. Per split, so that a reader checks the
    split it reads and no other (``runs.rows.check_against_card``)."""
    return " ".join([FILES_DESCRIPTION_PREFIX, *(f"{split}={split_fingerprints[split]}" for split in sorted(split_fingerprints))])


def split_fingerprints_of(card: dict[str, Any]) -> Optional[dict[str, str]]:
    """``{split: fingerprint}`` from a card written by idc-toolkit (None for other cards)."""
    configs = card.get("configs")
    for config in configs if isinstance(configs, list) else []:
        text = config.get("description") if isinstance(config, dict) else None
        if isinstance(text, str) and text.startswith(FILES_DESCRIPTION_PREFIX):
            return dict(item.split("=", 1) for item in text[len(FILES_DESCRIPTION_PREFIX):].split() if "=" in item)
    return None


def read_card_data(folder: Path | str) -> dict[str, Any]:
    """The YAML of a local dataset folder's card (empty when it has none)."""
    import yaml

    from .errors import IDCError

    path = Path(folder) / "README.md"
    if not path.is_file():
        return {}
    try:
        return card_data(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        front = path.read_bytes().startswith(b"---")  # the YAML starts on the line after its opening ---
        where = f", line {mark.line + 1 + front}" if mark is not None else ""
        cause = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise IDCError(f"{path}{where}: the card's YAML cannot be read ({cause}); only plain YAML is read, "
                       "no tags that build Python objects") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise IDCError(f"{path}: the card cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None


def card_data(text: str) -> dict[str, Any]:
    """The YAML of a card's text (a card read from an object store, say); the caller's own copy."""
    import copy

    return copy.deepcopy(_parsed_card(text))


@lru_cache(maxsize=16)  # a scoring reads its dataset's card several times, and parsing its YAML is slow
def _parsed_card(text: str) -> dict[str, Any]:
    from huggingface_hub import DatasetCard

    return DatasetCard(text).data.to_dict()


def source_label(source: str | Path, fingerprint: Any = None) -> str:
    """How a derived dataset's card names its source in ``source_datasets``: the Hub id as is
    (``extended|org/name``); a local folder by its name and content fingerprint only, never by
    its absolute path (an upload would publish the user's directory layout)."""
    if not Path(str(source)).exists():
        return f"extended|{source}"
    if fingerprint and not isinstance(fingerprint, str):  # per-split fingerprints: one short hash of them
        import hashlib
        import json

        fingerprint = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{Path(str(source)).resolve().name} (local folder" + (f", fingerprint {fingerprint})" if fingerprint else ")")


def dataset_facts(dataset: str | Path) -> "DatasetFacts":
    """The :class:`~idc_toolkit.facts.DatasetFacts` a dataset carries in its card, read the
    same way from a local folder, a Hub copy or a derived dataset; empty facts when the
    dataset was not written by idc-toolkit (or its card cannot be reached). A card whose facts
    are malformed is an error naming it."""
    from .facts import DatasetFacts

    if Path(dataset).is_dir():
        return DatasetFacts.from_card(read_card_data(dataset).get(FACTS_KEY), f"{Path(dataset) / 'README.md'}")
    try:
        from huggingface_hub import DatasetCard

        data = DatasetCard.load(str(dataset), repo_type="dataset").data.to_dict()
    except Exception:  # offline, no card: no facts
        return DatasetFacts()
    return DatasetFacts.from_card(data.get(FACTS_KEY), f"the card of {dataset}")

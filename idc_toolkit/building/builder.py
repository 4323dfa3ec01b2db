"""The base every dataset builder extends, in the shape of ``datasets``' packaged modules.

A builder module (``builders/<name>.py``) declares a dataclass config, its card metadata and
one :class:`PairBuilder` subclass that turns the ORIGINAL raw release into
:class:`~idc_toolkit.schema.PairRecord` objects per split. Reading images, checking them,
sharding, the dataset card, the report and resuming are the pipeline's job
(:mod:`idc_toolkit.building.pipeline`), so a builder stays a small file about one format.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping, Optional

from datasets import Features

from ..errors import BuildError, RawFormatError
from ..facts import DatasetFacts
from .rawio import RawRoot, read_json
from .report import BuildReport
from ..schema import PairRecord, pair_features


@dataclass
class BuilderConfig:
    """Options shared by every builder; subclasses add their own fields."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, str]) -> "BuilderConfig":
        """Build a config from ``key=value`` strings given on the command line."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in overrides.items():
            if key not in known:
                raise BuildError(f"unknown option {key!r} for this builder; known: {sorted(known) or 'none'}")
            default = getattr(cls(), key)
            if isinstance(default, bool):
                if raw.lower() not in {"true", "false", "1", "0", "yes", "no"}:
                    raise BuildError(f"option {key!r} takes true/false, got {raw!r}")
                values[key] = raw.lower() in {"true", "1", "yes"}
            elif isinstance(default, (int, float)):
                try:
                    values[key] = type(default)(raw)
                except ValueError:
                    raise BuildError(f"option {key!r} takes a number, got {raw!r}") from None
            else:
                values[key] = raw
        return cls(**values)


@dataclass(frozen=True)
class CardMeta:
    """What the dataset card says about a release (filled into ``cards/templates``)."""

    pretty_name: str
    description: str
    license: str  # a Hub licence id ("unknown", "cc-by-nc-4.0", ...)
    license_note: str
    homepage: str
    download: str
    raw_layout: str
    citation: str
    category_note: str = ""
    task_categories: tuple[str, ...] = ("image-to-text",)
    task_ids: tuple[str, ...] = ("image-captioning",)
    #: the Hub's ``source_datasets`` (``original``: built from the release itself)
    source_datasets: tuple[str, ...] = ("original",)
    #: the card's "Personal and sensitive information" section; empty: nothing to declare
    personal_info: str = ""
    #: pairs as released, "train / validation / test" (the README's dataset table)
    size: str = ""
    #: where the images come from, in a few words (the README's dataset table)
    images_from: str = ""


class PairBuilder:
    """Turns one raw release into pairs in the idc-toolkit schema."""

    name: ClassVar[str]
    config_class: ClassVar[type[BuilderConfig]] = BuilderConfig
    card: ClassVar[CardMeta]
    categories: ClassVar[Optional[tuple[str, ...]]] = None
    #: ``scene``: two photographs of one scene (Spot-the-Diff, CLEVR, LEVIR-CC); ``edit``: an
    #: image and its edited version, possibly of another size (IER, Emu Edit, Syned,
    #: MagicBrush). Consumers read it from the card (BLIP2IDC resizes and blurs edit pairs).
    pair_style: ClassVar[str] = "scene"
    #: DatasetFacts.train_reference and prompt_preset of this release (its card records them)
    train_reference: ClassVar[str] = "random"
    prompt_preset: ClassVar[Optional[str]] = None
    extra_features: ClassVar[dict[str, Any]] = {}
    #: release split name -> toolkit split name (train / validation / test)
    split_map: ClassVar[dict[str, str]] = {"train": "train", "val": "validation", "test": "test"}
    #: paths (relative to the raw folder) that must exist
    required: ClassVar[tuple[str, ...]] = ()
    #: extra column name -> what it holds, for the card
    extra_docs: ClassVar[dict[str, str]] = {}

    def __init__(self, raw_dir: Path | str, config: Optional[BuilderConfig] = None):
        self.raw_dir = Path(raw_dir)
        self.config = config if config is not None else self.config_class()

    # -- what the pipeline asks ------------------------------------------------------------
    def features(self) -> Features:
        return pair_features(self.categories, self.extra_features)

    def facts(self) -> DatasetFacts:
        """What consumers need to know about this dataset, recorded in its card's YAML so a
        local folder, a Hub copy and a dataset derived from it are treated the same."""
        from ..schema import CATEGORY, NO_CHANGE_CATEGORIES, SPLITS, category_names

        names = category_names(self.features()) if CATEGORY in self.features() else None
        return DatasetFacts(builder=self.name, pair_style=self.pair_style, categories=tuple(names) if names else None,
                            no_change_categories=tuple(sorted(NO_CHANGE_CATEGORIES & set(names or ()))),
                            splits=tuple(s for s in SPLITS if s in self.split_names()),
                            train_reference=self.train_reference, prompt_preset=self.prompt_preset)

    def split_names(self) -> list[str]:
        return list(dict.fromkeys(self.split_map.values()))

    def raw_root(self) -> RawRoot:
        """The raw folder as :class:`~.rawio.RawRoot`: what a builder reads itself (labels) must
        resolve inside it, as images must."""
        if getattr(self, "_raw_root", (None, None))[0] != self.raw_dir:  # check_raw may move raw_dir to a subfolder
            self._raw_root = (self.raw_dir, RawRoot(self.raw_dir))
        return self._raw_root[1]

    def check_raw(self) -> None:
        """Fail early, naming every missing file, before any work starts."""
        if not self.raw_dir.is_dir():
            raise RawFormatError(self.raw_dir, "raw release folder not found")
        missing = [p for p in self.required if not (self.raw_dir / p).exists()]
        if missing:
            raise RawFormatError(
                self.raw_dir,
                f"not a {self.name} raw release: missing {', '.join(missing)}. Expected layout:\n{self.card.raw_layout}",
            )

    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        """Yield the pairs of ``split`` in a deterministic order (resuming relies on it)."""
        raise NotImplementedError

    def release_split(self, split: str) -> str:
        """The release's own name of a toolkit split (``validation`` -> ``val``, ...)."""
        return next(k for k, v in self.split_map.items() if v == split)

    def read_split_file(self, path: Path) -> dict[str, list]:
        """A ``{"train": [...], "val": [...], "test": [...]}`` file, its split names checked."""
        data = read_json(path)
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise RawFormatError(path, "expected {\"train\": [...], \"val\": [...], \"test\": [...]}")
        unknown = set(data) - set(self.split_map)
        if unknown:
            raise RawFormatError(path, f"unknown split value(s) {sorted(unknown)}; expected {sorted(self.split_map)}")
        return data

    def summarize(self, report: BuildReport) -> None:
        """Whole-release notes and counters (run once, after every split is written)."""

    def raw_files(self) -> list[str]:
        """Annotation files read, for the card."""
        return list(self.required)

    def note_unread_files(self, report: BuildReport, folder: Path, pattern: str) -> None:
        """Note every file matching ``pattern`` in ``folder`` that is not among :meth:`raw_files`
        (e.g. a split file of no known split): nothing in a release is ignored silently."""
        read = {(self.raw_dir / f).resolve() for f in self.raw_files()}
        for path in sorted(folder.glob(pattern)):
            if path.resolve() not in read:
                report.note(None, str(path), None, f"not read: not one of {', '.join(self.split_map)} split files")


def caption_list(value: Any) -> list[str]:
    """Check that ``value`` is a list of strings (empty strings allowed) and return it.

    Raises ``ValueError`` with the reason; builders turn it into a skip in the report.
    """
    if not isinstance(value, list):
        raise ValueError(f"captions must be a list of strings, found {type(value).__name__}")
    bad = [i for i, c in enumerate(value) if not isinstance(c, str)]
    if bad:
        raise ValueError(f"caption {bad[0]} is {type(value[bad[0]]).__name__}, not a string")
    if not value:
        raise ValueError("no caption at all")
    return list(value)


def list_images(folder: Path) -> set[str]:
    """File names in ``folder`` (empty set if it does not exist), for unannotated-image counts."""
    if not folder.is_dir():
        return set()
    return {p.name for p in folder.iterdir() if p.is_file()}

"""The facts a dataset carries about itself, typed: written by builds and passes, read back once.

Like ``datasets.DatasetInfo``, :class:`DatasetFacts` travels in the dataset card (YAML key
``idc_toolkit``), so a local build, a Hub copy of it and a dataset derived from it by
``idc-precompute`` or ``idc-augment`` are treated the same by every consumer (the training
recipes' per-dataset defaults, BLIP2IDC's resize + blur, DAVIR's entity check).

It is frozen and read through :meth:`DatasetFacts.from_card` only: a key it does not know,
or a value of the wrong type, is an error naming the card, never a silent default. Writers
build it with keyword arguments, so a misspelt fact fails where it is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping, Optional

from .errors import IDCError

#: ``scene``: two photographs of one scene (Spot-the-Diff, CLEVR, LEVIR-CC); ``edit``: an image
#: and its edited version (IER, Emu Edit, Syned, MagicBrush), which BLIP2IDC resizes and blurs.
PAIR_STYLES = ("scene", "edit")
TRAIN_REFERENCES = ("random", "shortest", "consensus")
#: facts a card carries only where they differ from the default, so the cards of every other
#: dataset keep their bytes
WRITTEN_WHERE_SET = ("train_reference", "prompt_preset")
#: what cards written before those facts existed meant by their builder
FACTS_BEFORE_WRITTEN = {"ier": {"train_reference": "shortest"}, "levir_cc": {"prompt_preset": "remote_sensing"}}


@dataclass(frozen=True)
class DatasetFacts:
    """What consumers need to know about a dataset (see the module docstring)."""

    #: the builder of the raw release the rows come from (``clevr_change``, ``ier``, ...);
    #: ``None`` for a dataset not built by the toolkit. Derived datasets keep their source's.
    builder: Optional[str] = None
    pair_style: Optional[str] = None
    categories: Optional[tuple[str, ...]] = None
    no_change_categories: tuple[str, ...] = ()
    splits: tuple[str, ...] = ()
    #: the passes that made this dataset from its build, in order (``masks``, ``entities``, ``augment``)
    derived_by: tuple[str, ...] = ()
    #: ``idc-precompute entities``: which strategy retrieved the ``entities`` column, and the phrases
    entities_strategy: Optional[str] = None
    entities_phrases: Optional[str] = None
    #: procedural demo data (``idc-demo``), never a release
    demo: bool = False
    #: which reference a training pair learns from in an epoch: ``random`` (drawn, seeded), or
    #: ``shortest`` (IER, as BLIP2IDC's code trains it)
    train_reference: str = "random"
    #: the VLM prompt preset the dataset calls for (``remote_sensing`` for LEVIR-CC); ``None``:
    #: the one of its pair style
    prompt_preset: Optional[str] = None

    def __post_init__(self) -> None:
        if self.pair_style is not None and self.pair_style not in PAIR_STYLES:
            raise IDCError(f"pair_style must be one of {', '.join(PAIR_STYLES)}, not {self.pair_style!r}")
        if self.train_reference not in TRAIN_REFERENCES:
            raise IDCError(f"train_reference must be one of {', '.join(TRAIN_REFERENCES)}, not {self.train_reference!r}")

    @classmethod
    def from_card(cls, data: Optional[Mapping[str, Any]], where: str = "the dataset card") -> "DatasetFacts":
        """The facts of a card's ``idc_toolkit`` mapping (``None``: a dataset from elsewhere)."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise IDCError(f"{where}: its idc_toolkit facts are a {type(data).__name__}, not a mapping")
        data = dict(data)
        if data.get("builder") == "augment":  # cards written before derived_by existed
            data["builder"], data["derived_by"] = None, ["augment"]
        for name, value in FACTS_BEFORE_WRITTEN.get(data.get("builder"), {}).items():
            data.setdefault(name, value)
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise IDCError(f"{where}: unknown dataset fact(s) {', '.join(map(repr, unknown))}; "
                           f"known: {', '.join(known)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            default = getattr(cls(), name)
            if name in ("categories", "no_change_categories", "splits", "derived_by"):
                if value is not None and not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
                    raise IDCError(f"{where}: dataset fact {name!r} must be a list of strings, not {value!r}")
                value = tuple(value) if value is not None else (None if name == "categories" else ())
            elif name == "demo":
                if not isinstance(value, bool):
                    raise IDCError(f"{where}: dataset fact 'demo' must be true or false, not {value!r}")
            elif value is not None and not isinstance(value, str):
                raise IDCError(f"{where}: dataset fact {name!r} must be a string, not {value!r}")
            values[name] = value if value is not None or default is None else default
        try:
            return cls(**values)
        except IDCError as exc:
            raise IDCError(f"{where}: {exc}") from None

    def to_card(self) -> dict[str, Any]:
        """The YAML mapping written into the card (lists, not tuples)."""
        default = DatasetFacts()
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()
                if k not in WRITTEN_WHERE_SET or v != getattr(default, k)}

    def derived(self, step: str, **changes: Any) -> "DatasetFacts":
        """The facts of a dataset made from this one by pass ``step``."""
        return replace(self, derived_by=(*self.derived_by, step), **changes)

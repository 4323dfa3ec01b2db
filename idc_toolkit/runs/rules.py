"""The one rule every output of a run is held to, wherever it lies (a local folder, or the
object store a staged run is published to: :mod:`.publish`).

* Files that no run of ours wrote are never overwritten and never mixed with: refused, with or
  without ``--overwrite``.
* What a run of ours writes (``owned``), found without the record of that run, is refused too:
  nothing says it is ours.
* A run of ours with other settings is refused naming what differs, unless ``--overwrite``,
  which replaces it (only its own entries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from ..errors import RunError
from .fingerprint import differences

#: the hidden folder of a run's state, in a local folder and in a destination alike
STATE_DIR = ".idc_run"

@dataclass(frozen=True)
class RunSpec:
    """What a run is, for judging an output against it."""

    kind: str
    fingerprint: str
    fields: Mapping[str, Any]
    owned: tuple[str, ...]
    tolerated: tuple[str, ...] = ()


def card_text_record(text: str) -> Optional[dict[str, Any]]:
    """The run record in a card's YAML (``None`` when it names none or cannot be read)."""
    import yaml

    from ..card_data import RUN_KEY, card_data

    try:
        record = card_data(text).get(RUN_KEY)
    except (ValueError, yaml.YAMLError):  # an unreadable card records no run
        return None
    return record if isinstance(record, dict) else None


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def judge_output(where: str, names: Iterable[str], present: Iterable[str], record: Optional[Mapping[str, Any]],
                 spec: RunSpec, overwrite: bool) -> bool:
    """Hold an output to the rule above: ``names`` are its visible entries, ``present`` those of
    ``spec.owned`` that exist, ``record`` the record of the run of ours found there. Raises
    :class:`RunError` in one line naming ``where``; returns whether the run found there is to be
    replaced (``--overwrite`` over a record)."""
    known = set(spec.owned) | set(spec.tolerated)
    foreign = sorted(n for n in names if not n.startswith(".") and n not in known)
    if foreign:
        raise RunError(f"{where} already holds files that are not an idc-toolkit run ({', '.join(foreign[:5])}"
                       f"{', ...' if len(foreign) > 5 else ''}); choose another --out (--overwrite never removes them)")
    present = list(present)
    if record is None and present:
        raise RunError(f"{where} holds {', '.join(present)} without the record of an idc-toolkit run; "
                       "choose another --out (--overwrite only replaces what a run of ours wrote)")
    if record is None:
        return False
    if overwrite:
        return True
    if record.get("fingerprint") != spec.fingerprint:
        diff = differences(record.get("fields", {}), spec.fields)
        shown = "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
        what = record.get("kind", "another run")
        raise RunError(f"{where} holds {_article(what)} {what} run with other settings ({shown or 'fingerprint differs'}); "
                       "pass --overwrite to replace it, or choose another --out")
    return False

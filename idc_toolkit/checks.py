"""Range checks of settings, shared by the command lines (as argparse types) and the Python API.

A value that would make a run meaningless (``--epochs 0``, ``--lr inf``, ``--batch-size 0``,
``--limit -3``) is refused where it is parsed, in one line naming the option, never turned
into a default or found after hours of work.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, Optional

from .errors import IDCError


def _number(option: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool):
        raise IDCError(f"{option} {value!r}: expected a number")
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise IDCError(f"{option} {value!r}: expected {'an integer' if kind is int else 'a number'}") from None
    if kind is int and isinstance(value, float) and value != number:
        raise IDCError(f"{option} {value!r}: expected an integer")
    if kind is float and not math.isfinite(number):
        raise IDCError(f"{option} {value!r}: must be a finite number")
    return number


def _at_least(option: str, value: Any, kind: type, low: float, strict: bool) -> Any:
    x = _number(option, value, kind)
    if x < low or (strict and x == low):
        bound = f"greater than {low:g}" if strict else ("at least 1" if (kind is int and low == 1) else f"{low:g} or more")
        raise IDCError(f"{option} {value!r}: must be {bound}")
    return x


def positive_int(option: str, value: Any) -> int:
    return _at_least(option, value, int, 1, strict=False)


def non_negative_int(option: str, value: Any) -> int:
    return _at_least(option, value, int, 0, strict=False)


#: the seeds a run takes: numpy's and torch's generators, and the Trainer's, take 32-bit seeds
SEED_MAX = 2**32 - 1


def seed(option: str, value: Any) -> int:
    x = non_negative_int(option, value)
    if x > SEED_MAX:
        raise IDCError(f"{option} {value!r}: must be at most {SEED_MAX} (2**32 - 1)")
    return x


def each_seed(option: str, value: Any) -> Any:
    """A :func:`seed`, or a list of them (checked value by value on the command line)."""
    if isinstance(value, (list, tuple)):
        return [seed(option, v) for v in value]
    return seed(option, value)


def at_most(high: float, check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """``check``, and the value no larger than ``high`` (a figure's dpi: 100,000 asked for terabytes)."""

    def bounded(option: str, value: Any) -> Any:
        x = check(option, value)
        if x > high:
            raise IDCError(f"{option} {value!r}: must be at most {high:g}")
        return x

    bounded.__name__ = check.__name__
    return bounded


def model_folder(option: str, value: Any) -> Any:
    """A model named by a Hub id or a local folder: a local path that exists must be a folder
    holding the model's ``config.json`` (``/etc`` is refused here, not deep inside transformers)."""
    from pathlib import Path

    path = Path(str(value)).expanduser()
    if path.is_file():
        raise IDCError(f"{option}: {value} is a file, not a model folder (one holding config.json) or a Hub id")
    if path.is_dir() and not (path / "config.json").is_file():
        raise IDCError(f"{option}: {value} is a folder without config.json, not a model; name a model folder or a Hub id")
    return value


def positive_float(option: str, value: Any) -> float:
    return _at_least(option, value, float, 0.0, strict=True)


def non_negative_float(option: str, value: Any) -> float:
    return _at_least(option, value, float, 0.0, strict=False)


def unit_interval(option: str, value: Any) -> float:
    x = _number(option, value, float)
    if not 0.0 <= x <= 1.0:
        raise IDCError(f"{option} {value!r}: must lie in [0, 1]")
    return x


def optional(check: Callable[[str, Any], Any], option: str, value: Any) -> Optional[Any]:
    return None if value is None else check(option, value)


def arg_type(check: Callable[[str, Any], Any], option: str) -> Callable[[str], Any]:
    """``check`` as an argparse ``type=``: argparse prints the one line and exits 2."""

    def parse(text: str) -> Any:
        try:
            return check(option, text)
        except IDCError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None

    parse.__name__ = check.__name__  # argparse names the type in its message
    return parse

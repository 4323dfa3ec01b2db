"""Options written once: a dataclass field holds an option's default, help, range check and
choices, and the command line is derived from it (the ``TrainingArguments`` + ``HfArgumentParser``
way), so a runner and a recipe that share an option share its one definition."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, Field, field, fields
from typing import Any, Callable, Optional, Sequence


def option(default: Any, help: str, *, check: Optional[Callable[[str, Any], Any]] = None,
           choices: Optional[Sequence[str]] = None, metavar: Optional[str] = None) -> Any:
    """A dataclass field that is also a ``--name-with-dashes`` option."""
    return field(default=default, metadata={"help": help, "check": check, "choices": choices, "metavar": metavar})


def flag_of(f: Field) -> str:
    """The option a field is on the command line: ``--name-with-dashes``; a switch that is on by
    default is turned off by ``--no-name``."""
    dashed = f.name.replace("_", "-")
    return f"--no-{dashed}" if f.default is True else f"--{dashed}"


def add_options(group: argparse._ArgumentGroup, options_cls: type, names: Sequence[str], prefix: str = "") -> None:
    """Add the fields ``names`` of ``options_cls`` to ``group`` as options (``prefix`` starts each
    help); a field whose default is a bool is a switch (:func:`flag_of`)."""
    from .checks import arg_type

    by_name = {f.name: f for f in fields(options_cls)}
    for name in names:
        f = by_name[name]
        flag, meta = flag_of(f), f.metadata
        if isinstance(f.default, bool):
            group.add_argument(flag, dest=name, action="store_false" if f.default else "store_true", help=prefix + meta["help"])
            continue
        kwargs: dict[str, Any] = {"default": None if f.default is MISSING else f.default, "help": prefix + meta["help"]}
        if meta.get("check"):
            kwargs["type"] = arg_type(meta["check"], flag)
        if meta.get("choices"):
            kwargs["choices"] = list(meta["choices"])
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        group.add_argument(flag, **kwargs)

"""Options written once: a dataclass field holds an option's default, help, range check and
choices, and the command line is derived from it (the ``TrainingArguments`` + ``HfArgumentParser``
way), so a runner and a recipe that share an option share its one definition."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, field, fields
from typing import Any, Callable, Optional, Sequence


def option(default: Any, help: str, *, check: Optional[Callable[[str, Any], Any]] = None,
           choices: Optional[Sequence[str]] = None, metavar: Optional[str] = None) -> Any:
    """A dataclass field that is also a ``--name-with-dashes`` option."""
    return field(default=default, metadata={"help": help, "check": check, "choices": choices, "metavar": metavar})


def add_options(group: argparse._ArgumentGroup, options_cls: type, names: Sequence[str], prefix: str = "") -> None:
    """Add the fields ``names`` of ``options_cls`` to ``group`` as options (``prefix`` starts each help)."""
    from .checks import arg_type

    by_name = {f.name: f for f in fields(options_cls)}
    for name in names:
        f = by_name[name]
        flag, meta = f"--{name.replace('_', '-')}", f.metadata
        kwargs: dict[str, Any] = {"default": None if f.default is MISSING else f.default, "help": prefix + meta["help"]}
        if meta.get("check"):
            kwargs["type"] = arg_type(meta["check"], flag)
        if meta.get("choices"):
            kwargs["choices"] = list(meta["choices"])
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        group.add_argument(flag, **kwargs)

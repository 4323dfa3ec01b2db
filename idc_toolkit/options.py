"""Options written once: a dataclass field holds an option's default, help, range check and
choices, and the command line is derived from it (the ``TrainingArguments`` + ``HfArgumentParser``
way), so a runner and a recipe that share an option share its one definition."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, Field, field, fields
from typing import Any, Callable, Optional, Sequence, Union


Choices = Optional[Union[Sequence[str], Callable[[], Sequence[str]]]]
#: how a field enters a run's fingerprint and record (:func:`idc_toolkit.runs.fingerprint.recorded`):
#: ``True`` its value; ``False`` not at all (where the output goes, whether to replace it);
#: ``"content"`` a file's or folder's content hash; a function of the value: what it returns
Record = Union[bool, str, Callable[[Any], Any]]


def option(default: Any, help: Union[str, Callable[[], str]], *, check: Optional[Callable[[str, Any], Any]] = None,
           choices: Choices = None, metavar: Optional[str] = None, nargs: Optional[str] = None,
           flag: Optional[str] = None, record: Record = True, repeat: bool = False, aliases: Sequence[str] = ()) -> Any:
    """A dataclass field that is also a ``--name-with-dashes`` option (or ``flag``). ``help`` and
    ``choices`` may be functions of no arguments, asked when the parser is built (a registry's
    names); ``nargs="+"`` takes a list (a tuple default stays immutable); ``repeat``: a list the
    option adds one value to each time it is given (``--eval A --eval B``); ``aliases``: other flags
    it answers to (an old name); ``record``: see :data:`Record`."""
    metadata = {"help": help, "check": check, "choices": choices, "metavar": metavar, "nargs": nargs, "flag": flag,
                "record": record, "repeat": repeat, "aliases": tuple(aliases)}
    if isinstance(default, tuple):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def required(help: str, *, choices: Choices = None, metavar: Optional[str] = None, record: Record = True,
             aliases: Sequence[str] = ()) -> Any:
    """A dataclass field without default: a required option."""
    return field(metadata={"help": help, "check": None, "choices": choices, "metavar": metavar, "record": record,
                           "aliases": tuple(aliases)})


def python_only(help: str, default_factory: Callable[[], Any], *, check: Optional[Callable[[str, Any], Any]] = None,
                record: Record = True) -> Any:
    """A dataclass field the command line fills its own way (a model's own options, NAME=VALUE pairs);
    ``check`` runs on it as on any option (:func:`check_fields`)."""
    return field(default_factory=default_factory, metadata={"help": help, "cli": False, "check": check, "record": record})


def name_values(help: str, flag: str, *, check: Optional[Callable[[str, Any], Any]] = None, record: Record = True) -> Any:
    """A dict field the command line fills with a repeatable ``flag NAME=VALUE`` (each value read as
    YAML: ``warmup_steps=100`` is a number, ``torch_compile=true`` a bool)."""
    return field(default_factory=dict, metadata={"help": help, "check": check, "flag": flag, "metavar": "NAME=VALUE",
                                                 "name_values": True, "record": record})


def name_value(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` -> ``(name, value read as YAML)``; the type of a :func:`name_values` option."""
    import yaml

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=value")
    name, value = text.split("=", 1)
    return name.strip(), yaml.safe_load(value) if value else ""


#: the words that make a setting's name a secret's (``hub_token``, ``api_key``, ``secret_access_key``, ``password``)
SECRET_WORDS = frozenset({"token", "key", "secret", "password", "passwd", "credential", "credentials", "apikey"})
#: what every record, card and log shows in place of a secret's value
MASK = "***"


def is_secret(name: object) -> bool:
    """Whether a setting named ``name`` holds a secret: one of its words (split at ``_``, ``-``,
    ``.``, spaces and camelCase humps) is one of :data:`SECRET_WORDS` (``max_new_tokens`` is not)."""
    import re

    words = re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", str(name))
    return any(w.lower() in SECRET_WORDS for w in words)


def masked(value: Any) -> Any:
    """``value`` as records, cards and logs show it: under every mapping key that names a secret
    (:func:`is_secret`), at any depth, the value is :data:`MASK` (``None`` stays ``None``: unset)."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {k: (MASK if v is not None and is_secret(k) else masked(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(masked(v) for v in value)
    return value


def check_fields(obj: Any) -> None:
    """Run each field's range check and choice list on the value set (``None`` means unset): a
    dataclass's ``__post_init__`` calls it, so Python and the command line refuse the same values
    alike. Choices given as a function (a registry's names) are left to that registry, whose
    error names them too."""
    from .errors import IDCError

    for f in fields(obj):
        check, choices, value = f.metadata.get("check"), f.metadata.get("choices"), getattr(obj, f.name)
        if value is None:
            continue
        if check is not None:
            object.__setattr__(obj, f.name, check(flag_of(f), value))
        if choices is not None and not callable(choices):
            for item in value if isinstance(value, list) else [value]:
                if item not in choices:
                    raise IDCError(f"unknown {flag_of(f)} {item!r}; choose {', '.join(choices)}")


def from_namespace(options_cls: type, namespace: argparse.Namespace, names: Optional[Sequence[str]] = None,
                   **given: Any) -> Any:
    """``options_cls`` made from a parsed command line: the fields ``names`` (default: every
    command-line field, :func:`cli_fields`) read from ``namespace``, plus ``given``."""
    names = cli_fields(options_cls) if names is None else names
    return options_cls(**{name: getattr(namespace, name) for name in names}, **given)


def with_fields(options_cls: type, args: Any = None, **fields: Any) -> Any:
    """The options of a call shaped ``fn(inputs…, args=None, **fields)``: ``args`` (an
    ``options_cls``) with ``fields`` replacing its values, or an ``options_cls`` made of ``fields``."""
    from dataclasses import replace

    if args is None:
        return options_cls(**fields)
    return replace(args, **fields) if fields else args


def taken(fields_: dict[str, Any], options_cls: type) -> dict[str, Any]:
    """The entries of ``fields_`` that name a field of ``options_cls``, removed from it: a call's
    keywords split between the options classes it takes."""
    names = {f.name for f in fields(options_cls)}
    return {name: fields_.pop(name) for name in list(fields_) if name in names}


def help_of(options_cls: type, name: str) -> str:
    """The help written on one field."""
    text = next(f.metadata["help"] for f in fields(options_cls) if f.name == name)
    return text() if callable(text) else text


def cli_fields(options_cls: type) -> list[str]:
    """The fields of ``options_cls`` that are command-line options, in their order."""
    return [f.name for f in fields(options_cls) if f.metadata.get("cli", True)]


def flag_of(f: Field) -> str:
    """The option a field is on the command line: ``--name-with-dashes``; a switch that is on by
    default is turned off by ``--no-name``."""
    if f.metadata.get("flag"):
        return f.metadata["flag"]
    dashed = f.name.replace("_", "-")
    return f"--no-{dashed}" if f.default is True else f"--{dashed}"


def add_options(group: argparse._ArgumentGroup, options_cls: type, names: Sequence[str], prefix: str = "",
                required: Sequence[str] = ()) -> None:
    """Add the fields ``names`` of ``options_cls`` to ``group`` as options (``prefix`` starts each
    help); a field whose default is a bool is a switch (:func:`flag_of`); ``required``: fields the
    command line asks for although Python has a default for them."""
    from .checks import arg_type

    by_name = {f.name: f for f in fields(options_cls)}
    for name in names:
        f = by_name[name]
        flag, meta = flag_of(f), f.metadata
        flags = (flag, *meta.get("aliases", ()))
        text = prefix + help_of(options_cls, name)
        if meta.get("name_values"):  # a list of (name, value) pairs: the dataclass makes it a dict
            group.add_argument(flag, dest=name, action="append", type=name_value, default=[], metavar=meta["metavar"],
                               help=text)
            continue
        if isinstance(f.default, bool):
            group.add_argument(*flags, dest=name, action="store_false" if f.default else "store_true", help=text)
            continue
        kwargs: dict[str, Any] = {"help": text, "dest": name}
        if name in required or (f.default is MISSING and f.default_factory is MISSING):
            kwargs["required"] = True
        else:
            kwargs["default"] = f.default_factory() if f.default is MISSING else f.default
        if meta.get("nargs"):
            kwargs["nargs"] = meta["nargs"]
        if meta.get("repeat"):
            kwargs["action"] = "append"
        if meta.get("check"):
            kwargs["type"] = arg_type(meta["check"], flag)
        if meta.get("choices"):
            choices = meta["choices"]
            kwargs["choices"] = list(choices() if callable(choices) else choices)
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        group.add_argument(*flags, **kwargs)

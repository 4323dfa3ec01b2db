"""One registry for every pluggable kind: datasets (builders), metrics, models and protocols.

Entries are ``"module:Object"`` strings, as in lm-evaluation-harness, resolved on first use, so
listing the choices imports nothing heavy; a registry given a ``base_cls`` (lm-eval's
``Registry(base_cls=...)``) refuses an entry that does not resolve to a subclass of it. Every consumer (a CLI's choices and help, the Python
API, the docs tables) asks the registry; adding a plug-in is one module and one line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from importlib import import_module
from typing import Any, Callable, Iterator, Optional, Union

from .errors import IDCError


def _resolve(target: str) -> Any:
    """The object a ``"module:Object"`` (or ``"module"``) string names."""
    module, _, attr = target.partition(":")
    loaded = import_module(module)
    return getattr(loaded, attr) if attr else loaded


class UnknownName(IDCError, LookupError):
    """A name that no registry entry has; the message names the choices."""


class Registry(Mapping):
    """``name -> "module:Object"``, resolved lazily; a read-only mapping of the resolved objects."""

    def __init__(self, kind: str, entries: dict[str, str], summary: Optional[Callable[[Any], str]] = None,
                 base_cls: Union[type, str, None] = None):
        self.kind, self._summary = kind, summary
        self._entries = dict(entries)
        self._loaded: dict[str, Any] = {}
        self._base_cls = base_cls  # a class, or its "module:Class" (resolved with the first entry)

    @property
    def base_cls(self) -> Optional[type]:
        """The class every entry must be (a subclass of), where the registry names one."""
        if isinstance(self._base_cls, str):
            self._base_cls = _resolve(self._base_cls)
        return self._base_cls

    def get(self, name: str) -> Any:  # type: ignore[override]
        """The object registered as ``name``; an unknown name, or an entry that is not a subclass of
        :attr:`base_cls`, is an error naming the choices or the entry."""
        if name not in self._entries:
            raise UnknownName(f"unknown {self.kind} {name!r}; choose from {', '.join(self.names())}")
        if name not in self._loaded:
            obj, base = _resolve(self._entries[name]), self.base_cls
            if base is not None and not (isinstance(obj, type) and issubclass(obj, base)):
                raise IDCError(f"{self.kind} {name!r} ({self._entries[name]}) is not a subclass of "
                               f"{base.__module__}.{base.__qualname__}")
            self._loaded[name] = obj
        return self._loaded[name]

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)

    def describe(self, name: str) -> str:
        """One line: the registry's ``summary`` of the object, else its ``summary`` or ``description``
        text, else its docstring's first line."""
        obj = self.get(name)
        if self._summary is not None:
            return self._summary(obj)
        texts = [getattr(obj, attr, None) for attr in ("summary", "description")] + [(obj.__doc__ or "").strip()]
        text = next((t for t in texts if isinstance(t, str) and t.strip()), "")
        return text.strip().splitlines()[0].strip() if text else ""

    def register(self, name: str, target: str) -> None:
        """Add an entry (a plug-in outside the package, or a test's toy); a taken name is an error."""
        if name in self._entries:
            raise IDCError(f"{self.kind} {name!r} is already registered ({self._entries[name]})")
        self._entries[name] = target

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)
        self._loaded.pop(name, None)

    @contextlib.contextmanager
    def added(self, name: str, target: str):
        """The registry with one more entry for the duration of a ``with`` block (a test's toy plug-in)."""
        self.register(name, target)
        try:
            yield self
        finally:
            self.unregister(name)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

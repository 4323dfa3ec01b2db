"""Sequences read on demand where a list per item would be held for as long as a metric computes."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any


class Slices(Sequence):
    """Each pair's tokenized references as a slice of one flat list, made when read: a list per
    pair would hold ~100 bytes a pair for as long as the metrics compute."""

    def __init__(self, flat: list[str], counts: Sequence[int]) -> None:
        self.flat = flat
        self.starts = array("q", [0])  # 8 bytes a pair; read back as ints
        self.starts.extend(accumulate(counts))

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self.flat[self.starts[k]: self.starts[k + 1]]

    def __iter__(self):
        flat, starts = self.flat, self.starts
        return (flat[starts[k]: starts[k + 1]] for k in range(len(starts) - 1))

    def __eq__(self, other) -> bool:  # as the list of lists it stands for
        return isinstance(other, (list, Slices)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class Picked(Sequence):
    """``items[i] for i in at``, each read when asked for: a job's list of the pairs it aligns
    would hold each pair's references again (``items`` may be a :class:`Slices`)."""

    def __init__(self, items: Sequence, at: Sequence[int]) -> None:
        self.items, self.at = items, at

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, k) -> Any:
        if isinstance(k, slice):
            return [self.items[i] for i in self.at[k]]
        return self.items[self.at[k]]

"""The scorer's on-demand sequences read exactly as the lists they stand for."""

import random

import pytest

from idc_toolkit.metrics.views import Picked, Slices


def test_slices_read_as_the_list_of_lists_they_stand_for():
    rng = random.Random(3)
    lists = [[f"s{k}-{j}" for j in range(rng.randrange(0, 6))] for k in range(200)]  # empty ones too
    view = Slices([x for xs in lists for x in xs], [len(xs) for xs in lists])
    assert len(view) == len(lists) and list(view) == lists and view == lists
    for k in (0, 1, 57, 199, -1, -200):
        assert view[k] == lists[k]
    for part in (slice(0, 0), slice(3, 40), slice(None, None, 7), slice(-5, None), slice(150, 400)):
        assert view[part] == lists[part]
    for k in (200, -201):
        with pytest.raises(IndexError):
            view[k]
    assert Slices([], []) == [] and len(Slices([], [])) == 0


def test_picked_reads_the_items_at_its_positions():
    items = Slices(list("abcdefgh"), [2, 0, 3, 1, 2])
    at = [4, 0, 0, 2]
    view = Picked(items, at)
    assert len(view) == 4 and [view[k] for k in range(4)] == [items[i] for i in at]
    assert view[2:4] == [items[0], items[2]] and view[:] == [items[i] for i in at]

"""Per-dataset facts travel in the card: a local build, a Hub-style copy of it (README + data
only) and an augmented dataset are treated the same by the consumers that need them."""

import shutil

import pytest

from idc_toolkit.building.pipeline import build_dataset, make_builder
from idc_toolkit.builders import BUILDERS
from idc_toolkit.cards import dataset_facts
from idc_toolkit.errors import IDCError

from conftest import make_emu_edit


def test_every_builder_declares_its_pair_style_and_categories():
    edit = {name for name, cls in BUILDERS.items() if cls.pair_style == "edit"}
    assert edit == {"ier", "emu_edit", "syned", "magicbrush"}
    assert BUILDERS["levir_cc"](".").facts()["no_change_categories"] == ["no_change"]
    assert BUILDERS["spot_the_diff"](".").facts()["categories"] is None


def test_a_copy_without_build_files_keeps_the_facts_and_blip2idc_preprocessing(tmp_path):
    from idc_toolkit.models.blip2idc import Blip2IDCRunner

    raw = make_emu_edit(tmp_path / "emu", {"validation": [{"instruction": "add a hat", "task": "add", "idx": 0}],
                                           "test": [{"instruction": "remove the cat", "task": "remove", "idx": 0}]})
    out = tmp_path / "built"
    build_dataset(make_builder("emu_edit", raw), out, progress=False)
    hub_copy = tmp_path / "hub_copy"  # what `hf download` of the pushed folder gives: no build_report.json
    hub_copy.mkdir()
    shutil.copy(out / "README.md", hub_copy / "README.md")
    shutil.copytree(out / "data", hub_copy / "data")
    assert dataset_facts(out) == dataset_facts(hub_copy)
    assert dataset_facts(hub_copy)["pair_style"] == "edit" and dataset_facts(hub_copy)["builder"] == "emu_edit"
    cols = ["pair_id", "before", "after"]
    Blip2IDCRunner.check_dataset(cols, dataset_facts(hub_copy), {}, "copy")  # no error: the card says "edit"
    with pytest.raises(IDCError, match="records no pair style .* pass --pair-style"):
        Blip2IDCRunner.check_dataset(cols, {}, {}, "a dataset from elsewhere")
    Blip2IDCRunner.check_dataset(cols, {}, {"pair_style": "edit"}, "a dataset from elsewhere")


def test_davir_refuses_entities_retrieved_by_another_strategy():
    from idc_toolkit.models.davir import DavirRunner

    cols = ["pair_id", "before", "after", "entities"]
    DavirRunner.check_dataset(cols, {"entities_strategy": "davir"}, {}, "ok")
    DavirRunner.check_dataset(cols, {}, {}, "entities of unknown origin")
    with pytest.raises(IDCError, match="retrieved with the 'cheer' strategy .* --strategy davir"):
        DavirRunner.check_dataset(cols, {"entities_strategy": "cheer"}, {}, "cheer entities")

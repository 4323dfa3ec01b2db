"""Per-dataset facts travel in the card: a local build, a Hub-style copy of it (README + data
only) and an augmented dataset are treated the same by the consumers that need them."""

import shutil

import pytest

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.builders import BUILDERS
from idc_toolkit.card_data import dataset_facts
from idc_toolkit.errors import IDCError
from idc_toolkit.facts import DatasetFacts

from conftest import make_emu_edit


def test_every_builder_declares_its_pair_style_and_categories():
    edit = {name for name, cls in BUILDERS.items() if cls.pair_style == "edit"}
    assert edit == {"ier", "emu_edit", "syned", "magicbrush", "img_diff"}  # an editor made the after image
    assert BUILDERS["levir_cc"](".").facts().no_change_categories == ("no_change",)
    assert BUILDERS["spot_the_diff"](".").facts().categories is None


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
    assert dataset_facts(hub_copy).pair_style == "edit" and dataset_facts(hub_copy).builder == "emu_edit"
    cols = ["pair_id", "before", "after"]
    Blip2IDCRunner.check_dataset(dataset_facts(hub_copy), cols, {}, "copy")  # no error: the card says "edit"
    with pytest.raises(IDCError, match="records no pair style .* pass --pair-style"):
        Blip2IDCRunner.check_dataset(DatasetFacts(), cols, {}, "a dataset from elsewhere")
    Blip2IDCRunner.check_dataset(DatasetFacts(), cols, {"pair_style": "edit"}, "a dataset from elsewhere")


def test_davir_refuses_entities_retrieved_by_another_strategy():
    from idc_toolkit.models.davir import DavirRunner

    cols = ["pair_id", "before", "after", "entities"]
    DavirRunner.check_dataset(DatasetFacts(entities_strategy="davir"), cols, {}, "ok")
    DavirRunner.check_dataset(DatasetFacts(), cols, {}, "entities of unknown origin")
    with pytest.raises(IDCError, match="retrieved with the 'cheer' strategy .* --strategy davir"):
        DavirRunner.check_dataset(DatasetFacts(entities_strategy="cheer"), cols, {}, "cheer entities")


def test_facts_are_typed_a_misspelt_fact_is_an_error_naming_the_card(tmp_path):
    with pytest.raises(TypeError):
        DatasetFacts(buidler="clevr_change")  # a writer's typo fails where it is written
    with pytest.raises(IDCError, match=r"card.md: unknown dataset fact\(s\) 'dataset'"):
        DatasetFacts.from_card({"dataset": "clevr_change"}, "card.md")  # the key the old recipes read
    with pytest.raises(IDCError, match="'categories' must be a list of strings"):
        DatasetFacts.from_card({"categories": "color"}, "card.md")
    with pytest.raises(IDCError, match="pair_style must be one of scene, edit"):
        DatasetFacts.from_card({"pair_style": "stacked"}, "card.md")
    facts = BUILDERS["clevr_change"](".").facts()
    assert DatasetFacts.from_card(facts.to_card()) == facts
    assert facts.derived("masks").derived("entities", entities_strategy="davir").derived_by == ("masks", "entities")


#: what every recipe must resolve for each released dataset (README, "Training"): the released
#: BLIP2IDC adapters' rank and lr; DAVIR's paper settings everywhere; IER trains on the shortest
EXPECTED_DEFAULTS = {
    "clevr_change": (16, 1e-4), "ier": (16, 1e-4), "syned": (32, 4e-5), "emu_edit": (8, 5e-5),
    "clevr_dc": (8, 5e-5), "spot_the_diff": (8, 1e-4), "levir_cc": (8, 1e-4), "magicbrush": (8, 1e-4), None: (8, 1e-4),
}


def resolved(facts):
    """``{model: (rank, lr, reference of ["a b c", "a"])}`` every recipe resolves for ``facts``."""
    from idc_toolkit.models.registry import get_recipe_class, trainable_models
    from idc_toolkit.training import TrainArgs, resolve_run

    out = {}
    for name in trainable_models():
        cls = get_recipe_class(name)
        s = resolve_run(cls, facts, TrainArgs(name, dataset="data", out="run", base_model="x"))
        out[name] = (s.lora_rank, s.lr, cls(s, facts).reference(["a long one", "short"], 0, 0))
    return out


def assert_training_defaults(folder, builder):
    """The settings each recipe resolves for a built folder, read back from its card."""
    facts = dataset_facts(folder)
    assert facts.builder == builder
    got = resolved(facts)
    rank, lr = EXPECTED_DEFAULTS[builder]
    assert got["blip2idc"][:2] == (rank, lr), got
    assert got["davir"][:2] == (4, 1e-5), got
    if builder == "ier":
        assert got["blip2idc"][2] == got["davir"][2] == "short"


def test_defaults_follow_the_builder_fact_through_derived_datasets():
    from idc_toolkit.facts import DatasetFacts

    for builder, (rank, lr) in EXPECTED_DEFAULTS.items():
        facts = DatasetFacts(builder=builder).derived("masks").derived("augment", pair_style="edit")
        assert resolved(facts)["blip2idc"][:2] == (rank, lr), builder

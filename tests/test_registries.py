"""Every pluggable kind has one Registry: a toy plug-in registered with one line reaches every
consumer (the command line's choices and help, the Python API, the run), and an unknown name is one
error type naming the choices. The metric registry's contract is tests/test_metric_registry.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from builders.spot_the_diff import SpotTheDiff
from idc_toolkit.builders import BUILDERS, make_builder
from idc_toolkit.evaluators.protocols import PROTOCOLS, Protocol
from idc_toolkit.metrics.registry import METRICS
from idc_toolkit.models.base import Runner
from idc_toolkit.models.registry import MODELS, get_runner_class
from idc_toolkit.errors import IDCError
from idc_toolkit.registry import Registry, UnknownName

from conftest import make_spot_the_diff


@pytest.mark.parametrize("registry", [BUILDERS, METRICS, MODELS, PROTOCOLS], ids=lambda r: r.kind)
def test_an_unknown_name_is_one_error_naming_the_choices(registry):
    with pytest.raises(UnknownName, match=rf"unknown {registry.kind} 'nope'; choose from {registry.names()[0]}, "):
        registry.get("nope")
    assert registry.names() and all(registry.describe(n) for n in registry.names())


def test_entries_resolve_lazily_and_once():
    reg = Registry("thing", {"json": "json:dumps", "mod": "json"})
    assert reg.names() == ["json", "mod"] and "json" in reg and len(reg) == 2
    assert reg.get("json") is json.dumps and reg["mod"] is json
    with pytest.raises(Exception, match="already registered"):
        reg.register("json", "json:loads")
    with reg.added("loads", "json:loads"):
        assert reg.get("loads") is json.loads
    assert "loads" not in reg


class NotAProtocol:
    """Has a protocol's name and description, yet is no Protocol."""

    name = "impostor"
    description = "not a subclass of Protocol"


def test_an_entry_is_checked_against_the_registrys_base_class_when_resolved():
    reg = Registry("thing", {"loads": "json:loads", "decoder": "json:JSONDecoder"}, base_cls="json:JSONDecoder")
    assert reg.names() == ["loads", "decoder"] and reg.get("decoder") is json.JSONDecoder  # listing resolves nothing
    with pytest.raises(IDCError, match=r"thing 'loads' \(json:loads\) is not a subclass of json(\.decoder)?\.JSONDecoder"):
        reg.get("loads")
    assert PROTOCOLS.base_cls is Protocol
    with PROTOCOLS.added("impostor", f"{__name__}:NotAProtocol"):
        assert "impostor" in PROTOCOLS.names()
        with pytest.raises(IDCError, match="protocol 'impostor' .* is not a subclass of .*Protocol"):
            PROTOCOLS.get("impostor")
    with PROTOCOLS.added("shout", f"{__name__}:ShoutProtocol"):
        assert PROTOCOLS.get("shout") is ShoutProtocol


class ToySpot(SpotTheDiff):
    """A toy release: Spot-the-Diff's layout under another name."""

    name = "toy_spot"


def test_a_registered_dataset_is_listed_and_builds(tmp_path, capsys):
    from datasets import load_dataset

    from idc_toolkit.cli.build import main

    raw = make_spot_the_diff(tmp_path / "raw", {"train": [{"img_id": "1", "sentences": ["a"]}],
                                                "val": [{"img_id": "2", "sentences": ["b"]}],
                                                "test": [{"img_id": "3", "sentences": ["c"]}]})
    with BUILDERS.added("toy_spot", f"{__name__}:ToySpot"):
        assert main(["--list"]) == 0 and "toy_spot" in capsys.readouterr().out
        assert isinstance(make_builder("toy_spot", raw), ToySpot)
        assert main(["toy_spot", "--raw", str(raw), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert load_dataset(str(tmp_path / "out"))["test"][0]["captions"] == ["c"]


class ConstantRunner(Runner):
    name = "constant"
    summary = "a toy model: one caption for every pair"

    def __init__(self, base_model, adapter, device, dtype, facts, revision=None, **options):
        self.caption = "the scene is the same as before"

    def generate(self, rows):
        return [self.caption for _ in rows]


RUNNER = ConstantRunner  # this module is the toy model's module, as blip2idc.py is BLIP2IDC's


def test_a_registered_model_is_a_choice_and_runs_and_scores(demo_dataset, tmp_path, capsys):
    from idc_toolkit.cli.eval import main, make_parser

    with MODELS.added("constant", __name__):
        assert get_runner_class("constant") is ConstantRunner
        assert "constant" in make_parser().format_help()
        assert main(["--model", "constant", "--base-model", str(tmp_path), "--dataset", str(demo_dataset), "--split", "test",
                     "--out", str(tmp_path / "eval"), "--device", "cpu", "--metrics", "CIDEr", "--no-progress"]) == 0
    predictions = [json.loads(line) for line in (tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert {p["caption"] for p in predictions} == {"the scene is the same as before"}
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["overall"]["CIDEr"] >= 0


@dataclass
class ShoutProtocol(Protocol):
    """A toy protocol: hypotheses scored in capitals (the PTB tokenizer lowercases them back)."""

    name: str = "shout"
    description: str = "a toy protocol: every caption shouted"

    def prepare(self, hypotheses: dict[str, str], references: Any, categories: Any, seed: int) -> dict[str, str]:
        return {pid: h.upper() for pid, h in hypotheses.items()}


def test_a_registered_protocol_is_a_choice_with_its_help_and_scores(demo_dataset, tmp_path):
    from idc_toolkit.cli.eval import make_parser
    from idc_toolkit.evaluators.scoring import evaluate

    from datasets import load_dataset

    preds = {load_dataset(str(demo_dataset), split="test")[0]["pair_id"]: "the small red cube moved"}
    with PROTOCOLS.added("shout", f"{__name__}:ShoutProtocol"):
        help_text = " ".join(make_parser().format_help().split())
        assert "shout: a toy protocol: every caption shouted" in help_text
        shouted = evaluate(preds, dataset=str(demo_dataset), split="test", metrics=["BLEU"], allow_missing=True,
                           protocol="shout", breakdown=False).metrics
    plain = evaluate(preds, dataset=str(demo_dataset), split="test", metrics=["BLEU"], allow_missing=True,
                     breakdown=False).metrics
    assert shouted["meta"]["protocol"]["name"] == "shout"
    assert shouted["overall"]["Bleu_1"] == plain["overall"]["Bleu_1"]


@pytest.mark.parametrize("name", ["blip2idc", "davir"])
def test_a_models_runner_and_recipe_share_each_option_they_both_take(name):
    """One Options dataclass per model module: an option both take (--pair-style, --num-entities)
    has one default, check, choices and help in idc-eval and idc-train."""
    import argparse

    from idc_toolkit.models.registry import get_recipe_class

    def actions(cls):
        parser = argparse.ArgumentParser()
        cls.add_arguments(parser.add_argument_group())
        return {a.dest: (a.default, a.choices, getattr(a.type, "__name__", a.type), a.help) for a in parser._actions
                if a.dest != "help"}

    runner, recipe = actions(get_runner_class(name)), actions(get_recipe_class(name))
    shared = set(runner) & set(recipe)
    assert shared and {d: runner[d] for d in shared} == {d: recipe[d] for d in shared}

"""The record is the arguments: a training run's and a checkpoint run's fingerprint fields are
derived from their options classes (each field's ``record`` metadata), so an option added to a
class is recorded with no other edit, and the record of an unchanged run is the one earlier
versions wrote (its folder stays valid)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from idc_toolkit.facts import DatasetFacts
from idc_toolkit.models.registry import get_recipe_class, get_runner_class
from idc_toolkit.options import option
from idc_toolkit.runs.fingerprint import digest
from idc_toolkit.training import TrainArgs, resolve_run

FACTS = DatasetFacts(builder="clevr_change", pair_style="scene")

#: what train_config.json's fingerprint held for this run before the record was derived from the fields
#: (a run of blip2idc on clevr_change with max_steps=2, batch_size=4, lr=1e-3, no validation)
BLIP2IDC_RECORD = {
    "model": "blip2idc", "variant": "ours", "base_model": "base", "revision": None, "epochs": 10, "batch_size": 4,
    "grad_accum": 1, "lr": 0.001, "lr_schedule": "linear", "weight_decay": 0.0, "max_grad_norm": 1.0, "lora_rank": 16,
    "lora_alpha": 32, "lora_dropout": 0.05, "max_caption_tokens": 30, "max_new_tokens": 77, "select_by": "CIDEr",
    "patience": 0, "max_steps": 2, "save_steps": None, "seed": 0, "dtype": "auto", "split": "train", "val_split": None,
    "val_limit": 0, "gradient_checkpointing": False,
    "defaults_source": "variant ours (our corrected choices (docs/training.md)); rank/lr: released adapter "
                       "code_release/weights/clevr_sota/clevr_change_loraRank16_1e-4 (r 16)",
    "options": {"pair_style": None}, "trainer_args": {}, "train_reference": "random", "group_by_length": False,
}


def _record(args: TrainArgs) -> dict:
    return resolve_run(get_recipe_class(args.model), FACTS, args).record()


def _args(cls=TrainArgs, **kw) -> TrainArgs:
    return cls("blip2idc", "data", "out", base_model="base", max_steps=2, batch_size=4, lr=1e-3, val_split=None, **kw)


def test_an_unchanged_run_records_what_it_recorded_before():
    assert _record(_args()) == BLIP2IDC_RECORD
    # where the run reads and writes, and how it runs, are not what it trains: none of them is recorded
    elsewhere = dataclasses.replace(_args(), dataset="other", out="elsewhere", device="cpu", progress=False,
                                    report_to="none", log_every=3, dataloader_workers=0, overwrite=True)
    assert _record(elsewhere) == BLIP2IDC_RECORD


def test_a_field_added_to_train_args_is_recorded_with_no_other_edit():
    extended = dataclasses.make_dataclass("Extended", [("warmup", int, option(0, "a new option"))], bases=(TrainArgs,))
    quiet = dataclasses.make_dataclass("Quiet", [("colour", str, option("red", "not recorded", record=False))],
                                       bases=(TrainArgs,))
    before = _record(_args())
    record = _record(_args(extended, warmup=5))
    assert record == {**before, "warmup": 5} and digest(record) != digest(before)
    assert _record(_args(quiet, colour="blue")) == before


@pytest.mark.parametrize("model", ["blip2idc", "davir", "vlm"])
def test_a_field_added_to_a_runners_options_is_recorded_with_no_other_edit(model):
    from idc_toolkit.models.generation import model_fields

    runner = get_runner_class(model)
    extended = dataclasses.make_dataclass("Extended", [("temperature", float, option(1.0, "a new option"))],
                                          bases=(runner.Options,))

    def fields(options):
        return model_fields(model, "base", None, None, "auto", options)

    plain = fields(runner.make_options())
    assert fields(extended()) == {**plain, "temperature": 1.0}
    assert digest(fields(extended(temperature=0.5))) != digest(plain)


def test_a_recipes_option_is_recorded_under_options():
    extended = dataclasses.make_dataclass("Extended", [("beta", float, option(0.5, "a new option"))],
                                          bases=(get_recipe_class("blip2idc").Options,))
    record = _record(_args(options=extended(beta=0.25)))
    assert record == {**BLIP2IDC_RECORD, "options": {"pair_style": None, "beta": 0.25}}


def test_runners_and_recipes_check_a_dataset_with_one_name_and_order():
    from idc_toolkit.models.base import Runner
    from idc_toolkit.models.recipe import Recipe

    shape = ["facts", "columns", "options", "where"]
    for cls in (Runner, Recipe, get_runner_class("vlm"), get_recipe_class("davir")):
        assert list(inspect.signature(cls.check_dataset).parameters) == shape, cls
    assert inspect.signature(Runner.check_dataset).parameters["facts"].annotation in (DatasetFacts, "DatasetFacts")


def test_max_new_tokens_has_one_default_per_model_and_validation_decodes_with_it():
    for model in ("blip2idc", "davir"):
        assert get_recipe_class(model).max_new_tokens == get_runner_class(model).make_options().max_new_tokens
        assert resolve_run(get_recipe_class(model), FACTS, TrainArgs(model, "d", "o")).max_new_tokens == \
            get_runner_class(model).Options.max_new_tokens


def test_the_training_and_caption_command_lines_are_derived_from_dataclasses():
    from pathlib import Path

    import idc_toolkit.cli.caption as caption_cli
    import idc_toolkit.cli.train as train_cli

    assert "add_argument(" not in Path(train_cli.__file__).read_text()
    calls = [line.strip() for line in Path(caption_cli.__file__).read_text().splitlines() if "add_argument(" in line]
    assert calls == ['p.add_argument("before", help="the before image")', 'p.add_argument("after", help="the after image")']
    args = train_cli.make_parser("davir").parse_args(["--model", "davir", "--dataset", "d", "--out", "o", "--trainer-arg",
                                                      "warmup_steps=10", "--trainer-arg", "adam_beta2=0.99",
                                                      "--fac-weight", "0.5"])
    from idc_toolkit.options import from_namespace

    targs = from_namespace(TrainArgs, args, options=from_namespace(get_recipe_class("davir").Options, args))
    assert targs.trainer_args == {"warmup_steps": 10, "adam_beta2": 0.99} and targs.options.fac_weight == 0.5

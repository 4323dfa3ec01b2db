"""A run's fingerprint is derived from its options: an option added to an options class (here a
subclass with one more field) enters the run's recorded fields with no other edit; the run
options of idc-build, idc-precompute and idc-augment are checked where they are made."""

import json
from dataclasses import fields, is_dataclass, make_dataclass

import pytest

from conftest import TINY_CLIP, make_spot_the_diff
from idc_toolkit.augment import AugmentArgs, AugmentConfig
from idc_toolkit.building import BuildArgs
from idc_toolkit.entities.params import EntitiesArgs, EntityParams
from idc_toolkit.errors import IDCError
from idc_toolkit.masks.params import MaskParams, MasksArgs
from idc_toolkit.options import option
from idc_toolkit.runs.folder import RunFolder


class Opened(Exception):
    """Raised where a run opens its folder: the fields are known, no row is written."""


@pytest.fixture
def fields_of(monkeypatch):
    """``fields_of(run)``: the fields ``run()`` fingerprints its folder with."""

    def opened(self, overwrite=False):
        raise Opened(self.fields)

    monkeypatch.setattr(RunFolder, "open", opened)

    def run(call):
        with pytest.raises(Opened) as exc:
            call()
        return exc.value.args[0]

    return run


def plus_one(cls):
    """``cls`` with one more option, as a contributor would add it."""
    frozen = cls.__dataclass_params__.frozen
    return make_dataclass(f"{cls.__name__}Plus", [("new_knob", int, option(7, "an option added later"))], bases=(cls,),
                          frozen=frozen)


def assert_recorded(before, after):
    assert after["new_knob"] == 7 and "new_knob" not in before
    assert {k: v for k, v in after.items() if k != "new_knob"} == before


@pytest.fixture
def raw(tmp_path):
    return make_spot_the_diff(tmp_path / "raw", {"train": [{"img_id": "1", "sentences": ["a"]}],
                                                 "val": [{"img_id": "2", "sentences": ["b"]}],
                                                 "test": [{"img_id": "3", "sentences": ["c"]}]})


def test_a_build_records_an_added_option(fields_of, raw, tmp_path):
    from idc_toolkit.api import build_dataset

    before = fields_of(lambda: build_dataset("spot_the_diff", raw, tmp_path / "o", BuildArgs(rows_per_part=4)))
    after = fields_of(lambda: build_dataset("spot_the_diff", args=plus_one(BuildArgs)(raw=str(raw), out=str(tmp_path / "o"),
                                                                                      rows_per_part=4)))
    assert_recorded(before, after)
    assert before["rows_per_part"] == 4 and before["max_shard_bytes"] == 500 * 10**6 and before["verify_images"] == "fast"


@pytest.mark.parametrize("cls", [MasksArgs, MaskParams])
def test_a_masks_run_records_an_added_option(fields_of, demo_dataset, tmp_path, cls):
    from idc_toolkit.masks import add_change_masks

    out = tmp_path / "m"
    if cls is MasksArgs:
        run = lambda args: add_change_masks(params=None, args=args(dataset=str(demo_dataset), out=str(out)))  # noqa: E731
    else:
        run = lambda params: add_change_masks(demo_dataset, out, params(), device="cpu")  # noqa: E731
    assert_recorded(fields_of(lambda: run(cls)), fields_of(lambda: run(plus_one(cls))))


@pytest.mark.parametrize("cls", [EntitiesArgs, EntityParams])
def test_an_entities_run_records_an_added_option(fields_of, demo_dataset, tmp_path, cls):
    from idc_toolkit.entities import add_change_entities

    config = tmp_path / "tiny-clip-rec.json"
    config.write_text(json.dumps(TINY_CLIP))
    chosen = {"clip_model": "tiny-clip-rec", "clip_config": str(config), "random_weights": True}
    out = tmp_path / "e"
    if cls is EntitiesArgs:
        run = lambda args: add_change_entities(params=EntityParams(**chosen),  # noqa: E731
                                               args=args(dataset=str(demo_dataset), out=str(out), device="cpu"))
    else:
        run = lambda params: add_change_entities(demo_dataset, out, params(**chosen), device="cpu")  # noqa: E731
    before, after = fields_of(lambda: run(cls)), fields_of(lambda: run(plus_one(cls)))
    assert_recorded(before, after)
    assert before["clip_config"] != str(config) and "random_weights" not in before  # by content; its consequence recorded


def test_an_augment_run_records_an_added_option(fields_of, demo_dataset, tmp_path):
    from idc_toolkit.augment import augment_dataset

    given = {"dataset": str(demo_dataset), "out": str(tmp_path / "a"), "paraphraser": "no-such/chat-model",
             "paraphrase_only": True, "split": "test", "device": "cpu"}
    before = fields_of(lambda: augment_dataset(args=AugmentArgs(**given)))
    assert_recorded(before, fields_of(lambda: augment_dataset(args=plus_one(AugmentArgs)(**given))))
    assert "limit" not in before and fields_of(lambda: augment_dataset(args=AugmentArgs(**given, limit=3)))["limit"] == 3
    assert not {"dataset", "out", "overwrite", "device", "progress", "shard", "engine"} & set(before)
    # the old keywords give their fields
    from idc_toolkit.augment import Models

    old = fields_of(lambda: augment_dataset(str(demo_dataset), tmp_path / "a", models=Models(None, "no-such/chat-model"),
                                            cfg=AugmentConfig(paraphrase_only=True), split="test", device="cpu"))
    assert old == before


def test_run_options_record_none_of_where_and_how_a_run_goes():
    for cls, given in ((BuildArgs, {}), (MasksArgs, {"dataset": "d", "out": "o"}), (EntitiesArgs, {"dataset": "d", "out": "o"}),
                       (AugmentArgs, {"dataset": "d", "out": "o", "paraphraser": "p"})):
        unrecorded = {f.name for f in fields(cls) if f.metadata.get("record", True) is False}
        assert {"out", "overwrite", "progress", "shard"} <= unrecorded, cls
        assert is_dataclass(cls(**given))


@pytest.mark.parametrize("flag, value, message", [
    ("--steps", "0", "must be at least 1"), ("--edits-per-image", "0", "must be at least 1"),
    ("--paraphrases", "-1", "must be 0 or more"), ("--resolution", "0", "must be at least 1"),
    ("--paraphrase-tries", "0", "must be at least 1"), ("--guidance-scale", "-1", "must be 0 or more"),
    ("--image-guidance-scale", "nan", "finite"), ("--clip-filter", "inf", "finite"), ("--rows-per-shard", "0", "at least 1"),
])
def test_augment_options_out_of_range_are_refused_where_parsed(tmp_path, capsys, flag, value, message):
    from idc_toolkit.cli.augment import main

    with pytest.raises(SystemExit) as exc:
        main(["--dataset", "d", "--paraphraser", "p", "--out", str(tmp_path / "a"), flag, value])
    assert exc.value.code == 2 and message in capsys.readouterr().err and not (tmp_path / "a").exists()
    field = {"--rows-per-shard": "rows_per_part"}.get(flag, flag[2:].replace("-", "_"))
    with pytest.raises(IDCError, match=message):
        AugmentConfig(**{field: float(value)})


def test_old_flags_and_keywords_keep_working(raw, tmp_path):
    from idc_toolkit.api import build_dataset
    from idc_toolkit.cli.augment import make_parser

    args = make_parser().parse_args(["--source", "d", "--paraphraser", "p", "--out", "o", "--rows-per-shard", "3"])
    assert args.dataset == "d" and args.rows_per_part == 3
    result = build_dataset("spot_the_diff", raw, tmp_path / "o", progress=False, max_shard_rows=1)
    assert dict(result.report.rows) == {"train": 1, "validation": 1, "test": 1} and len(list((tmp_path / "o" / "data").glob("*.parquet"))) == 3
    a = BuildArgs(max_shard_bytes="1MB", config=["a=1", "b=c=d"])
    assert a.max_shard_bytes == 10**6 and a.config == {"a": "1", "b": "c=d"}
    assert BuildArgs(max_shard_rows=8).rows_per_part == 8 and BuildArgs(max_shard_rows=8).max_shard_bytes == 0
    with pytest.raises(IDCError, match="--config takes KEY=VALUE"):
        BuildArgs(config=["nope"])

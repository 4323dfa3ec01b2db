"""The demo's command lines (idc-demo, the pretraining and stand-in scripts) are their dataclasses:
defaults, range checks and help written once; the demo's tokenizers have a module of their own."""

from __future__ import annotations

import ast
import warnings

import pytest

from conftest import REPO
from idc_toolkit.errors import IDCError
from idc_toolkit.options import from_namespace


def test_idc_demo_options_are_one_dataclass_with_range_checks(capsys):
    from idc_toolkit.cli.demo import DemoArgs, make_parser

    assert from_namespace(DemoArgs, make_parser().parse_args([])) == DemoArgs()
    parsed = from_namespace(DemoArgs, make_parser().parse_args(["--no-eval", "--n-per-type", "5", "--bootstrap", "0"]))
    assert parsed == DemoArgs(evaluate=False, n_per_type=5, bootstrap=0)
    for flag, value in (("--n-per-type", "0"), ("--train-epochs", "0"), ("--bootstrap", "-1"), ("--seed", "-1")):
        with pytest.raises(SystemExit):
            make_parser().parse_args([flag, value])
        assert f"argument {flag}: must be" in capsys.readouterr().err
    for bad in ({"n_per_type": 0}, {"train_epochs": 0}, {"bootstrap": -5}):
        with pytest.raises(IDCError, match="--" + next(iter(bad)).replace("_", "-")):
            DemoArgs(**bad)


def test_pretrain_and_stand_ins_scripts_are_dataclasses(tmp_path, capsys):
    from idc_toolkit.demo import pretrain, stand_ins

    assert from_namespace(pretrain.PretrainArgs, pretrain.make_parser().parse_args([])) == pretrain.PretrainArgs()
    assert pretrain.PretrainArgs().out == str(pretrain.BASES) and pretrain.PretrainArgs().steps == pretrain.SHIPPED_STEPS
    help_text = " ".join(pretrain.make_parser().format_help().split())
    assert "--steps STEPS AdamW steps of each base" in help_text
    with pytest.raises(SystemExit):
        pretrain.main(["--steps", "0"])
    assert "argument --steps: must be" in capsys.readouterr().err
    with pytest.raises(IDCError, match="--only"):
        pretrain.PretrainArgs(only="llava")
    args = from_namespace(stand_ins.StandInsArgs, stand_ins.make_parser().parse_args([str(tmp_path), "--seed", "3"]))
    assert args == stand_ins.StandInsArgs(out=str(tmp_path), seed=3)
    with pytest.raises(IDCError, match="--seed"):
        stand_ins.save_stand_ins(tmp_path, seed=-1)
    assert not any(tmp_path.iterdir())


def test_the_demo_tokenizers_module_and_the_old_path():
    from idc_toolkit.demo import models, tokenizers

    assert callable(models.blip2_base) and callable(models.instructblip_base)  # models.py keeps the models
    for name in ("words_of", "word_tokenizer", "SPECIALS_OPT", "SPECIALS_LLAMA"):
        with pytest.warns(DeprecationWarning, match=f"idc_toolkit.demo.tokenizers.{name}"):
            assert getattr(models, name) is getattr(tokenizers, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = tokenizers.word_tokenizer(tokenizers.words_of(["the red cube moved."]), "opt")
    assert tok.decode(tok("the red cube moved.", add_special_tokens=False)["input_ids"]) == "the red cube moved."
    assert "moved" in tokenizers.demo_vocabulary()


def test_view_and_demo_commands_declare_no_option_by_hand():
    """Options come from dataclasses; an ``add_argument`` there adds a positional only."""
    files = [REPO / "idc_toolkit" / "cli" / "view.py", REPO / "idc_toolkit" / "cli" / "demo.py",
             *sorted((REPO / "idc_toolkit" / "demo").glob("*.py"))]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                first = node.args[0]
                assert isinstance(first, ast.Constant) and not first.value.startswith("-"), (path.name, ast.unparse(node))

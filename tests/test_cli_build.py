import argparse
import subprocess
import sys

import pytest

from datasets import load_dataset

from idc_toolkit.cli.build import main, parse_size

from conftest import make_spot_the_diff


def test_list(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ("spot_the_diff", "clevr_change", "clevr_dc", "ier", "levir_cc", "emu_edit", "syned", "magicbrush"):
        assert name in out


def test_hub_style_relative_folder_loads_by_name(tmp_path, monkeypatch):
    raw = make_spot_the_diff(tmp_path / "raw", {"train": [{"img_id": "1", "sentences": ["a"]}],
                                                "val": [{"img_id": "2", "sentences": ["b"]}],
                                                "test": [{"img_id": "3", "sentences": ["c"]}]})
    monkeypatch.chdir(tmp_path)
    assert main(["spot_the_diff", "--raw", str(raw), "--out", "idc_toolkit/spot_the_diff", "--no-progress"]) == 0
    ds = load_dataset("idc_toolkit/spot_the_diff")
    assert ds["test"][0]["captions"] == ["c"]


def test_console_scripts_are_installed():
    """Every command the README names runs as the installed console script, beside the interpreter."""
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    out = subprocess.run([str(bin_dir / "idc-build"), "--list"], capture_output=True, text=True)
    assert out.returncode == 0 and "levir_cc" in out.stdout
    for command in ("idc-demo", "idc-eval", "idc-precompute", "idc-augment", "idc-train", "idc-view"):
        assert (bin_dir / command).is_file(), command


def test_parse_size():
    """push_to_hub's max_shard_size convention: 500MB is 500 * 10**6 bytes, as datasets' own
    config.MAX_SHARD_SIZE means it."""
    from datasets import config
    from datasets.utils.py_utils import convert_file_size_to_int

    assert parse_size("500MB") == 500 * 10**6 == convert_file_size_to_int(config.MAX_SHARD_SIZE)
    assert parse_size("2GiB") == 2 * 1024**3 and parse_size("123") == 123
    with pytest.raises(argparse.ArgumentTypeError, match="not a size: '12 apples'"):
        parse_size("12 apples")


def test_config_overrides_are_checked(tmp_path, capsys):
    assert main(["clevr_dc", "--raw", str(tmp_path), "--out", str(tmp_path / "o"), "--config", "nope=1"]) == 1
    assert "unknown option 'nope'" in capsys.readouterr().err


def test_help_text_speaks_one_vocabulary(capsys):
    """Flags show no '(default: True)'; every resumable command calls its unit --rows-per-part."""
    from idc_toolkit.cli import augment, precompute

    for command, argv in ((precompute.main, ["masks", "--help"]), (augment.main, ["--help"])):
        with pytest.raises(SystemExit):
            command(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert "(default: True)" not in text and "(default: False)" not in text
        assert "--rows-per-part" in text

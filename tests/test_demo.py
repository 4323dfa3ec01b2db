import json

import pytest

from idc_toolkit.cli.demo import main

pytestmark = pytest.mark.java


def test_demo_end_to_end_with_a_tiny_model_then_rerun(tmp_path, capsys):
    """One demo run (the slowest test, so it runs once) covers every step and the tiny model."""
    out = tmp_path / "demo"
    assert main(["--out", str(out), "--n-per-type", "5", "--with-model"]) == 0
    printed = capsys.readouterr().out
    assert "| distractor |" in printed and "| change_only |" in printed
    m = json.loads((out / "eval" / "metrics.json").read_text())
    assert set(m["by_category"]) == {"color", "material", "add", "drop", "move", "distractor"}
    assert (out / "raw" / "masks").is_dir()
    from datasets import load_dataset

    test = load_dataset(str(out / "clevr_change_demo_entities"), split="test")
    assert {"change_mask", "change_boxes", "mask_source", "entities", "gt_entities"} <= set(test.features)
    card = (out / "clevr_change_demo" / "README.md").read_text()
    assert "PROCEDURAL DEMO DATA, not the CLEVR-Change release" in card
    assert "PROCEDURAL DEMO DATA" in (out / "clevr_change_demo_entities" / "README.md").read_text()
    assert len((out / "eval_blip2idc" / "predictions.jsonl").read_text().splitlines()) == 10
    assert "by_category" in json.loads((out / "eval_blip2idc" / "metrics.json").read_text())
    assert main(["--out", str(out), "--n-per-type", "5", "--no-eval"]) == 0
    assert "reusing the demo raw release" in capsys.readouterr().out

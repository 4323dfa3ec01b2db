"""Inputs that must never mis-assign a caption to the wrong pair or group (scorer issue #13):
each is an error naming the cause, or is done as RCC's evaluate.py does it."""

import json

import pytest

from idc_toolkit.cli.eval import format_p_value
from idc_toolkit.cli.eval import main as eval_main
from idc_toolkit.errors import EvaluationError
from idc_toolkit.evaluators.predictions import load_predictions, load_references_coco
from idc_toolkit.evaluators.scoring import evaluate

pytestmark = pytest.mark.java

REFS = {"1": ["the red car moved", "a car moved"], "2": ["nothing changed", "no change"],
        "3": ["a man appeared", "someone arrived"], "4": ["the cube is gone", "a cube was removed"]}
PREDS = {"1": "a car moved", "2": "nothing has changed", "3": "a man appeared", "4": "the cube was removed"}


def _coco(tmp_path, refs=REFS, ids=str):
    anns = [{"image_id": ids(pid), "caption": c} for pid, caps in refs.items() for c in caps]
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"annotations": anns}))
    return path


def _write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


@pytest.mark.parametrize("name, text", [
    ("p.jsonl", '{"pair_id": "1", "image_id": "2", "caption": "a car moved"}\n'),
    ("p.json", json.dumps([{"pair_id": "1", "image_id": 2, "caption": "a car moved"}])),
])
def test_image_id_and_pair_id_that_disagree_are_an_error(tmp_path, name, text):
    with pytest.raises(EvaluationError, match="'pair_id' '1' and 'image_id' .*2.* disagree"):
        load_predictions(_write(tmp_path, name, text))
    # agreeing ids (a number and its string) are one pair
    assert load_predictions(_write(tmp_path, "ok.jsonl", '{"pair_id": "7", "image_id": 7, "caption": "x"}\n')) == {"7": "x"}


def test_references_spelling_one_id_as_a_number_and_a_string_are_an_error(tmp_path):
    anns = [{"image_id": 123, "caption": "a car moved"}, {"image_id": "123", "caption": "nothing changed"}]
    path = _write(tmp_path, "refs.json", {"annotations": anns})
    with pytest.raises(EvaluationError, match="annotation 1: image_id '123' and 123 .*merged"):
        load_references_coco(path)


@pytest.mark.parametrize("reserved", ["overall", "change_only"])
def test_reserved_category_names_are_refused_before_anything_is_written(tmp_path, reserved):
    cats = _write(tmp_path, "cats.json", {reserved: ["1", "2"], "distractor": ["3", "4"]})
    out = tmp_path / "out"
    with pytest.raises(EvaluationError, match=f"'{reserved}' are reserved"):
        evaluate(PREDS, references=str(_coco(tmp_path)), categories=str(cats), out=out, metrics=["BLEU"])
    assert not out.exists()


def test_an_id_under_two_categories_is_scored_in_both(tmp_path, caplog):
    """RCC's evaluate.py scores a pair in every category that lists it; each group's score
    equals scoring that group's pairs alone."""
    refs = _coco(tmp_path)
    cats = _write(tmp_path, "cats.json", {"color": ["1", "3"], "move": ["1", "4"], "distractor": ["2"]})
    m = evaluate(PREDS, references=str(refs), categories=str(cats), metrics=["BLEU", "CIDEr"]).metrics
    assert m["by_category"]["color"]["n"] == 2 and m["by_category"]["move"]["n"] == 2
    for group, ids in (("color", ["1", "3"]), ("move", ["1", "4"])):
        alone = evaluate({i: PREDS[i] for i in ids}, references=str(_coco(tmp_path, {i: REFS[i] for i in ids})),
                         metrics=["BLEU", "CIDEr"], breakdown=False).metrics["overall"]
        assert m["by_category"][group]["Bleu_4"] == alone["Bleu_4"] and m["by_category"][group]["CIDEr"] == alone["CIDEr"]
    assert m["change_only"]["n"] == 3
    assert any("listed under several categories" in w for w in m["warnings"])


def test_an_empty_group_reports_n_a_not_zero(tmp_path):
    cats = _write(tmp_path, "cats.json", {"distractor": ["1", "2", "3", "4"]})
    m = evaluate(PREDS, references=str(_coco(tmp_path)), categories=str(cats), metrics=["BLEU"]).metrics
    assert m["change_only"]["n"] == 0 and m["change_only"]["Bleu_4"] is None


def test_out_over_other_results_is_refused_unless_overwrite(tmp_path, capsys):
    refs = _coco(tmp_path)
    a = _write(tmp_path, "a.json", PREDS)
    b = _write(tmp_path, "b.json", {**PREDS, "1": "the cube moved"})
    out = str(tmp_path / "out")
    base = ["--references", str(refs), "--out", out, "--metrics", "BLEU"]
    assert eval_main(["--predictions", str(a), *base]) == 0
    assert eval_main(["--predictions", str(a), *base]) == 0  # the same run: rewritten, identical
    capsys.readouterr()
    assert eval_main(["--predictions", str(b), *base]) == 1
    err = capsys.readouterr().err
    assert "holds results of another run" in err and "predictions:" in err and "--overwrite" in err
    assert eval_main(["--predictions", str(b), *base, "--overwrite"]) == 0
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["meta"]["predictions"] == str(b)


def test_p_values_are_shown_as_far_as_the_resamples_resolve_them():
    assert format_p_value(0.0, 1000) == "< 0.001" and format_p_value(0.0, 100) == "< 0.01"
    assert format_p_value(0.0421, 1000) == "0.042"

"""An evaluation's record is its arguments: every EvalArgs field enters the run fingerprint as its
``record`` metadata says, so an option added to the class is recorded (and an evaluation folder
written without it refused, naming it) with no other edit; the keys existing folders hold stay."""

from __future__ import annotations

import dataclasses
import json

import pytest

from idc_toolkit.errors import IDCError
from idc_toolkit.evaluators.args import EvalArgs
from idc_toolkit.evaluators.scoring import evaluate
from idc_toolkit.options import option

REFS = {"p1": ["the red cube turned blue."], "p2": ["a cylinder was added."], "p3": ["there is no change."]}
PREDS = {"p1": "the cube turned blue.", "p2": "a cylinder appeared.", "p3": "nothing changed."}


@pytest.fixture()
def refs(tmp_path):
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"annotations": [{"image_id": k, "caption": c} for k, cs in REFS.items() for c in cs]}))
    return str(path)


def test_a_field_added_to_evalargs_enters_the_fingerprint_with_no_other_edit(refs, tmp_path):
    Extended = dataclasses.make_dataclass("Extended", [("temperature", float, option(0.5, "a new option"))],
                                          bases=(EvalArgs,))
    given = {"references": refs, "metrics": ["BLEU"], "breakdown": False}
    base = evaluate(PREDS, EvalArgs(**given)).metrics["meta"]
    plain = evaluate(PREDS, Extended(**given)).metrics["meta"]
    warmer = evaluate(PREDS, Extended(**given, temperature=0.7)).metrics["meta"]
    assert plain["run"] == {**base["run"], "temperature": 0.5}
    assert warmer["run"] == {**base["run"], "temperature": 0.7}
    assert len({base["run_fingerprint"], plain["run_fingerprint"], warmer["run_fingerprint"]}) == 3
    out = str(tmp_path / "eval")
    evaluate(PREDS, Extended(**given, out=out))
    with pytest.raises(IDCError, match="temperature: 0.5 -> 0.7"):
        evaluate(PREDS, Extended(**given, out=out, temperature=0.7))


def test_where_the_results_go_is_not_recorded_and_the_record_keeps_its_keys(refs, tmp_path):
    given = {"references": refs, "metrics": ["BLEU", "CIDEr"], "bootstrap": 5}
    here = evaluate(PREDS, **given).metrics["meta"]
    there = evaluate(PREDS, **given, out=str(tmp_path / "e"), overwrite=True, strict=True).metrics["meta"]
    assert here["run"] == there["run"]
    # the keys (and their order in metrics.json) that evaluation folders have always held
    assert list(here["run"]) == ["protocol", "drop_last_batch", "groups", "group_by", "iou", "predictions", "references",
                                 "metrics", "allow_missing", "drop_empty_references", "breakdown", "bootstrap", "seed",
                                 "spice", "scorer", "layouts", "group_names", "name", "toolkit_version"]
    assert here["run"]["spice"] is False and here["run"]["iou"] is None and here["run"]["metrics"] == ["BLEU", "CIDEr"]


def test_a_field_added_to_compareargs_enters_the_comparison_record_with_no_other_edit(refs, tmp_path):
    """compare's fingerprint is derived from CompareArgs' fields as an evaluation's is: a folder
    written without the new option is refused, naming it."""
    from idc_toolkit.evaluators.args import CompareArgs
    from idc_toolkit.evaluators.compare import compare_systems

    Extended = dataclasses.make_dataclass("Extended", [("temperature", float, option(0.5, "a new option"))],
                                          bases=(CompareArgs,))
    other = {"p1": "a cube turned red.", "p2": "a cylinder was added.", "p3": "no change."}
    given = {"references": refs, "metrics": ["BLEU"], "bootstrap": 10}
    out = str(tmp_path / "cmp")
    compare_systems(PREDS, other, Extended(**given, out=out))
    compare_systems(PREDS, other, Extended(**given, out=out))  # the same arguments: the folder serves
    with pytest.raises(IDCError, match="temperature: 0.5 -> 0.7"):
        compare_systems(PREDS, other, Extended(**given, out=out, temperature=0.7))

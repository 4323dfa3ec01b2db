"""Multiple-choice questions (VLM-SubtleBench's form): the fixed lettered choices, reading a letter
from an answer, MC_accuracy overall and per category with its unparsed count in every output,
its bootstrap interval and paired test, and ``idc-eval --model vlm`` asking the questions. The
datasets are built here with the vlm_subtlebench builder from items in its release's format
(the builder test's fixture writer)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from idc_toolkit.errors import EvaluationError
from idc_toolkit.multiple_choice import CHOICE_ORDER, LETTERS, PROMPT, Item, item, ordered_choices, prompt, read_answer
from test_builders_subtle_wuicc import HUB, _image, _item

# ---- reading an answer ----

ITEM = Item("p", "What changed?", ("the red cube", "the blue sphere", "nothing", "the green cylinder"), "A")


@pytest.mark.parametrize("answer, letter", [
    # a letter alone, any case, bracketed, punctuated, in markdown
    ("B", "B"), ("(B)", "B"), ("B.", "B"), ("b)", "B"), ("c", "C"), ("**D**", "D"), ("`c`", "C"), ("__b__", "B"),
    # a letter with text, lead-ins and the authors' "### Answer" heading
    ("B. the blue sphere", "B"), ("b) The blue sphere", "B"), ("Answer: B", "B"), ("The answer is (C)", "C"),
    ("The correct answer is D.", "D"), ("**Answer:** A", "A"), ("Option C", "C"), ("I choose C because it fits.", "C"),
    ("### Reasoning\nThe cube in A is red.\n\n### Answer\nC", "C"), ("The sphere in A is gone.\n\nB", "B"),
    ("<think>A? or B?</think>\nB", "B"), ("A is correct", "A"),
    # a choice's text alone
    ("the red cube", "A"), ("The Red Cube!", "A"), ("Nothing.", "C"), ("green cylinder", "D"), ("Answer: nothing", "C"),
    # two letters, two choices' texts, a letter contradicting its text, none
    ("A or B", None), ("A and C", None), ("A. the red cube\nB. the blue sphere", None), ("A\nB", None),
    ("B. the red cube", None), ("C) the red cube", None),
    ("", None), ("I don't know", None), ("A red cube appeared on the left.", None), ("E", None), ("<think>B", None),
    ("The answer", None),
], ids=repr)
def test_an_answer_gives_its_letter_or_none(answer, letter):
    assert read_answer(answer, ITEM).letter == letter


def test_two_choices_with_one_text_leave_their_text_unparsed_and_say_why():
    twin = Item("q", "?", ("first image", "First image.", "second image"), "A")
    reading = read_answer("first image", twin)
    assert reading.letter is None and "2 choices" in reading.why
    assert read_answer("A", twin).letter == "A"
    assert "2 different letters (A, B)" in read_answer("A or B", ITEM).why


# ---- the fixed choices ----

ORDER_CODE = """
import json
from idc_toolkit.multiple_choice import ordered_choices
items = [("state_changeit_0", "second image", ["first image"]), ("attribute_coco_30", "blue", ["white", "red", "green"]),
         ("x", "a", ["b", "c", "d", "e"])]
print(json.dumps([ordered_choices(*i) for i in items]))
"""


def test_the_choice_order_is_the_same_in_every_process_and_ignores_the_release_order():
    runs = {subprocess.run([sys.executable, "-c", ORDER_CODE], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "12345")}
    assert len(runs) == 1
    here = json.loads(json.dumps([ordered_choices("state_changeit_0", "second image", ["first image"]),
                                  ordered_choices("attribute_coco_30", "blue", ["white", "red", "green"]),
                                  ordered_choices("x", "a", ["b", "c", "d", "e"])]))
    assert json.loads(runs.pop()) == here
    choices, correct = ordered_choices("attribute_coco_30", "blue", ["green", "red", "white"])
    assert [list(choices), correct] == here[1]  # the distractors' release order does not matter
    assert choices[ord(correct) - 65] == "blue"
    assert ordered_choices("x", "a", ["b", "a", "b"])[0] == ordered_choices("x", "a", ["b"])[0]  # a repeated text once
    it = item("attribute_coco_30", "What colour is the vase?", "blue", ["white", "red", "green"])
    text = prompt(it)
    assert text == PROMPT.format(question="What colour is the vase?", options=it.options())
    assert [line[:3] for line in text.splitlines() if line[1:3] == ". "] == ["A. ", "B. ", "C. ", "D. "]
    assert item("p", "  ", "a", ["b"]) is None  # a blank question asks nothing
    with pytest.raises(ValueError, match="'distractors' must be a list of strings"):
        item("p", "q?", "a", "b")


# ---- scoring ----

def _release(root: Path, items: list[dict]) -> Path:
    """A VLM-SubtleBench release of ``items`` (test split), images under images/."""
    (root / "data").mkdir(parents=True)
    (root / "data" / "test.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    for k, i in enumerate(items):
        for key in ("image_1", "image_2"):
            _image(root / "images" / i[key].split("/resolve/main/images/")[-1], (40 * k % 255, 90, 120 + k))
    return root


#: (category, source id, answer, distractors, caption): three categories, captions on three items
ITEMS = [("state", "1", "second image", ["first image"], None),
         ("state", "2", "second image", ["first image"], None),
         ("attribute", "3", "blue", ["white", "red", "green"], "The vase is blue in the second image instead of white."),
         ("attribute", "4", "red", ["white", "blue"], "The car is red now."),
         ("quantity", "5", "one more screw", ["one screw fewer", "the same number"], None),
         ("quantity", "6", "two", ["one", "three"], "There are two more bolts on the plate.")]


@pytest.fixture(scope="module")
def subtle(tmp_path_factory) -> Path:
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset

    root = tmp_path_factory.mktemp("subtle")
    items = [_item(HUB + f"images/src/{sid}.png", HUB + f"images/src/{sid}_2.png", cat, "src", sid, caption=caption,
                   answer=answer, distractors=distractors, question=f"What differs in item {sid}?")
             for cat, sid, answer, distractors, caption in ITEMS]
    build_dataset(make_builder("vlm_subtlebench", _release(root / "raw", items)), root / "ds", progress=False)
    return root / "ds"


def _letters() -> dict[str, tuple[tuple[str, ...], str]]:
    return {f"{cat}_src_{sid}": ordered_choices(f"{cat}_src_{sid}", answer, distractors)
            for cat, sid, answer, distractors, _ in ITEMS}


def _answers() -> dict[str, str]:
    """Items 1 and 3 right (a letter; a lead-in and brackets), 2 and 4 wrong (a letter; another
    choice's text), 5 and 6 unparsed (two letters; no letter)."""
    letters = _letters()
    wrong = next(c for c in "AB" if c != letters["state_src_2"][1])
    return {"state_src_1": letters["state_src_1"][1], "state_src_2": wrong,
            "attribute_src_3": f"The answer is ({letters['attribute_src_3'][1]})", "attribute_src_4": "blue",
            "quantity_src_5": "A or B", "quantity_src_6": "I am not sure."}


HAND = {"overall": (2 / 6, 6, 2), "state": (1 / 2, 2, 0), "attribute": (1 / 2, 2, 0), "quantity": (0.0, 2, 2)}


def test_accuracy_per_category_equals_a_hand_computation_in_every_output(subtle, tmp_path):
    from idc_toolkit.evaluators.scoring import evaluate_predictions
    from idc_toolkit.metrics import score_groups
    from idc_toolkit.viewer.sources import read_evaluation

    answers = _answers()
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    out = tmp_path / "eval"
    m = evaluate_predictions(str(tmp_path / "answers.json"), dataset=str(subtle), split="test", out=str(out),
                             metrics=["BLEU", "CIDEr", "MC"], bootstrap=200)
    rows = {"overall": m["overall"], **m["by_category"]}
    for group, (accuracy, items, unparsed) in HAND.items():
        assert rows[group]["MC_accuracy"] == pytest.approx(accuracy)
        assert (rows[group]["MC_items"], rows[group]["MC_unparsed"]) == (items, unparsed)
        low, high = m["ci"][group]["MC_accuracy"]
        assert low <= accuracy <= high  # the bootstrap interval brackets the estimate
    assert m["ci"]["overall"]["MC_accuracy"][0] < m["ci"]["overall"]["MC_accuracy"][1]
    summary = m["meta"]["multiple_choice"]
    assert (summary["items"], summary["correct"], summary["wrong"], summary["unparsed"]) == (6, 2, 2, 2)
    assert summary["choice_order"] == CHOICE_ORDER and "multiple_choice" in m["meta"]["run"]
    # caption metrics: the captioned items only, exactly what scoring those alone gives; n/a where a category has none
    captioned = {pid: answers[pid] for pid in ("attribute_src_3", "attribute_src_4", "quantity_src_6")}
    refs = {pid: [caption] for (cat, sid, _, _, caption) in ITEMS if caption for pid in [f"{cat}_src_{sid}"]}
    alone = score_groups(captioned, refs, metrics=["BLEU", "CIDEr"])
    assert m["overall"]["Bleu_4"] == alone.groups["overall"].scores["Bleu_4"]
    assert m["overall"]["CIDEr"] == alone.groups["overall"].scores["CIDEr"]
    assert m["by_category"]["state"]["Bleu_4"] is None and m["by_category"]["state"]["CIDEr"] is None
    # per_pair.csv: the letter read, the correct letter, the outcome; no caption score where there is no caption
    letters = _letters()
    with (out / "per_pair.csv").open(newline="") as fh:
        pairs = {r["pair_id"]: r for r in csv.DictReader(fh)}
    assert pairs["state_src_1"]["mc_result"] == "correct" and pairs["state_src_1"]["MC_accuracy"] == "1.000000"
    assert pairs["attribute_src_4"]["mc_result"] == "wrong"  # "blue": another choice's text
    assert pairs["attribute_src_4"]["mc_letter"] == LETTERS[letters["attribute_src_4"][0].index("blue")]
    assert pairs["quantity_src_5"]["mc_result"].startswith("unparsed: 2 different letters")
    assert pairs["quantity_src_5"]["MC_accuracy"] == "0.000000" and pairs["quantity_src_5"]["mc_letter"] == ""
    assert pairs["state_src_2"]["mc_correct_letter"] == letters["state_src_2"][1]
    assert pairs["state_src_1"]["Bleu_4"] == "" and pairs["attribute_src_3"]["Bleu_4"] != ""
    with (out / "by_category.csv").open(newline="") as fh:
        table = {r["group"]: r for r in csv.DictReader(fh)}
    assert (table["quantity"]["MC_accuracy"], table["quantity"]["MC_items"], table["quantity"]["MC_unparsed"]) == \
        ("0.0000", "2", "2")
    md = (out / "metrics.md").read_text()
    assert "| MC_accuracy | MC items | MC unparsed |" in md and "6 items asked, 2 correct, 2 wrong, 2 unparsed" in md
    assert "| 33.3 [" in md
    view = read_evaluation(out)  # the viewer reads the letters as text, the accuracy as a score
    assert "MC_accuracy" in view.score_names and "mc_letter" not in view.score_names
    assert view.pairs["quantity_src_6"].choice.startswith("read no letter, correct ")
    assert "2 unparsed" in view.table()["choice_answers"]


def test_empty_caption_lists_take_no_part_in_the_ngram_metrics():
    from idc_toolkit.metrics import score_groups
    from idc_toolkit.metrics.mc_accuracy import ChoiceAccuracy
    from idc_toolkit.evaluators.predictions import References, prepare

    hyps = {"a": "the red cube moved", "b": "B", "c": "a blue sphere is gone"}
    refs = {"a": ["the red cube moved left"], "b": [], "c": ["the blue sphere is gone", "a sphere vanished"]}
    items = {"a": None, "b": item("b", "q?", "x", ["y"]), "c": None}
    mixed = score_groups(hyps, refs, {"g": ["a", "b"], "only_b": ["b"]}, ["BLEU", "CIDEr", "ROUGE_L"], bootstrap=50,
                         extra=[ChoiceAccuracy(list(refs), hyps, items)])
    plain = score_groups({k: hyps[k] for k in "ac"}, {k: refs[k] for k in "ac"}, {"g": ["a"]}, ["BLEU", "CIDEr", "ROUGE_L"],
                         bootstrap=50)
    for column in ("Bleu_4", "CIDEr", "ROUGE_L"):
        assert mixed.groups["overall"].scores[column] == plain.groups["overall"].scores[column]
        assert mixed.groups["only_b"].scores[column] is None
        assert mixed.per_pair[column][1] != mixed.per_pair[column][1]  # NaN: no caption, no score
    assert mixed.groups["only_b"].scores["MC_accuracy"] == 1.0 and mixed.groups["overall"].n == 3
    lo, hi = mixed.ci["overall"]["ROUGE_L"]
    assert 0 <= lo <= mixed.groups["overall"].scores["ROUGE_L"] <= hi <= 1  # resamples average the captioned pairs drawn
    # a pair with no caption and no question is still an error naming it
    with pytest.raises(EvaluationError, match="no reference at all: 'b'"):
        prepare({"a": "x", "b": "y"}, References({"a": ["x"], "b": []}, {"a": None, "b": None}, "refs"))
    asked = References({"a": ["x"], "b": []}, {"a": None, "b": None}, "refs", columns={"question": {"b": "q?"}})
    assert prepare({"a": "x", "b": "y"}, asked).references["b"] == []


def test_metrics_names_choose_between_accuracy_and_caption_metrics(subtle, demo_dataset):
    from idc_toolkit.evaluators.scoring import evaluate_predictions

    answers = _answers()
    only = evaluate_predictions(answers, dataset=str(subtle), split="test", metrics=["mc"])
    assert set(only["overall"]) == {"MC_accuracy", "n", "MC_items", "MC_correct", "MC_unparsed"}
    assert only["meta"]["arguments"]["metrics"] == ["MC"]
    captions = evaluate_predictions(answers, dataset=str(subtle), split="test", metrics=["BLEU"])
    assert "MC_accuracy" not in captions["overall"] and "multiple_choice" not in captions["meta"]
    with pytest.raises(EvaluationError, match="--metrics MC: .* has no question / answer / distractors columns"):
        evaluate_predictions({}, dataset=str(demo_dataset), split="test", metrics=["MC"], allow_missing=True)


def test_compare_runs_the_paired_test_on_accuracy(subtle, tmp_path):
    from idc_toolkit.evaluators.compare import compare_systems, tables

    letters = _letters()
    right = {pid: letter for pid, (_, letter) in letters.items()}
    report = compare_systems(_answers(), right, dataset=str(subtle), split="test", metrics=["MC"], bootstrap=300,
                             out=str(tmp_path / "cmp"))
    test = report["metrics"]["MC_accuracy"]
    assert (test["a"], test["b"]) == (pytest.approx(2 / 6), 1.0) and test["difference"] == pytest.approx(-4 / 6)
    assert test["ci_low"] <= test["difference"] <= test["ci_high"] < 0 and 0 < test["p_value"] < 0.05
    assert [r[0]["multiple_choice"]["unparsed"] for r in (report["runs"]["a"], report["runs"]["b"])] == [2, 0]
    assert "A0 2 of 6, B0 0 of 6" in tables(report)[0]
    assert list(report["metrics"]) == ["MC_accuracy"]


# ---- idc-eval --model vlm asks the questions ----

def test_vlm_asks_each_question_and_its_answers_are_scored(subtle, tiny_models, tmp_path):
    from transformers import AutoProcessor

    from idc_toolkit.cli.eval import main
    from idc_toolkit.metrics.mc_accuracy import ChoiceAccuracy, items_of
    from idc_toolkit.models.vlm import VlmInputs
    from idc_toolkit.multiple_choice import ONE_IMAGE_NOTE

    model = tiny_models("qwen2_vl")
    processor = AutoProcessor.from_pretrained(model)
    inputs = VlmInputs(processor, "Describe the change.")
    inputs.questions = True
    row = {"pair_id": "attribute_src_3", "question": "What colour is the vase?", "answer": "blue",
           "distractors": ["white", "red", "green"]}
    it = item(row["pair_id"], row["question"], row["answer"], row["distractors"])
    text = inputs.text(inputs.question(row))
    assert prompt(it) in text and "Describe the change." not in text and text.count("<|image_pad|>") == 2
    assert inputs.text(inputs.question(row)) != inputs.text()  # a row without a question is given the prompt
    assert not inputs.asks({"pair_id": "x", "question": None}) and inputs.asks(row)
    assert VlmInputs(processor, "x", single_image=True).question(row).startswith(ONE_IMAGE_NOTE)

    out = tmp_path / "run"
    args = ["--model", "vlm", "--base-model", str(model), "--dataset", str(subtle), "--split", "test", "--out", str(out),
            "--device", "cpu", "--batch-size", "4", "--max-new-tokens", "5", "--bootstrap", "50", "--no-progress"]
    assert main(args) == 0
    record = json.loads((out / "model.json").read_text())
    assert record["multiple_choice"]["choice_order"] == CHOICE_ORDER and record["multiple_choice"]["prompt"] == PROMPT
    assert "raw answer" in record["answer_cleaning"]
    answers = {r["pair_id"]: r["caption"] for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    assert list(answers) == list(_letters())
    metrics = json.loads((out / "metrics.json").read_text())
    expected = ChoiceAccuracy(list(answers), answers, items_of(list(answers), _columns(subtle)))
    assert metrics["overall"]["MC_accuracy"] == pytest.approx(float(expected.values["MC_accuracy"].mean()))
    assert metrics["meta"]["multiple_choice"]["unparsed"] == expected.counts(range(6))["MC_unparsed"]
    assert "Bleu_4" not in metrics["overall"]  # a run that answered questions is scored on them alone by default
    assert main(args) == 0  # the same run: its fingerprint (prompt, choice order) is unchanged


def _columns(dataset: Path) -> dict:
    from idc_toolkit.evaluators.predictions import load_references_dataset
    from idc_toolkit.multiple_choice import COLUMNS

    return load_references_dataset(str(dataset), "test", optional=COLUMNS).columns

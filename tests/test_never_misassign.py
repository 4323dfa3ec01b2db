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
    assert "holds an evaluation run with other settings" in err and "predictions:" in err and "--overwrite" in err
    assert eval_main(["--predictions", str(b), *base, "--overwrite"]) == 0
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["meta"]["predictions"] == str(b)


def test_p_values_are_shown_as_far_as_the_resamples_resolve_them():
    assert format_p_value(0.0, 1000) == "< 0.001" and format_p_value(0.0, 100) == "< 0.01"
    assert format_p_value(0.0421, 1000) == "0.042"


def test_rcc_ids_and_rccs_own_type_mapping_form_distractor_and_change_only(shared, tmp_path):
    """RCC's files as they are: ids ``000123.png`` / ``000123.png_n`` and its type_mapping.json
    (no distractor key). The ``_n`` pairs form ``distractor`` and equal RCC's separate nsc run;
    ``change_only`` equals its sc run."""
    types = json.loads((shared / "real_annotations" / "clevr_change" / "type_mapping.json").read_text())
    sc = [types["color"][0], types["color"][1], types["add"][0], types["move"][0]]  # "000000.png", ...
    refs, preds = {}, {}
    for k, sid in enumerate(sc):
        refs[sid] = [f"the cube number {k} changed its color", f"a thing {k} changed"]
        refs[sid + "_n"] = ["nothing has changed", "the scene is the same as before"]
        preds[sid] = f"the cube {k} changed color"
        preds[sid + "_n"] = "nothing changed" if k % 2 else "the scene is the same"
    ref_file = _coco(tmp_path, refs)
    pred_file = _write(tmp_path, "results.json", [{"image_id": i, "caption": c} for i, c in preds.items()])
    m = evaluate(str(pred_file), references=str(ref_file),
                 categories=str(shared / "real_annotations" / "clevr_change" / "type_mapping.json"),
                 metrics=["BLEU", "CIDEr"]).metrics
    assert m["by_category"]["distractor"]["n"] == 4 and m["change_only"]["n"] == 4
    assert m["by_category"]["color"]["n"] == 2 and not any("no category" in w for w in m["warnings"])
    for group, ids in (("distractor", [i + "_n" for i in sc]), ("change_only", sc)):
        alone = evaluate({i: preds[i] for i in ids}, references=str(_coco(tmp_path, {i: refs[i] for i in ids})),
                         metrics=["BLEU", "CIDEr"], breakdown=False).metrics["overall"]
        row = m["change_only"] if group == "change_only" else m["by_category"][group]
        assert row["Bleu_4"] == alone["Bleu_4"] and row["CIDEr"] == alone["CIDEr"]


def test_rcc_ids_are_accepted_against_a_built_dataset(demo_dataset, tmp_path):
    from idc_toolkit.evaluators.scoring import load_references

    refs = load_references(dataset=str(demo_dataset), split="test")
    as_rcc = {(pid[:-2] + ".png_n" if pid.endswith("_n") else pid + ".png"): caps[0] for pid, caps in refs.captions.items()}
    m = evaluate(as_rcc, dataset=str(demo_dataset), metrics=["BLEU"]).metrics
    assert m["overall"]["n"] == len(refs.captions)
    both = {**as_rcc, next(iter(refs.captions)): "x"}
    with pytest.raises(EvaluationError, match="name the same pair"):
        evaluate(both, dataset=str(demo_dataset), metrics=["BLEU"])


def test_blip2idc_protocol_replaces_no_change_predictions_and_drops_the_last_batch(tmp_path):
    refs = {**REFS, "2": ["nothing has changed", "the scene is the same as before", "no change"]}
    preds = {**PREDS, "2": "there is no change"}
    ref_file = _coco(tmp_path, refs)
    cats = _write(tmp_path, "cats.json", {"distractor": ["2"], "move": ["1", "3", "4"]})
    rcc = evaluate(preds, references=str(ref_file), categories=str(cats), metrics=["BLEU", "CIDEr"]).metrics
    b2 = evaluate(preds, references=str(ref_file), categories=str(cats), metrics=["BLEU", "CIDEr"], protocol="blip2idc").metrics
    assert b2["by_category"]["distractor"]["Bleu_1"] == pytest.approx(1.0) and rcc["by_category"]["distractor"]["Bleu_1"] < 0.8
    assert b2["meta"]["protocol"]["comparable_with_rcc"] is False and rcc["meta"]["protocol"]["comparable_with_rcc"]
    assert any("replaced by a random reference" in w for w in b2["warnings"])
    again = evaluate(preds, references=str(ref_file), categories=str(cats), metrics=["BLEU", "CIDEr"], protocol="blip2idc").metrics
    assert again["overall"] == b2["overall"]  # seeded
    dropped = evaluate({k: v for k, v in preds.items() if k != "4"}, references=str(ref_file), metrics=["BLEU"],
                       protocol="blip2idc", drop_last_batch=3).metrics
    assert dropped["overall"]["n"] == 3
    with pytest.raises(EvaluationError, match="needs --protocol blip2idc"):
        evaluate(preds, references=str(ref_file), metrics=["BLEU"], drop_last_batch=3)


def test_rsicc_protocol_scores_vocabulary_ids(shared, tmp_path):
    """RSICC's eval.py: METEOR on vocabulary ids is 0.1303 on the DDLA Spot-the-Diff set, where
    coco-caption on words gives 0.1091 (test_ddla_through_the_cli_with_coco_files)."""
    folder = shared / "paper_predictions/spot-the-diff"
    m = evaluate(str(folder / "ddla_rerun_predfile.json"), references=str(folder / "ddla_rerun_gtfile.json"),
                 metrics=["METEOR"], protocol="rsicc").metrics
    assert round(m["overall"]["METEOR"], 4) == 0.1303
    assert m["meta"]["protocol"]["comparable_with_rcc"] is False


def test_rsicc_groups_from_the_second_reference_and_classification_accuracy(tmp_path):
    refs = {"a": ["the road was widened", "a road appears"],
            "b": ["nothing", "the scene is the same as before", "x"],
            "c": ["there is no difference", "a house was built"],  # 2nd reference decides: change
            "d": ["no change", "There is no difference."]}
    preds = {"a": "a new road appears", "b": "there is no difference", "c": "no change has occurred", "d": "a house was built"}
    m = evaluate(preds, references=str(_coco(tmp_path, refs)), metrics=["BLEU"], protocol="rsicc").metrics
    assert m["by_category"]["change"]["n"] == 2 and m["by_category"]["no_change"]["n"] == 2
    acc = m["meta"]["protocol"]["classification_accuracy"]
    assert acc == {"change": 0.5, "no_change": 0.5, "overall": 0.5}  # a right, c wrong; b right, d wrong
    assert "S*m" not in m["overall"]  # only where its four metrics were computed


def test_rsicc_s_star_m_is_the_mean_of_its_four_metrics_with_its_caveat(tmp_path):
    refs = {"a": ["the road was widened", "a road appears"], "b": ["nothing", "the scene is the same as before"],
            "c": ["many houses are built", "a house was built"], "d": ["no change", "there is no difference"]}
    preds = {"a": "a new road appears", "b": "the scene is the same as before", "c": "houses were built", "d": "no change"}
    m = evaluate(preds, references=str(_coco(tmp_path, refs)), metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"],
                 protocol="rsicc", out=str(tmp_path / "eval")).metrics
    for group in (m["overall"], *m["by_category"].values()):
        parts = [group[c] for c in ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr")]
        assert group["S*m"] == pytest.approx(sum(parts) / 4)
    assert any(w.startswith("S*m is the mean of BLEU-4, METEOR, ROUGE-L and CIDEr") for w in m["warnings"])
    header = (tmp_path / "eval" / "metrics.md").read_text().split("\n")
    assert any("| CIDEr | S*m |" in line for line in header)


def test_a_caption_too_long_for_meteor_names_its_pair_before_the_jvm_starts(demo_dataset, monkeypatch):
    from idc_toolkit.evaluators.scoring import evaluate, load_references
    from idc_toolkit.metrics import meteor

    refs = load_references(dataset=str(demo_dataset), split="test")
    preds = {pid: caps[0] for pid, caps in refs.captions.items()}
    victim = sorted(preds)[3]
    preds[victim] = "a red cube " * 24_000  # 264 kB

    def no_jvm(*a, **k):
        raise AssertionError("the JVM was started")

    monkeypatch.setattr(meteor, "acquire_process", no_jvm)
    with pytest.raises(EvaluationError, match=f"pair '{victim}': its prediction has 264,000 characters"):
        evaluate(preds, dataset=str(demo_dataset), metrics=["METEOR"])
    evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"])  # without METEOR it is scored as given

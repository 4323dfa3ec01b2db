"""Groups beyond the dataset's categories: a group file or column on a built dataset, and
RobustChangeCaptioning's viewpoint difficulty (evaluate_by_IOU.py), checked against scoring
each group's pairs alone and against ground truth built here."""

import json
import shutil

import pytest

from idc_toolkit.builders import make_builder

from idc_toolkit.building.pipeline import build_dataset
from idc_toolkit.errors import EvaluationError
from idc_toolkit.evaluators.scoring import evaluate, load_references

from conftest import csv_rows

pytestmark = pytest.mark.java
FAMILIES = ["BLEU", "CIDEr"]


def _score_subset(preds, captions):
    from idc_toolkit.metrics import score_groups

    r = score_groups(preds, captions, metrics=FAMILIES)
    return r.groups["overall"].scores


@pytest.fixture(scope="module")
def scored(demo_dataset):
    refs = load_references(dataset=str(demo_dataset), split="test")
    preds = {pid: caps[-1] for pid, caps in refs.captions.items()}
    return refs, preds


def test_group_file_on_a_built_dataset(demo_dataset, scored, tmp_path):
    refs, preds = scored
    ids = list(refs.captions)
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"first": ids[:4], "second": ids[3:8]}))  # ids[3] in both
    m = evaluate(preds, dataset=str(demo_dataset), groups=str(groups), metrics=FAMILIES).metrics
    assert m["by_category"]["first"]["n"] == 4 and m["by_category"]["second"]["n"] == 5
    for name, sub in (("first", ids[:4]), ("second", ids[3:8])):
        alone = _score_subset({i: preds[i] for i in sub}, {i: refs.captions[i] for i in sub})
        assert {k: m["by_category"][name][k] for k in alone} == alone
    with pytest.raises(EvaluationError, match="categories= goes with references="):
        evaluate(preds, dataset=str(demo_dataset), categories=str(groups), metrics=FAMILIES)


def test_group_by_a_dataset_column(tmp_path):
    from datasets import Dataset

    folder = tmp_path / "ds"
    (folder / "data").mkdir(parents=True)
    Dataset.from_dict({"pair_id": ["a", "b", "c", "d"], "captions": [["a red car"], ["a blue car"], ["a man"], ["a dog"]],
                       "difficulty": ["easy", "hard", "hard", None]}).to_parquet(folder / "data" / "test-00000-of-00001.parquet")
    preds = {"a": "a red car", "b": "a car", "c": "a man", "d": "a cat"}
    m = evaluate(preds, dataset=str(folder), group_by="difficulty", metrics=FAMILIES).metrics
    assert m["by_category"]["easy"]["n"] == 1 and m["by_category"]["hard"]["n"] == 2
    assert m["by_category"]["hard"]["Bleu_1"] == _score_subset({"b": preds["b"], "c": preds["c"]},
                                                                {"b": ["a blue car"], "c": ["a man"]})["Bleu_1"]
    with pytest.raises(EvaluationError, match="no 'nope' column"):
        evaluate(preds, dataset=str(folder), group_by="nope", metrics=FAMILIES)


def test_viewpoint_difficulty_groups_as_evaluate_by_iou(tmp_path):
    """8 change pairs + their distractors; IoU ranks known here: hardest 25% = the 2 lowest."""
    ious = {str(k): v for k, v in enumerate([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.6])}
    anns, preds = [], {}
    for k in range(8):
        sid = f"{k:06d}"
        anns += [{"image_id": sid, "caption": f"the cube {k} moved left"}, {"image_id": sid, "caption": f"cube {k} moved"},
                 {"image_id": sid + "_n", "caption": "nothing changed"}]
        preds[sid], preds[sid + "_n"] = (f"the cube {k} moved" if k % 2 else "a sphere appeared"), "no change"
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"annotations": anns}))
    iou_file = tmp_path / "change_captions_by_IOU.json"
    iou_file.write_text(json.dumps(ious))
    m = evaluate(preds, references=str(refs), iou_file=str(iou_file), metrics=FAMILIES).metrics
    bc = m["by_category"]
    assert bc["iou_hardest_25"]["n"] == 2 and bc["iou_easiest_25"]["n"] == 2 and [bc[f"iou_q{q}"]["n"] for q in (1, 2, 3, 4)] == [2] * 4
    captions = {}
    for a in anns:
        captions.setdefault(a["image_id"], []).append(a["caption"])
    for name, sub in (("iou_hardest_25", ["000001", "000005"]), ("iou_easiest_25", ["000006", "000000"]),
                      ("iou_q2", ["000003", "000002"])):
        assert {k: bc[name][k] for k in ("Bleu_4", "CIDEr")} == {
            k: v for k, v in _score_subset({i: preds[i] for i in sub}, {i: captions[i] for i in sub}).items() if k in ("Bleu_4", "CIDEr")}
    iou_file.write_text(json.dumps({k: v for k, v in ious.items() if k != "3"}))
    with pytest.raises(EvaluationError, match="no viewpoint IoU for 1 change pair"):
        evaluate(preds, references=str(refs), iou_file=str(iou_file), metrics=FAMILIES)


def test_clevr_change_keeps_viewpoint_iou_and_idc_eval_uses_the_column(demo_raw, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(demo_raw, raw)
    splits = json.loads((raw / "splits.json").read_text())
    ids = [i for ids in splits.values() for i in ids]
    (raw / "change_captions_by_IOU.json").write_text(json.dumps({str(i): 0.5 + 0.01 * k for k, i in enumerate(ids)}))
    build_dataset(make_builder("clevr_change", raw), tmp_path / "out", progress=False)
    refs = load_references(dataset=str(tmp_path / "out"), split="test", iou_column="viewpoint_iou")
    assert all((v is None) == pid.endswith("_n") for pid, v in refs.ious.items())
    preds = {pid: caps[0] for pid, caps in refs.captions.items()}
    m = evaluate(preds, dataset=str(tmp_path / "out"), iou_column="viewpoint_iou", metrics=FAMILIES).metrics
    n_change = sum(not p.endswith("_n") for p in preds)
    assert m["by_category"]["iou_hardest_25"]["n"] == int(n_change * 0.25)


def test_layouts_metadata_progress_and_chart_series(demo_dataset, scored, tmp_path, capsys):
    from idc_toolkit.cli.eval import main as eval_main
    from idc_toolkit.evaluators.outputs import chart_series

    refs, preds = scored
    pred_file = tmp_path / "p.json"
    pred_file.write_text(json.dumps(preds))
    out = tmp_path / "out"
    assert eval_main(["--predictions", str(pred_file), "--dataset", str(demo_dataset), "--out", str(out),
                      "--metrics", "BLEU", "METEOR", "CIDEr", "--layout", "all", "--bootstrap", "20"]) == 0
    err = capsys.readouterr().err
    assert "[idc-eval] tokenizing" in err and "[idc-eval] bootstrap: 20 resamples" in err
    m = json.loads((out / "metrics.json").read_text())
    meta = m["meta"]
    assert meta["arguments"]["protocol"] == "rcc" and meta["arguments"]["metrics"] == ["BLEU", "METEOR", "CIDEr"]
    assert meta["date"] and meta["datasets_version"] and meta["java_version"] and meta["seed"] == 0
    total = (out / "layout_total_semantic.md").read_text()
    assert "Total B4" in total and "Semantic change C" in total
    assert f"{100 * m['change_only']['CIDEr']:.1f}" in total and f"{100 * m['overall']['Bleu_4']:.1f}" in total
    by_type = (out / "layout_by_type.md").read_text()
    assert "| metric | Color | Texture | Add | Drop | Move |" in by_type
    assert f"{100 * m['by_category']['material']['METEOR']:.1f}" in by_type.splitlines()[3]  # the M row
    assert r"\begin{tabular}" in (out / "layout_by_type.tex").read_text()
    rows = csv_rows(out / "by_category.csv")
    assert [r["group"] for r in rows][:2] == ["overall", "color"] and rows[0]["name"] == "Total"
    from idc_toolkit.evaluators.scoring import evaluate

    ev = evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU", "CIDEr", "SPICE"], bootstrap=20)
    series = chart_series(ev.result)
    assert "SPICE" not in series  # no values: no legend entry
    assert set(series) == {"Bleu_4", "CIDEr"} and any(v > 0 for v in series["CIDEr"]["err_high"])


def test_a_non_rcc_number_never_travels_without_its_protocol(demo_dataset, scored, tmp_path):
    """Every pasteable output of a blip2idc-protocol run says so: layout rows and captions
    (markdown and LaTeX), by_category.csv, metrics.md; rcc runs carry no caveat."""
    refs, preds = scored
    for protocol, caveat in (("blip2idc", True), ("rcc", False)):
        out = tmp_path / protocol
        evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU", "CIDEr"], protocol=protocol, layouts=["all"],
                 out=out, name="ours")
        for name in ("layout_total_semantic.md", "layout_total_semantic.tex", "layout_by_type.md", "layout_by_type.tex",
                     "metrics.md"):
            text = (out / name).read_text()
            assert ("NOT comparable with rcc" in text) == caveat, (protocol, name)
        assert ("ours (blip2idc protocol, not comparable with rcc)" in (out / "layout_total_semantic.md").read_text()) == caveat
        assert r"\label{tab:idc-by-type}" in (out / "layout_by_type.tex").read_text()
        rows = csv_rows(out / "by_category.csv")
        assert {r["protocol"] for r in rows} == {protocol}
        assert {r["comparable_with_rcc"] for r in rows} == {"no" if caveat else "yes"}


def test_layouts_are_checked_before_scoring_and_all_means_all_that_apply(scored, tmp_path, monkeypatch):
    refs, preds = scored
    coco = tmp_path / "refs.json"  # a reference file without categories
    anns = [{"image_id": pid, "caption": c} for pid, caps in refs.captions.items() for c in caps]
    coco.write_text(json.dumps({"images": [{"id": pid} for pid in refs.captions], "annotations": anns}))

    def never(*a, **k):
        raise AssertionError("scored before the layouts were checked")

    monkeypatch.setattr("idc_toolkit.metrics.core.score_groups", never)
    with pytest.raises(EvaluationError, match="--layout by-type needs categories"):
        evaluate(preds, references=str(coco), layouts=["by-type"], out=tmp_path / "o", metrics=["BLEU"])
    assert not (tmp_path / "o").exists()
    monkeypatch.undo()
    evaluate(preds, references=str(coco), layouts=["all"], out=tmp_path / "o2", metrics=["BLEU"], breakdown=False)
    assert (tmp_path / "o2" / "layout_total_semantic.md").is_file() and not (tmp_path / "o2" / "layout_by_type.md").exists()


def test_rsicc_on_clevr_style_data_says_what_it_did_and_strict_refuses(demo_dataset, scored):
    refs, preds = scored
    m = evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"], protocol="rsicc").metrics
    said = [w for w in m["warnings"] if "regrouped these pairs by their 2nd reference" in w]
    assert len(said) == 1 and "ignored their own categories (add, color, distractor" in said[0]
    with pytest.raises(EvaluationError, match="refused under --strict"):
        evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"], protocol="rsicc", strict=True)
    with pytest.raises(EvaluationError, match="--protocol rsicc forms its own change / no_change groups"):
        evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"], protocol="rsicc", group_by="category")


def test_evaluation_folder_follows_the_run_engine_rule(demo_dataset, scored, tmp_path):
    """Predictions that idc-eval --model wrote stay through an evaluation's --overwrite; an
    evaluation written before the record existed (metrics.json only) is still recognised."""
    from idc_toolkit.errors import RunError

    refs, preds = scored
    out = tmp_path / "eval"
    out.mkdir()
    (out / "predictions.jsonl").write_text("{}\n")  # what generation keeps beside an evaluation
    evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"], out=out)
    with pytest.raises(RunError, match=r"holds an evaluation run with other settings \(.*metrics"):
        evaluate(preds, dataset=str(demo_dataset), metrics=["CIDEr"], out=out)
    evaluate(preds, dataset=str(demo_dataset), metrics=["CIDEr"], out=out, overwrite=True)
    assert (out / "predictions.jsonl").read_text() == "{}\n"
    (out / ".idc_run" / "evaluation.json").unlink()  # as an older toolkit left it
    evaluate(preds, dataset=str(demo_dataset), metrics=["CIDEr"], out=out)  # the same run: rewritten
    with pytest.raises(RunError, match="other settings"):
        evaluate(preds, dataset=str(demo_dataset), metrics=["BLEU"], out=out)

"""``idc-eval masks``: the mIoU of Change-Agent's ``Evaluator`` (Multi_change/utils_tool/metrics.py at
b3cfc9a, run under numpy 2.4.6 on the arrays below; its numbers are written in), per class and per
category, from a dataset column or a folder of PNGs, with bootstrap intervals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.builders import make_builder
from idc_toolkit.building import build_dataset
from idc_toolkit.cli.eval import main
from idc_toolkit.errors import IDCError

#: Change-Agent's Evaluator(3) on ARRAYS: Mean_Intersection_over_Union(), Pixel_Accuracy(),
#: Pixel_Accuracy_Class() (its mean of TP / ground-truth pixels, our recall), Recall_Class()
#: (its mean of TP / predicted pixels, our precision); and on the arrays binarised (> 0)
CHANGE_AGENT = {"mIoU": 0.6626373593006556, "IoU": [0.8837209302325582, 0.6086956521739131, 0.4954954954954955],
                "accuracy": 0.8923611111111112, "mean_recall": 0.8781452087007642, "mean_precision": 0.7301049118112557,
                "binary_mIoU": 0.7469063366759121}


def arrays():
    """Six 12 x 12 class maps (0 background, 1 and 2 two change classes; pair 4 unchanged) and
    predictions with 15% of their pixels redrawn."""
    rng = np.random.default_rng(2024)
    gts, preds = [], []
    for i in range(6):
        gt = np.zeros((12, 12), dtype=np.uint8)
        gt[rng.integers(0, 6):rng.integers(6, 12), rng.integers(0, 6):rng.integers(6, 12)] = 1 + i % 2
        if i == 4:
            gt[:] = 0
        pred = gt.copy()
        flip = rng.random((12, 12)) < 0.15
        pred[flip] = rng.integers(0, 3, size=flip.sum())
        gts.append(gt)
        preds.append(pred)
    return gts, preds


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A folder dataset of the six pairs (categories add / drop alternating; label/ = the binary
    ground truth, so the dataset has change_mask), and the class maps as PNG folders."""
    root = tmp_path_factory.mktemp("masks")
    gts, preds = arrays()
    raw = root / "raw"
    for sub in ("before", "after", "label", "gt", "pred", "pred_binary"):
        (raw if sub in ("before", "after", "label") else root).joinpath(sub).mkdir(parents=True)
    lines = ["image,caption,category"]
    for i, (gt, pred) in enumerate(zip(gts, preds)):
        for side in ("before", "after"):
            Image.new("RGB", (12, 12), (i * 20, 50, 50)).save(raw / side / f"p{i}.png")
        Image.fromarray((gt > 0).astype(np.uint8) * 255).save(raw / "label" / f"p{i}.png")
        Image.fromarray(gt).save(root / "gt" / f"p{i}.png")
        Image.fromarray(pred).save(root / "pred" / f"p{i}.png")
        Image.fromarray((pred > 0).astype(np.uint8) * 255).save(root / "pred_binary" / f"p{i}.png")
        lines.append(f"p{i}.png,a change,{'add' if i % 2 == 0 else 'drop'}")
    (raw / "captions.csv").write_text("\n".join(lines) + "\n")
    dataset = build_dataset(make_builder("folder", raw), root / "ds", progress=False).out_dir
    return root, dataset


def test_class_maps_score_as_change_agents_evaluator(setup, capsys):
    root, dataset = setup
    assert main(["masks", "--dataset", str(dataset), "--reference", str(root / "gt"), "--predicted", str(root / "pred"),
                 "--class-names", "background", "road", "building", "--out", str(root / "out")]) == 0
    m = json.loads((root / "out" / "masks.json").read_text())
    o = m["overall"]
    assert o["mIoU"] == pytest.approx(CHANGE_AGENT["mIoU"], abs=1e-12)
    assert [o["per_class"][c]["IoU"] for c in ("background", "road", "building")] == pytest.approx(CHANGE_AGENT["IoU"])
    assert o["accuracy"] == pytest.approx(CHANGE_AGENT["accuracy"])
    assert np.mean([o["per_class"][c]["recall"] for c in m["classes"]]) == pytest.approx(CHANGE_AGENT["mean_recall"])
    assert np.mean([o["per_class"][c]["precision"] for c in m["classes"]]) == pytest.approx(CHANGE_AGENT["mean_precision"])
    assert set(m["by_category"]) == {"add", "drop"} and m["by_category"]["add"]["n"] == 3
    assert "| overall | 6 | 66.3 | 89.2 | 88.4 | 60.9 | 49.5 |" in capsys.readouterr().out


def test_a_mask_column_against_binary_predictions_with_intervals(setup):
    from idc_toolkit.evaluators.mask_scores import evaluate_masks

    root, dataset = setup
    m = evaluate_masks(dataset=str(dataset), reference="change_mask", predicted=str(root / "pred_binary"), bootstrap=200)
    assert m["classes"] == ["no change", "change"] and m["overall"]["mIoU"] == pytest.approx(CHANGE_AGENT["binary_mIoU"])
    low, high = m["overall"]["ci"]["mIoU"]
    assert low < m["overall"]["mIoU"] < high
    both_maps = evaluate_masks(dataset=str(dataset), reference=str(root / "gt"), predicted=str(root / "pred"), binary=True)
    assert both_maps["overall"]["mIoU"] == pytest.approx(CHANGE_AGENT["binary_mIoU"])


def test_missing_masks_and_unknown_columns_are_refused_in_one_line(setup, tmp_path):
    from idc_toolkit.evaluators.mask_scores import evaluate_masks

    root, dataset = setup
    partial = tmp_path / "partial"
    partial.mkdir()
    Image.fromarray(np.zeros((12, 12), dtype=np.uint8)).save(partial / "p0.png")
    with pytest.raises(IDCError, match=r"5 pair\(s\) lack a predicted or a reference mask: 'p1', 'p2'"):
        evaluate_masks(dataset=str(dataset), reference=str(root / "gt"), predicted=str(partial))
    m = evaluate_masks(dataset=str(dataset), reference=str(root / "gt"), predicted=str(partial), allow_missing=True)
    assert m["overall"]["n"] == 1 and "5 pair(s) without both masks were left out" in m["notes"][0]
    with pytest.raises(IDCError, match="--column entity_mask: .* has no such column"):
        evaluate_masks(dataset=str(dataset), reference="change_mask", column="entity_mask")

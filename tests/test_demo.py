import json
import re

import pytest

from idc_toolkit.cli.demo import main

pytestmark = pytest.mark.java

COLOURS = "red|blue|green|yellow|purple|cyan|brown|gray"


def change_named(caption: str) -> str:
    """The change type a caption names, by a fixed keyword rule over the demo's wording."""
    c = caption.lower()
    if re.search(r"no change|nothing has changed|identical|same as before", c):
        return "distractor"
    if re.search(r"\b(metal|rubber)$", c) or " from " in c:
        return "material"
    if re.search(rf"(changed to|became|turned|painted .*) ({COLOURS})$", c):
        return "color"
    if re.search(r"added|\bnew\b|newly", c):
        return "add"
    if re.search(r"missing|disappeared|gone|removed", c):
        return "drop"
    if re.search(r"moved|location", c):
        return "move"
    return "none"


def test_demo_end_to_end_with_a_tiny_model_then_rerun(tmp_path, capsys):
    """One demo run (the slowest test, so it runs once) covers every step and the tiny model."""
    out = tmp_path / "demo"
    assert main(["--out", str(out), "--n-per-type", "5", "--with-model", "--train-epochs", "1", "--bootstrap", "20"]) == 0
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
    categories = dict(zip(test["pair_id"], (test.features["category"].int2str(c) for c in test["category"])))
    for name in ("blip2idc", "davir"):  # both recipes fine-tuned from the shipped bases: captions that follow the pair
        preds = [json.loads(line) for line in (out / f"eval_{name}" / "predictions.jsonl").read_text().splitlines()]
        captions = [p["caption"] for p in preds]
        assert len(captions) == 10 and len(set(captions)) >= 3, captions  # at least a quarter distinct
        matched = sum(change_named(p["caption"]) == categories[p["pair_id"]] for p in preds)
        assert matched >= 5, (name, matched, [(p["caption"], categories[p["pair_id"]]) for p in preds])
        steps = [json.loads(line) for line in (out / "runs" / name / "steps.jsonl").read_text().splitlines()]
        assert steps and ("attention_loss" in steps[0]) == (name == "davir")
    assert "| BLIP2IDC (tiny, fine-tuned) |" in printed and "| nearest-neighbour baseline |" in printed
    assert "| best constant caption |" in printed
    assert sorted((out / "runs" / "davir" / "attention").iterdir())
    # it ends with the pair browser of its test split and the three evaluations
    assert f"open {(out / 'view' / 'index.html').resolve().as_uri()}" in printed
    site = json.loads((out / "view" / "assets" / "site.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    assert [s["name"] for s in site["systems"]] == ["nearest-neighbour baseline", "best constant caption",
                                                    "BLIP2IDC (tiny, fine-tuned)", "DAVIR (tiny, fine-tuned)",
                                                    "Qwen2-VL (tiny, random, zero-shot)"]
    assert "| Qwen2-VL (tiny, random, zero-shot) |" in printed  # the zero-shot row beside the baseline
    assert json.loads((out / "eval_vlm" / "model.json").read_text())["preprocess"] == "two images in one user turn: before, then after"
    assert site["n_pairs"] == 10
    # the docs' examples' inputs: Spot-the-Diff's raw layout and quirks, a photo folder, coco and RCC files
    spot = out / "spot-the-diff" / "data"
    train = json.loads((spot / "annotations" / "train.json").read_text())
    ids = [item["img_id"] for item in train]
    assert all(i.isdigit() and not i.startswith("0") for i in ids) and len(set(ids)) < len(ids)  # several items per id
    assert "" in {s for item in train for s in item["sentences"]}
    assert all((spot / "resized_images" / f"{i}{end}").is_file() for i in ids for end in (".png", "_2.png", "_diff.jpg"))
    assert sorted(p.name for p in (out / "my_pairs" / "before").iterdir()) == ["garden.jpg", "street.jpg"]
    assert (out / "my_pairs" / "captions.csv").read_text().startswith("image,caption\n")
    coco = json.loads((out / "coco" / "refs.json").read_text())
    assert {a["image_id"] for a in coco["annotations"]} == set(categories)
    assert {p["image_id"] for p in json.loads((out / "coco" / "preds.json").read_text())} == set(categories)
    rcc = json.loads((out / "rcc" / "total_change_captions_reformat.json").read_text())
    assert len({a["image_id"] for a in rcc["annotations"]}) == 2 * 25  # every split, as RCC's own file
    assert {p["image_id"] for p in json.loads((out / "rcc" / "sc_nsc_results.json").read_text())} == {
        f"{pid[:6]}.png_n" if pid.endswith("_n") else f"{pid}.png" for pid in categories}
    assert main(["--out", str(out), "--n-per-type", "5", "--no-eval"]) == 0
    assert "reusing the demo raw release" in capsys.readouterr().out


def test_the_examples_never_remove_a_partial_folder_they_did_not_write(tmp_path):
    """A leftover ``<folder>.partial`` is the demo's only when it holds the demo's mark."""
    import pytest

    from idc_toolkit.demo.examples import write_spot_the_diff_release
    from idc_toolkit.errors import IDCError

    theirs = tmp_path / "spot-the-diff.partial"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(IDCError, match="not written by idc-demo"):
        write_spot_the_diff_release(tmp_path / "spot-the-diff")
    assert (theirs / "notes.txt").read_text() == "mine"
    (theirs / "notes.txt").unlink()
    theirs.rmdir()
    ours = write_spot_the_diff_release(tmp_path / "spot-the-diff")
    assert not (ours / ".idc-demo-partial").exists() and not theirs.exists()

"""``idc-eval`` end to end: files written, breakdown present, formats, errors, compare, no torch."""

import json
import subprocess
import sys

import pytest

from idc_toolkit.cli.eval import main

from conftest import csv_rows

pytestmark = pytest.mark.java


def _test_refs(dataset):
    from idc_toolkit.evaluators.predictions import load_references_dataset

    return load_references_dataset(str(dataset), "test")


def test_ddla_through_the_cli_with_coco_files(shared, tmp_path, capsys, monkeypatch):
    import idc_toolkit.evaluators.outputs as outputs

    folder = shared / "paper_predictions/spot-the-diff"
    out = tmp_path / "eval"
    argv = ["--predictions", str(folder / "ddla_rerun_predfile.json"), "--references",
            str(folder / "ddla_rerun_gtfile.json"), "--metrics", "BLEU", "METEOR", "ROUGE_L", "CIDEr"]
    assert main([*argv, "--out", str(out)]) == 0
    monkeypatch.setattr(outputs, "ROWS_FORMATTED", 100)  # per_pair.csv's scores formatted in 13 blocks, the last short
    assert main([*argv, "--out", str(tmp_path / "blocks"), "-q"]) == 0
    assert (tmp_path / "blocks" / "per_pair.csv").read_bytes() == (out / "per_pair.csv").read_bytes()
    m = json.loads((out / "metrics.json").read_text())
    assert {k: round(m["overall"][k], 4) for k in ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr")} == {
        "Bleu_4": 0.0757, "METEOR": 0.1091, "ROUGE_L": 0.2797, "CIDEr": 0.3506}
    assert m["overall"]["n"] == 1270 and m["meta"]["pycocoevalcap_version"] == "1.2"
    assert any("7 empty reference(s) kept" in w for w in m["warnings"])
    rows = csv_rows(out / "per_pair.csv")
    assert len(rows) == 1270 and float(rows[0]["CIDEr"]) >= 0
    assert "| overall | 1270 | " in (out / "metrics.md").read_text()
    assert (out / "by_category.png").stat().st_size > 1000
    assert "7.6" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["dict", "coco", "jsonl"])
def test_dataset_breakdown_and_prediction_formats(demo_dataset, tmp_path, fmt):
    refs = _test_refs(demo_dataset)
    preds = {pid: caps[0] for pid, caps in refs.captions.items()}
    path = tmp_path / f"preds.{'jsonl' if fmt == 'jsonl' else 'json'}"
    if fmt == "dict":
        path.write_text(json.dumps(preds))
    elif fmt == "coco":
        path.write_text(json.dumps([{"image_id": k, "caption": v} for k, v in preds.items()]))
    else:
        path.write_text("\n".join(json.dumps({"pair_id": k, "caption": v}) for k, v in preds.items()))
    out = tmp_path / "eval"
    assert main(["--predictions", str(path), "--dataset", str(demo_dataset), "--out", str(out),
                 "--metrics", "BLEU", "ROUGE_L", "CIDEr", "SPICE", "--bootstrap", "50"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert list(m["by_category"]) == ["color", "material", "add", "drop", "move", "distractor"]
    assert m["change_only"]["n"] == 5 and m["by_category"]["distractor"]["n"] == 5
    assert m["overall"]["ROUGE_L"] == pytest.approx(1.0)
    assert m["overall"]["SPICE"] is None and "SPICE unavailable" in m["meta"]["spice_status"]
    assert set(m["ci"]) == {"overall", "change_only", "distractor"}  # groups with >= 2 pairs
    assert m["meta"]["dataset_fingerprint"] and m["meta"]["n_pairs"] == 10


def test_missing_predictions_fail_with_the_ids(demo_dataset, tmp_path, capsys):
    refs = _test_refs(demo_dataset)
    some = dict(list({p: c[0] for p, c in refs.captions.items()}.items())[:4])
    path = tmp_path / "p.json"
    path.write_text(json.dumps(some))
    assert main(["--predictions", str(path), "--dataset", str(demo_dataset), "--out", str(tmp_path / "e")]) == 1
    err = capsys.readouterr().err
    assert "no prediction for 6 reference id(s)" in err and "--allow-missing" in err
    assert main(["--predictions", str(path), "--dataset", str(demo_dataset), "--out", str(tmp_path / "e"),
                 "--allow-missing", "--metrics", "BLEU"]) == 0
    assert json.loads((tmp_path / "e" / "metrics.json").read_text())["meta"]["n_missing"] == 6


def test_malformed_predictions_name_the_file(tmp_path, demo_dataset, capsys):
    path = tmp_path / "p.json"
    path.write_text('{"a": "x",')
    assert main(["--predictions", str(path), "--dataset", str(demo_dataset), "--out", str(tmp_path / "e")]) == 1
    assert "p.json: not JSON at byte 10 (line 1, column 11: Expecting property name" in capsys.readouterr().err


def test_compare(demo_dataset, tmp_path, capsys):
    refs = _test_refs(demo_dataset)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({p: c[0] for p, c in refs.captions.items()}))
    b.write_text(json.dumps({p: "purple elephants" for p in refs.captions}))
    assert main(["compare", str(a), str(b), "--dataset", str(demo_dataset), "--out", str(tmp_path / "c"),
                 "--bootstrap", "200", "--metrics", "BLEU", "CIDEr"]) == 0
    report = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert report["metrics"]["CIDEr"]["mean_difference"] > 0 and report["metrics"]["CIDEr"]["p_value"] < 0.05
    shown = capsys.readouterr().out
    assert "p-value" in shown and "| A (x100) | B (x100) | A-B (x100) |" in shown
    cider = report["metrics"]["CIDEr"]
    assert cider["difference"] == cider["a"] - cider["b"]  # the printed A-B is the systems' difference, not the bootstrap mean
    assert f"| CIDEr | {100 * cider['a']:.2f} | {100 * cider['b']:.2f} | {100 * cider['difference']:+.2f} |" in shown
    compare = ["compare", str(a), str(b), "--dataset", str(demo_dataset), "--out", str(tmp_path / "c"), "--metrics", "BLEU",
               "CIDEr"]
    assert main([*compare, "--bootstrap", "200"]) == 0  # the same comparison: rewritten
    assert main([*compare, "--bootstrap", "100"]) == 1  # another one into the same folder: refused, naming it
    assert "holds a compare run with other settings (bootstrap: 200 -> 100)" in capsys.readouterr().err
    assert main([*compare, "--bootstrap", "100", "--overwrite"]) == 0
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["resamples"] == 100
    (tmp_path / "c" / "notes.txt").write_text("mine")
    assert main([*compare, "--bootstrap", "50", "--overwrite"]) == 1 and (tmp_path / "c" / "notes.txt").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "compare.json").write_text('{"my": "own notes"}')
    at_mine = ["compare", str(a), str(b), "--dataset", str(demo_dataset), "--out", str(mine), "--metrics", "BLEU"]
    for extra in ([], ["--overwrite"]):  # a user's own compare.json is never replaced, and is called the user's
        assert main([*at_mine, *extra]) == 1
        err = capsys.readouterr().err
        assert "compare run with other settings" not in err and "compare.json" in err, err
        assert json.loads((mine / "compare.json").read_text()) == {"my": "own notes"}


def test_compare_scores_both_systems_on_one_meteor_jvm(demo_dataset, tmp_path, monkeypatch):
    """With the jars (``--scorer java``), A and B share one set of JVMs (loading one costs ~6 s of
    a core), with the values of separate evaluations of A and of B (and of the Python scorer)."""
    from idc_toolkit.evaluators.compare import compare_systems
    from idc_toolkit.evaluators.scoring import evaluate_predictions
    from idc_toolkit.metrics import meteor

    refs = _test_refs(demo_dataset)
    a = {p: c[0] for p, c in refs.captions.items()}
    b = {p: "a small cube has changed its colour" for p in refs.captions}
    # every segment aligned: statistics an earlier test kept would cut A's table to fewer references than B's
    monkeypatch.setenv("IDC_METEOR_CACHE", "0")
    acquired = []
    original = meteor.acquire_process
    monkeypatch.setattr(meteor, "acquire_process", lambda *a: acquired.append(1) or original(*a))
    report = compare_systems(a, b, dataset=str(demo_dataset), metrics=["METEOR"], bootstrap=20, scorer="java")
    assert len(acquired) == meteor.meteor_workers()  # not one set per system
    for scorer in ("java", "python"):
        asked_before = len(acquired)
        for system, key in ((a, "a"), (b, "b")):
            alone = evaluate_predictions(system, dataset=str(demo_dataset), metrics=["METEOR"], breakdown=False,
                                         scorer=scorer)
            assert report["metrics"]["METEOR"][key] == alone["overall"]["METEOR"], scorer
    assert len(acquired) == asked_before  # the Python scorer asks for no JVM


def test_scoring_predictions_does_not_import_torch(demo_dataset, tmp_path):
    refs = _test_refs(demo_dataset)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({p: c[0] for p, c in refs.captions.items()}))
    code = (
        "import sys\n"
        "from idc_toolkit.cli.eval import main\n"
        f"assert main(['--predictions', {str(path)!r}, '--dataset', {str(demo_dataset)!r}, '--out', {str(tmp_path / 'e')!r}, '--metrics', 'BLEU']) == 0\n"
        # nor datasets and pandas (~1 s of a fresh command): a local folder's references are read with pyarrow
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'torch', 'transformers', 'diffusers', 'open_clip', 'datasets', 'pandas'})\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout


def test_a_folder_edited_after_it_was_written_is_refused_before_scoring(demo_dataset, tmp_path, capsys):
    """The captions column rewritten as one string per row would be scored character by character:
    the folder is checked against its card first, and a cell that is not a list of strings is named."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.evaluators.predictions import load_references_dataset

    refs = _test_refs(demo_dataset)
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({p: c[0] for p, c in refs.captions.items()}))
    edited = tmp_path / "edited"
    shutil.copytree(demo_dataset, edited)
    shard = sorted((edited / "data").glob("test-*.parquet"))[0]
    table = pq.read_table(shard)
    strings = pa.array([" ".join(c) for c in table.column("captions").to_pylist()], pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("captions"), "captions", strings), shard)
    assert main(["--predictions", str(preds), "--dataset", str(edited), "--out", str(tmp_path / "e")]) == 1
    err = capsys.readouterr().err
    assert "changed after it was written" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "e").exists()
    assert "column 'captions' holds string but its card (README.md dataset_info) declares list" in err
    (edited / "README.md").unlink()  # no card to check against: the cell itself is refused
    with pytest.raises(EvaluationError, match=r"'captions' is a str, not a list of strings"):
        load_references_dataset(str(edited), "test")
    for each in (edited / "data").glob("test-*.parquet"):
        pq.write_table(table.slice(0, 0), each)
    with pytest.raises(EvaluationError, match=r"split 'test' is empty \(0 rows\)"):
        load_references_dataset(str(edited), "test")


def test_lmms_tasks_checks_a_local_folder_against_its_card(demo_dataset, tmp_path, capsys):
    import shutil

    import pyarrow.parquet as pq

    edited = tmp_path / "edited"
    shutil.copytree(demo_dataset, edited)
    shard = sorted((edited / "data").glob("test-*.parquet"))[0]
    pq.write_table(pq.read_table(shard).slice(1), shard)  # one pair fewer than the card says
    assert main(["lmms-tasks", "--dataset", f"clevr_change={edited}", "--out", str(tmp_path / "pack")]) == 1
    assert "changed after it was written" in capsys.readouterr().err and not (tmp_path / "pack").exists()


def test_a_default_run_is_quiet_about_spice_without_its_jars(demo_dataset, tmp_path, capsys, monkeypatch):
    """No --metrics: every metric this machine can compute, and no warning the user cannot act on;
    SPICE asked for by name still says why it is n/a."""
    monkeypatch.delenv("IDC_SPICE_JARS", raising=False)
    refs = _test_refs(demo_dataset)
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({p: c[0] for p, c in refs.captions.items()}))
    assert main(["--predictions", str(preds), "--dataset", str(demo_dataset), "--out", str(tmp_path / "e")]) == 0
    captured = capsys.readouterr()
    assert "SPICE" not in captured.err and "SPICE" not in captured.out
    overall = json.loads((tmp_path / "e" / "metrics.json").read_text())["overall"]
    assert {"Bleu_4", "METEOR", "ROUGE_L", "CIDEr"} <= set(overall) and "SPICE" not in overall


def test_compare_groups_of_seed_runs(demo_dataset, tmp_path, capsys):
    """A side may be several runs (seeds): two runs with the same captions are that run (the group's
    resampled score is its runs' mean), each run is reported with its interval, and each side's
    mean and sd equal the runs scored alone. (The same file twice is refused: test_hostile_run_inputs.)"""
    import statistics

    from idc_toolkit.evaluators.compare import compare_systems
    from idc_toolkit.evaluators.scoring import evaluate_predictions

    refs = _test_refs(demo_dataset)
    runs = []
    for k in range(3):
        folder = tmp_path / "mine" / f"seed_{k}"
        folder.mkdir(parents=True)
        preds = {pid: (caps[0] if n % (k + 2) else "the scene is unchanged") for n, (pid, caps) in enumerate(refs.captions.items())}
        (folder / "predictions.jsonl").write_text("".join(json.dumps({"pair_id": p, "caption": c}) + "\n" for p, c in preds.items()))
        runs.append(folder / "predictions.jsonl")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({pid: "the cube moved" for pid in refs.captions}))
    opts = {"dataset": str(demo_dataset), "metrics": ["BLEU", "CIDEr"], "bootstrap": 200}
    single = compare_systems(str(runs[0]), str(other), **opts)
    captions = {json.loads(line)["pair_id"]: json.loads(line)["caption"] for line in runs[0].read_text().splitlines()}
    twice = compare_systems([captions, dict(captions)], str(other), **opts)
    for m, v in single["metrics"].items():
        assert twice["metrics"][m] == pytest.approx(v)
    assert twice["groups"]["a"]["sd"]["CIDEr"] == 0.0 and single["groups"]["a"]["sd"]["CIDEr"] is None
    grouped = compare_systems(str(tmp_path / "mine"), str(other), **opts, out=str(tmp_path / "c"))
    alone = [evaluate_predictions(str(r), dataset=str(demo_dataset), metrics=["BLEU", "CIDEr"])["overall"] for r in runs]
    assert [r["scores"]["CIDEr"] for r in grouped["runs"]["a"]] == pytest.approx([a["CIDEr"] for a in alone])
    assert grouped["groups"]["a"]["mean"]["CIDEr"] == pytest.approx(statistics.fmean(a["CIDEr"] for a in alone))
    assert grouped["groups"]["a"]["sd"]["CIDEr"] == pytest.approx(statistics.stdev(a["CIDEr"] for a in alone))
    assert grouped["metrics"]["CIDEr"]["a"] == pytest.approx(statistics.fmean(a["CIDEr"] for a in alone))
    low, high = grouped["runs"]["a"][1]["ci"]["CIDEr"]
    assert low <= alone[1]["CIDEr"] <= high
    md = (tmp_path / "c" / "compare.md").read_text()
    assert "A (mean (sd) of 3)" in md and "seed_2" in md and "p (A = B)" in md


@pytest.mark.parametrize("sub", ["", "compare", "leaderboard", "agreement", "check-references", "masks", "lmms-tasks"])
def test_every_subcommand_prints_its_help(sub, capsys):
    """--help renders every option's help (a bare % in one would be a traceback)."""
    with pytest.raises(SystemExit) as exit_:
        main([*([sub] if sub else []), "--help"])
    assert exit_.value.code == 0 and "usage: idc-eval" in capsys.readouterr().out

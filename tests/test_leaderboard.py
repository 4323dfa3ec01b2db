"""``idc-eval leaderboard``: the published DDLA Spot-the-Diff predictions (shared) and runs of a
system given under one name, re-scored under one protocol into one table with mean (sd) across
runs; every number equals what idc-eval --predictions gives the same file."""

from __future__ import annotations

import csv
import io
import json
import statistics

import pytest

from idc_toolkit.cli.eval import main
from idc_toolkit.evaluators.scoring import evaluate_predictions


def test_published_predictions_and_seeds_in_one_table(shared, tmp_path, capsys):
    folder = shared / "paper_predictions/spot-the-diff"
    preds, refs = folder / "ddla_rerun_predfile.json", folder / "ddla_rerun_gtfile.json"
    if not preds.is_file():
        pytest.skip(f"{preds} is absent (../shared beside the repository)")
    published = json.loads(preds.read_text())
    items = published if isinstance(published, list) else [{"image_id": k, "caption": v} for k, v in published.items()]
    seeds = []
    for k in range(2):  # two "runs" of a system: the DDLA captions, every (3 + k)-th replaced
        run = [{"image_id": it["image_id"], "caption": "the car is gone" if i % (3 + k) == 0 else it["caption"]}
               for i, it in enumerate(items)]
        seeds.append(tmp_path / f"seed{k}.json")
        seeds[-1].write_text(json.dumps(run))
    argv = ["leaderboard", str(preds), *map(str, seeds), "--references", str(refs), "--names", "DDLA", "mine", "mine",
            "--metrics", "BLEU", "CIDEr", "--out", str(tmp_path / "board")]  # no METEOR: its JVM adds time, not checks
    assert main(argv) == 0
    shown = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO((tmp_path / "board" / "leaderboard.csv").read_text())))
    assert [(r["system"], r["runs"]) for r in rows] == [("DDLA", "1"), ("mine", "2")]
    alone = [evaluate_predictions(str(f), references=str(refs), metrics=["BLEU", "CIDEr"])["overall"]
             for f in (preds, *seeds)]
    assert float(rows[0]["CIDEr"]) == pytest.approx(100 * alone[0]["CIDEr"], abs=1e-4)
    assert float(rows[1]["CIDEr"]) == pytest.approx(100 * statistics.fmean(a["CIDEr"] for a in alone[1:]), abs=1e-4)
    assert float(rows[1]["CIDEr sd"]) == pytest.approx(100 * statistics.stdev(a["CIDEr"] for a in alone[1:]), abs=1e-4)
    assert rows[0]["CIDEr sd"] == "" and "ddla_rerun_predfile.json (sha256 " in rows[0]["sources"]
    assert f"| DDLA | 1 | 1270 | {100 * alone[0]['Bleu_4']:.1f} | {100 * alone[0]['CIDEr']:.1f} |" in shown
    assert (tmp_path / "board" / "leaderboard.tex").read_text().startswith("\\begin{table}")


def test_a_protocol_other_than_rcc_travels_as_a_caveat(shared, tmp_path):
    from idc_toolkit.evaluators.leaderboard import leaderboard

    folder = shared / "paper_predictions/spot-the-diff"
    if not (folder / "ddla_rerun_predfile.json").is_file():
        pytest.skip("../shared is absent")
    out = leaderboard([str(folder / "ddla_rerun_predfile.json")], references=str(folder / "ddla_rerun_gtfile.json"),
                      metrics=["BLEU"], protocol="rsicc")
    assert out["rows"][0]["caveats"][0] == "protocol rsicc: not comparable with rcc-protocol numbers"
    with pytest.raises(Exception, match="--names gives 2 labels for 1 files"):
        leaderboard([str(folder / "ddla_rerun_predfile.json")], references=str(folder / "ddla_rerun_gtfile.json"),
                    names=["a", "b"])

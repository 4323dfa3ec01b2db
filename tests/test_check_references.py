"""``idc-eval check-references``: every problem of a reference or predictions file, one line
each, exit 1 on any; on CARD's real multi-change Spot-the-Diff reference file (shared) with the
stray prefix a corrupted copy of it carried (CARD issue 5), and on constructed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idc_toolkit.cli.eval import main

CARD = Path("spot_the_diff/card_multi_change/change_multi_captions_reformat.json")


def _run(capsys, *argv):
    code = main(["check-references", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cards_reference_file_passes_and_a_corrupted_copy_names_the_byte(shared, tmp_path, capsys):
    real = shared / "real_annotations" / CARD
    if not real.is_file():
        pytest.skip(f"{real} is absent (../shared beside the repository)")
    code, out, err = _run(capsys, real)
    assert code == 0 and out.startswith(f"{real}: ok (") and out.endswith(" captions)\n"), (out, err)
    first = ("'000003.png', '000192.png', '000616.png', '000980.png', '000491.png', '001606.png', '001453.png', "
             "'001294.png', '001323.png', '002416.png', '002850.png', '002240.png', '002728.png', '002383.png', "
             "'004419.png', '004438.png', '004274.png', '004900.png', '004518.png', '004539.png'")
    assert err == (f"warning: {real}: 48 empty caption(s), of id(s) {first} ... (48 in all): scored as given "
                   "(--drop-empty-references drops them)\n"), err
    corrupted = tmp_path / "refs.json"
    corrupted.write_bytes(b"cc" + real.read_bytes())
    code, out, err = _run(capsys, corrupted)
    assert code == 1
    assert f"{corrupted}: not JSON at byte 0 (line 1, column 1: Expecting value); it starts 'cc{{\"info\"" in err, err


def test_a_scoring_run_refuses_the_corrupted_copy_before_it_starts(shared, tmp_path, capsys):
    real = shared / "real_annotations" / CARD
    if not real.is_file():
        pytest.skip(f"{real} is absent (../shared beside the repository)")
    corrupted = tmp_path / "refs.json"
    corrupted.write_bytes(b"cc" + real.read_bytes())
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"000003.png": "a man left"}))
    assert main(["--predictions", str(preds), "--references", str(corrupted), "--out", str(tmp_path / "eval")]) == 1
    err = capsys.readouterr().err
    assert f"{corrupted}: not JSON at byte 0 (line 1, column 1: Expecting value); it starts 'cc{{\"info\"" in err
    assert not (tmp_path / "eval").exists()
    preds.write_text('{"000003.png": "a", "000003.png": "b"}')
    assert main(["--predictions", str(preds), "--references", str(real), "--out", str(tmp_path / "eval")]) == 1
    assert "'000003.png' appear twice in one JSON object" in capsys.readouterr().err


def test_every_problem_is_one_line(tmp_path, capsys):
    preds = tmp_path / "preds.json"
    preds.write_text('{"1": "a car left", "2": "", "3": 7, "1": "twice"}')
    code, _, err = _run(capsys, preds)
    lines = err.strip().splitlines()
    assert code == 1 and lines[-1] == f"{preds}: 2 problem(s)", lines
    assert any("'1' appear twice in one JSON object" in line for line in lines)
    assert any(line.startswith("warning:") and "1 empty caption(s), of id(s) '2'" in line for line in lines)
    assert any("key '3'" in line and "the caption is int, not a string" in line for line in lines)
    listed = tmp_path / "results.json"
    listed.write_text(json.dumps([{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}]))
    code, _, err = _run(capsys, listed)
    assert code == 1 and "1 id(s) have several predictions: '1'" in err
    lines_file = tmp_path / "preds.jsonl"
    lines_file.write_text('{"pair_id": "1", "caption": "x"}\n{"pair_id": "2", "caption": "y"\n')
    code, _, err = _run(capsys, lines_file)
    assert code == 1 and f"{lines_file}: line 2: not JSON at byte" in err


def test_references_may_repeat_an_id_and_ids_absent_from_the_dataset_are_named(demo_dataset, tmp_path, capsys):
    from idc_toolkit.evaluators.predictions import load_references_dataset

    ids = list(load_references_dataset(str(demo_dataset), "test").captions)
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"annotations": [{"image_id": ids[0], "caption": "a"}, {"image_id": ids[0], "caption": "b"}]}))
    code, out, _ = _run(capsys, refs, "--dataset", demo_dataset)
    assert code == 0 and "ok (1 ids, 2 captions)" in out
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({ids[0]: "x", "nope": "y"}))
    code, _, err = _run(capsys, preds, "--dataset", demo_dataset)
    assert code == 1 and f"1 id(s) are not in {demo_dataset} [test]: 'nope'" in err


def test_scoring_parses_a_predictions_file_once_with_the_checks_parser(tmp_path, monkeypatch, capsys):
    """The file is decoded once: the checks ``check-references`` lists and the captions scored come
    from the same parse (JSON Lines by name, even with one line)."""
    import idc_toolkit.files
    from idc_toolkit.evaluators.predictions import load_predictions

    one = tmp_path / "one.jsonl"
    one.write_text('{"pair_id": "a", "image_id": "a", "caption": "x"}\n')
    code, out, _ = _run(capsys, one)
    assert code == 0 and out == f"{one}: ok (1 ids, 1 captions)\n"
    calls = []
    real = idc_toolkit.files.parse_json
    monkeypatch.setattr(idc_toolkit.files, "parse_json", lambda text, **kw: calls.append(text) or real(text, **kw))
    whole = tmp_path / "p.json"
    whole.write_text(json.dumps({"a": "x", "b": "y"}))
    assert load_predictions(whole) == {"a": "x", "b": "y"} and len(calls) == 1


def test_coco_annotations_are_read_as_python_s_json_reads_them(shared, tmp_path):
    """References gathered by pair as they are parsed give the captions ``json.loads`` gives,
    whatever keys an annotation carries and whatever else the file holds; a wrong one is refused."""
    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.evaluators.predictions import load_references_coco

    def grouped(data):
        out = {}
        for a in data["annotations"]:
            out.setdefault(str(a["image_id"]), []).append(a["caption"])
        return out

    real = shared / "real_annotations" / CARD
    if real.is_file():
        assert load_references_coco(real).captions == grouped(json.loads(real.read_text(encoding="utf-8")))
    mixed = {"annotations": [{"image_id": 1, "caption": "a car left", "id": 0}, {"caption": "no car", "image_id": 1},
                             {"id": 2, "tokens": ["a", "man"], "image_id": 2, "caption": "a man"},
                             {"image_id": 2, "caption": "no car", "id": 3}],
             "images": [{"id": 1, "file_name": "1.png"}]}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(mixed))
    captions = load_references_coco(path).captions
    assert captions == grouped(mixed) == {"1": ["a car left", "no car"], "2": ["a man", "no car"]}
    assert captions["1"][1] is captions["2"][1]  # a repeated caption is held once
    path.write_text('{"annotations": [{"image_id": 1, "caption": "a", "caption": "b"}]}')
    with pytest.raises(EvaluationError, match="'caption' appear twice in one JSON object"):
        load_references_coco(path)
    path.write_text('{"annotations": [{"image_id": 1, "caption": 5, "id": 0}]}')
    with pytest.raises(EvaluationError, match="annotation 0 .*the caption is int, not a string"):
        load_references_coco(path)
    # objects shaped like annotations outside 'annotations' are not captions (each is gathered as parsed)
    beside = {"info": {"image_id": 9, "caption": "a license"}, **mixed,
              "extra": [{"image_id": 1, "caption": "not a reference"}]}
    path.write_text(json.dumps(beside))
    assert load_references_coco(path).captions == grouped(mixed)
    path.write_text(json.dumps({"annotations": [*mixed["annotations"], {"image_id": "1", "caption": "x"}]}))
    with pytest.raises(EvaluationError, match="annotation 4: image_id '1' and 1 \\(a int\\) would be merged"):
        load_references_coco(path)

"""The LLM judge (``--judge``): the aggregation checked by hand on pairs whose answers a scripted
judge gives (an OpenAI-compatible endpoint on loopback, answering by a fixed rule), and the
mechanics of a local model with a tiny random judge: batching, caching, resuming, shards."""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from idc_toolkit.cli.eval import main

REFS = {"p1": ["the red cube turned blue.", "the cube changed color."],
        "p2": ["a cylinder was added. the ball moved."],
        "p3": ["there is no change."],
        "p4": ["nothing has changed."]}
CATEGORIES = {"p1": "color", "p2": "add", "p3": "no_change", "p4": "no_change"}
CAPTIONS = {"p1": "the red cube turned blue. a sphere appeared.", "p2": "nothing changed.", "p3": "there is no change.",
            "p4": "the cube moved."}


def tagged(prompt: str, name: str) -> list[str]:
    """The texts a prompt quotes inside <name>…</name>."""
    return re.findall(f"<{name}>(.*?)</{name}>", prompt)


def scripted_answer(prompt: str) -> str:
    """The rule the scripted judge answers by: a difference is stated when the caption contains it
    word for word, a claim is supported when a reference contains it, a caption says nothing
    changed when it says "no change"."""
    if "Does the caption state this difference" in prompt:
        return "Yes" if tagged(prompt, "difference")[0] in tagged(prompt, "caption")[0] else "No"
    if "Is this claim supported" in prompt:
        return "yes." if any(tagged(prompt, "claim")[0] in r for r in tagged(prompt, "reference")) else "no."
    if "the second undoing the first" in prompt:
        forward, backward = tagged(prompt, "forward")[0], tagged(prompt, "backward")[0]
        return "Yes" if backward == forward.replace("turned blue", "turned red").replace("red cube", "blue cube") else "No"
    return "Yes" if "no change" in tagged(prompt, "caption")[0] else "No"


class Scripted(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["temperature"] == 0
        prompt = body["messages"][0]["content"]
        Scripted.asked.append(prompt)
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": scripted_answer(prompt)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    # the judge opens --judge-batch-size connections at once; socketserver's default backlog (5) resets the rest
    request_queue_size = 128


@pytest.fixture()
def endpoint():
    server = Server(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Scripted.asked = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _files(tmp_path):
    (tmp_path / "refs.json").write_text(json.dumps(
        {"images": [{"id": k} for k in REFS],
         "annotations": [{"image_id": k, "caption": c, "id": n} for n, (k, cs) in enumerate(REFS.items()) for c in cs]}))
    (tmp_path / "cats.json").write_text(json.dumps(CATEGORIES))
    (tmp_path / "preds.json").write_text(json.dumps(CAPTIONS))
    return tmp_path / "preds.json", tmp_path / "refs.json", tmp_path / "cats.json"


def test_scripted_judgements_aggregate_as_computed_by_hand(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("IDC_JUDGE_CACHE", str(tmp_path / "answers.sqlite"))  # it counts the questions asked
    preds, refs, cats = _files(tmp_path)
    out = tmp_path / "eval"
    argv = ["--predictions", str(preds), "--references", str(refs), "--categories", str(cats), "--metrics", "BLEU",
            "--judge", "scripted", "--judge-endpoint", endpoint, "--out", str(out), "--bootstrap", "200",
            "--layout", "all", "--no-progress"]
    assert main(argv) == 0
    m = json.loads((out / "metrics.json").read_text())
    # by hand: p1 states its one difference, one of two claims supported; p2 states neither of two,
    # its one claim unsupported; p3 says nothing changed, supported; p4 claims a move: unsupported
    assert {k: m["overall"][k] for k in ("Judge_recall", "Judge_precision", "Judge_hallucination", "Judge_no_change")} \
        == {"Judge_recall": 0.5, "Judge_precision": 0.25, "Judge_hallucination": 0.75, "Judge_no_change": 0.5}
    by = m["by_category"]
    assert (by["color"]["Judge_recall"], by["color"]["Judge_precision"], by["color"]["Judge_no_change"]) == (1.0, 0.5, None)
    assert (by["add"]["Judge_recall"], by["add"]["Judge_hallucination"]) == (0.0, 1.0)
    assert (by["no_change"]["Judge_recall"], by["no_change"]["Judge_no_change"], by["no_change"]["Judge_hallucination"]) \
        == (None, 0.5, 0.5)
    low, high = m["ci"]["overall"]["Judge_hallucination"]
    assert 0.0 <= low <= 0.75 <= high <= 1.0
    assert m["meta"]["run"]["judge"]["judge"] == "scripted" and m["meta"]["run"]["judge"]["prompts"]
    n_questions = 1 + 2 + 2 + 1 + 1 + 1 + 1 + 1  # p1: 1 + 2 claims; p2: 2 + 1; p3: 1 + no-change; p4: 1 + no-change
    assert len(Scripted.asked) == n_questions
    rows = {r["pair_id"]: r for r in csv.DictReader(io.StringIO((out / "per_pair.csv").read_text()))}
    assert rows["p1"]["Judge_precision"] == "0.500000" and rows["p3"]["Judge_recall"] == ""
    assert rows["p1"]["judgement"] == "stated 1 of 1 difference(s); unsupported: a sphere appeared."
    assert rows["p4"]["judgement"] == "unsupported: the cube moved.; does not say nothing changed"
    from idc_toolkit.viewer.site import write_site

    write_site(tmp_path / "site", evaluations=[out], progress=False)  # the pair cards show what the judge said
    pairs = json.loads((tmp_path / "site" / "assets" / "pairs.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    assert {p["id"]: p["sys"][0].get("judgement") for p in pairs}["p2"].startswith("stated 0 of 2 difference(s); missed: ")
    records = [json.loads(line) for line in (out / "judge" / "judgements.jsonl").read_text().splitlines()]
    assert records[0] == {"pair_id": "p1", "differences": ["the red cube turned blue."], "stated": [True],
                          "claims": ["the red cube turned blue.", "a sphere appeared."], "supported": [True, False],
                          "no_change": False, "says_no_change": None, "reversed": None, "inverse": None,
                          "asked": {"stated": 1, "supported": 2, "no_change": 0, "inverse": 0},
                          "unparsed": [], "failed": []}
    assert m["meta"]["judge_answers"]["overall"] == {"asked": n_questions, "answered": n_questions, "unparsed": 0,
                                                     "failed": 0, "failure_rate": 0.0}
    assert "J-Rec" in (out / "layout_total_semantic.md").read_text()
    assert "Judge_recall" in (out / "by_category.csv").read_text().splitlines()[0]
    # scored again with other options: the judgements are read back, nothing is asked again
    assert main([*argv[:-5], "--bootstrap", "50", "--no-progress", "--overwrite"]) == 0
    assert len(Scripted.asked) == n_questions
    again = json.loads((out / "metrics.json").read_text())
    assert again["overall"]["Judge_recall"] == 0.5 and again["meta"]["bootstrap"] == 50


def test_a_tiny_random_judge_batched_cached_and_sharded(tiny_models, demo_dataset, tmp_path, monkeypatch):
    from idc_toolkit.evaluators.predictions import load_references_dataset
    from idc_toolkit.judge.args import JudgeArgs
    from idc_toolkit.judge.backends import LocalJudge
    from idc_toolkit.judge.run import judge_pairs, pair_rows
    from idc_toolkit.runs import EngineArgs
    from idc_toolkit.schema import NO_CHANGE_CATEGORIES

    chat = str(tiny_models("chat"))
    judge = LocalJudge(chat, batch_size=4)
    prompts = ["Is the sky blue? Answer yes or no.", "Did the red cube move to the left of the sphere? Answer yes or no.",
               "No?", "A much longer question " * 8 + "Answer yes or no."]
    alone = [judge.margins([p])[0] for p in prompts]
    assert judge.margins(prompts) == pytest.approx(alone, abs=1e-4)  # left padding reads as each prompt alone
    assert len(set(round(m, 4) for m in alone)) > 1  # the margins depend on the prompt (the model is read)

    refs = load_references_dataset(str(demo_dataset), "test")
    rows = pair_rows({pid: caps[0] for pid, caps in refs.captions.items()}, refs.captions,
                     {pid: refs.categories[pid] in NO_CHANGE_CATEGORIES for pid in refs.captions})
    args = JudgeArgs(judge=chat, judge_batch_size=8)
    whole = judge_pairs(rows, args, tmp_path / "whole", progress=False)
    assert list(whole) == [r["pair_id"] for r in rows]
    for row in rows:
        rec = whole[row["pair_id"]]
        assert len(rec["stated"]) == (0 if row["no_change"] else len(row["differences"]))
        assert (rec["says_no_change"] is None) == (not row["no_change"])
    import pickle

    from idc_toolkit.judge.run import JudgeTask

    assert pickle.loads(pickle.dumps(JudgeTask(args))).judge is None  # travels to Ray actors unloaded (the engine's Ray path)
    monkeypatch.setattr("idc_toolkit.judge.run.PAIRS_PER_PART", 4)  # several parts: each shard writes some
    assert judge_pairs(rows, args, tmp_path / "sharded", engine=EngineArgs(shard="0/2"), progress=False) is None
    assert judge_pairs(rows, args, tmp_path / "sharded", engine=EngineArgs(shard="1/2"), progress=False) == whole

    def no_model(*a, **k):
        raise AssertionError("a finished judgement folder loads no judge")

    monkeypatch.setattr("idc_toolkit.judge.backends.make_judge", no_model)
    assert judge_pairs(rows, args, tmp_path / "whole", progress=False) == whole


def test_the_paired_test_takes_the_judge_columns(endpoint, tmp_path):
    from idc_toolkit.evaluators.compare import compare_systems

    preds, refs, cats = _files(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({k: "there is no change." for k in CAPTIONS}))
    report = compare_systems(str(preds), str(other), references=str(refs), categories=str(cats), metrics=["BLEU"],
                             judge="scripted", judge_endpoint=endpoint, bootstrap=100, out=str(tmp_path / "c"))
    # B says "no change" everywhere: it states no difference, its claim is unsupported on the change
    # pairs and supported on p3 only (p4's reference words it otherwise), and it is right on both no-change pairs
    assert report["metrics"]["Judge_recall"]["a"] == 0.5 and report["metrics"]["Judge_recall"]["b"] == 0.0
    assert report["metrics"]["Judge_no_change"]["b"] == 1.0 and report["metrics"]["Judge_hallucination"]["b"] == 0.75
    assert (tmp_path / "c" / "judges" / "a0" / "judgements.jsonl").is_file()


def test_reversibility_judged_and_by_inverted_ngrams(endpoint, tmp_path):
    from idc_toolkit.evaluators.scoring import evaluate_predictions
    from idc_toolkit.metrics.reverse import invert

    assert invert("A red cube was added.") == "a red cube was removed"
    assert invert("the ball disappeared") == "the ball appeared"
    preds, refs, cats = _files(tmp_path)
    backward = {"p1": "the blue cube turned red. a sphere appeared.",  # the inverse, as the scripted rule reads it
                "p2": "a cylinder was removed.", "p3": "there is no change.", "p4": "the cube moved back."}
    (tmp_path / "back.json").write_text(json.dumps(backward))
    m = evaluate_predictions(str(preds), references=str(refs), categories=str(cats), metrics=["BLEU"],
                             reversed=str(tmp_path / "back.json"), judge="scripted", judge_endpoint=endpoint)
    assert m["overall"]["Judge_reversibility"] == 0.5  # p1 and p3 (the same "no change" both ways) by the rule
    assert m["by_category"]["color"]["Judge_reversibility"] == 1.0 and m["by_category"]["no_change"]["Judge_reversibility"] == 0.5
    # the n-gram stand-in is defined where the A -> B caption names a direction: p1 ("appeared") alone
    assert m["by_category"]["add"]["Reverse_ROUGE_L"] is None and m["by_category"]["no_change"]["Reverse_ROUGE_L"] is None
    assert 0.0 < m["by_category"]["color"]["Reverse_ROUGE_L"] < 1.0
    assert m["overall"]["Reverse_ROUGE_L"] == m["by_category"]["color"]["Reverse_ROUGE_L"]
    with pytest.raises(Exception, match="no caption for 1 pair"):
        (tmp_path / "short.json").write_text(json.dumps({k: v for k, v in backward.items() if k != "p4"}))
        evaluate_predictions(str(preds), references=str(refs), reversed=str(tmp_path / "short.json"), metrics=["BLEU"])

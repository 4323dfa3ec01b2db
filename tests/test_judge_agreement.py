"""Agreement between judges (``idc-eval agreement``): scripted judges of known disagreement on
three systems, κ and τ checked against scikit-learn's and SciPy's."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

REFS = {"p1": ["the red cube turned blue."], "p2": ["a cylinder was added. the ball moved."],
        "p3": ["there is no change."], "p4": ["a sphere was removed."], "p5": ["nothing has changed."]}
CATEGORIES = {"p1": "color", "p2": "add", "p3": "no_change", "p4": "drop", "p5": "no_change"}
SYSTEMS = {
    "good": {"p1": "the red cube turned blue.", "p2": "a cylinder was added. the ball moved.", "p3": "there is no change.",
             "p4": "a sphere was removed.", "p5": "there is no change."},
    "fair": {"p1": "the red cube turned blue.", "p2": "a cylinder was added.", "p3": "the cube moved.",
             "p4": "a sphere was removed.", "p5": "there is no change."},
    "poor": {"p1": "a sphere appeared.", "p2": "nothing changed.", "p3": "the cube moved.", "p4": "the ball moved.",
             "p5": "a cylinder was added."},
}


def honest(prompt: str) -> bool:
    tag = lambda name: re.findall(f"<{name}>(.*?)</{name}>", prompt)  # noqa: E731
    if "state this difference" in prompt:
        return tag("difference")[0] in tag("caption")[0]
    if "claim supported" in prompt:
        return any(tag("claim")[0] in r for r in tag("reference"))
    return "no change" in tag("caption")[0]


#: each judge's rule: "honest" answers by containment; "contrary" reverses the difference questions
#: and is honest elsewhere; "mirror" is honest everywhere (another name, the same answers)
RULES = {"honest": honest, "mirror": honest,
         "contrary": lambda p: (not honest(p)) if "state this difference" in p else honest(p)}


class Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


class Judges(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answers: list[tuple[str, str, bool]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        verdict = RULES[body["model"]](prompt)
        Judges.answers.append((body["model"], prompt, verdict))
        data = json.dumps({"choices": [{"message": {"content": "Yes" if verdict else "No"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def endpoint(tmp_path, monkeypatch):
    """The scripted judges' server, and the systems' files."""
    monkeypatch.setenv("IDC_JUDGE_CACHE", "0")
    server = Server(("127.0.0.1", 0), Judges)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Judges.answers = []
    (tmp_path / "refs.json").write_text(json.dumps({"images": [{"id": k} for k in REFS], "annotations": [
        {"image_id": k, "caption": c, "id": i} for i, (k, cs) in enumerate(REFS.items()) for c in cs]}))
    (tmp_path / "cats.json").write_text(json.dumps(CATEGORIES))
    for system, captions in SYSTEMS.items():
        (tmp_path / f"{system}.json").write_text(json.dumps(captions))
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture()
def judged(endpoint, tmp_path):
    """Every system judged by every judge, each evaluation in its own folder."""
    from idc_toolkit.evaluators.scoring import evaluate_predictions

    folders = {}
    for system in SYSTEMS:
        for judge in RULES:
            out = tmp_path / f"{system}-{judge}"
            evaluate_predictions(str(tmp_path / f"{system}.json"), references=str(tmp_path / "refs.json"),
                                 categories=str(tmp_path / "cats.json"), metrics=["BLEU"], judge=judge, name=system,
                                 judge_endpoint=endpoint, out=str(out), bootstrap=10)
            folders[system, judge] = out
    return folders


def test_kappa_and_tau_equal_scikit_learn_and_scipy_on_judges_of_known_disagreement(judged, tmp_path):
    from scipy.stats import kendalltau
    from sklearn.metrics import cohen_kappa_score

    from idc_toolkit.cli.eval import main
    from idc_toolkit.evaluators.agreement import judge_agreement

    report = judge_agreement([judged[s, j] for s in SYSTEMS for j in ("honest", "contrary")], bootstrap=200)
    q = report["questions"][0]
    assert q["judges"] == ["honest", "contrary"] and q["systems"] == 3 and q["unanswered"] == 0

    def answers(judge, kind):
        """The judge's answers to ``kind`` questions, read from its judgement files in a fixed order."""
        out = []
        for system in SYSTEMS:
            lines = (judged[system, judge] / "judge" / "judgements.jsonl").read_text().splitlines()
            for rec in sorted(map(json.loads, lines), key=lambda r: r["pair_id"]):
                field = {"stated": "stated", "supported": "supported"}.get(kind)
                out += rec[field] if field else ([rec["says_no_change"]] if rec["says_no_change"] is not None else [])
        return out

    assert answers("contrary", "stated") == [not v for v in answers("honest", "stated")]  # the known disagreement
    for kind in ("stated", "supported", "no_change"):
        expected = cohen_kappa_score(answers("honest", kind), answers("contrary", kind))
        assert q["by_question"][kind]["kappa"] == pytest.approx(expected), kind
    assert q["by_question"]["stated"]["kappa"] < -0.9  # reversed on every difference (-1 only with even marginals)
    assert q["by_question"]["supported"]["kappa"] == pytest.approx(1.0)
    low, high = q["overall"]["ci"]
    assert low <= q["overall"]["kappa"] <= high
    every = answers("honest", "stated") + answers("honest", "supported") + answers("honest", "no_change")
    other = answers("contrary", "stated") + answers("contrary", "supported") + answers("contrary", "no_change")
    assert q["overall"]["kappa"] == pytest.approx(cohen_kappa_score(every, other))

    scores = {(s, j): json.loads((judged[s, j] / "metrics.json").read_text()) for s in SYSTEMS for j in ("honest", "contrary")}
    for r in report["rankings"]:
        x = [(scores[s, "honest"]["overall"] if r["group"] == "overall" else scores[s, "honest"]["by_category"][r["group"]])[r["column"]]
             for s in SYSTEMS]
        y = [(scores[s, "contrary"]["overall"] if r["group"] == "overall" else scores[s, "contrary"]["by_category"][r["group"]])[r["column"]]
             for s in SYSTEMS]
        pairs = [(u, v) for u, v in zip(x, y) if u is not None and v is not None]
        expected = kendalltau([u for u, _ in pairs], [v for _, v in pairs]).statistic
        assert (r["tau"] is None and np.isnan(expected)) or r["tau"] == pytest.approx(expected), r
    recall = next(r for r in report["rankings"] if r["column"] == "Judge_recall" and r["group"] == "overall")
    assert recall["tau"] == pytest.approx(-1.0)  # the contrary judge ranks the systems' recall upside down

    same = judge_agreement([judged[s, j] for s in SYSTEMS for j in ("honest", "mirror")], bootstrap=50)
    assert same["questions"][0]["overall"]["kappa"] == 1.0
    assert all(r["tau"] in (1.0, None) for r in same["rankings"])

    out = tmp_path / "agreement"
    assert main(["agreement", *[str(judged[s, j]) for s in SYSTEMS for j in ("honest", "contrary")], "--out", str(out)]) == 0
    table = (out / "agreement.md").read_text()
    assert f"| honest vs contrary | 3 | stated | {q['by_question']['stated']['kappa']:.2f} [" in table
    assert "| honest vs contrary | Judge_recall | overall | 3 | -1.00 |" in table


def test_agreement_refuses_one_judge_or_the_same_run_twice(judged):
    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.evaluators.agreement import judge_agreement

    with pytest.raises(EvaluationError, match="the same judge: agreement needs two judges"):
        judge_agreement([judged["good", "honest"], judged["fair", "honest"]])
    with pytest.raises(EvaluationError, match="the same captions judged by the same judge twice"):
        judge_agreement([judged["good", "honest"], judged["good", "honest"], judged["good", "contrary"]])
    with pytest.raises(EvaluationError, match="no system was judged by two of the judges"):
        judge_agreement([judged["good", "honest"], judged["fair", "contrary"]])


def test_a_judged_leaderboard_shows_the_second_judges_agreement(endpoint, tmp_path):
    from idc_toolkit.errors import EvaluationError
    from idc_toolkit.evaluators.leaderboard import leaderboard

    files = [str(tmp_path / f"{system}.json") for system in SYSTEMS]
    kw = dict(references=str(tmp_path / "refs.json"), categories=str(tmp_path / "cats.json"), metrics=["BLEU"],
              judge="honest", judge_endpoint=endpoint, names=list(SYSTEMS))
    with pytest.raises(EvaluationError, match="--agreement-judge needs --judge"):
        leaderboard(files, **{**kw, "judge": None}, agreement_judge="contrary", out=str(tmp_path / "x"))
    out = leaderboard(files, **kw, agreement_judge="contrary", out=str(tmp_path / "board"))
    assert "Judge_recall" in out["columns"] and out["judge"] == "honest"
    recall = {r["name"]: r["mean"]["Judge_recall"] for r in out["rows"]}
    assert recall["good"] > recall["fair"] > recall["poor"]  # under the honest judge
    assert out["agreement"]["tau"]["Judge_recall"] == pytest.approx(-1.0)  # the contrary judge ranks them upside down
    assert out["agreement"]["tau"]["Judge_precision"] == pytest.approx(1.0)
    table = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "J-Rec" in table and "Agreement with contrary: Cohen's kappa" in table and "J-Rec -1.00" in table
    assert (tmp_path / "board" / "agreement.json").is_file()

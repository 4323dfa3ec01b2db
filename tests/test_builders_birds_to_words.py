"""Birds-to-Words from its TSV (fixture from the README's schema: the real TSV is in no reachable
copy) with its photos fetched from a local HTTP server on loopback: a dead link, a slow one, a
flaky one that a resumed build fetches, each photo's licence from the (served) iNaturalist API."""

import io
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from datasets import load_dataset
from PIL import Image

from idc_toolkit.builders import make_builder
from idc_toolkit.building import fetch
from idc_toolkit.building.pipeline import build_dataset


def _jpeg(colour) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (10, 8), colour).save(buf, "JPEG")
    return buf.getvalue()


class Server:
    """Photos /photos/<id>/medium.jpg (404 for id 404; id 777 answers after 1.5 s the first time;
    id 503 answers 503 twice) and /v1/observations/<id> with each photo's licence."""

    def __init__(self):
        self.hits: Counter = Counter()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.hits[self.path] += 1
                n = owner.hits[self.path]
                parts = self.path.strip("/").split("/")
                if parts[0] == "photos":
                    pid = int(parts[1])
                    if pid == 404 or (pid == 503 and n <= 2):
                        self.send_error(pid)
                        return
                    if pid == 777 and n == 1:
                        time.sleep(1.5)
                    body = _jpeg((pid % 256, 40, 90))
                elif parts[:2] == ["v1", "observations"]:
                    obs = int(parts[2])
                    body = json.dumps({"results": [{"id": obs, "photos": [
                        {"id": obs * 10, "license_code": "cc-by-nc"}, {"id": 999, "license_code": "cc0"}]}]}).encode()
                else:
                    self.send_error(400)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on the slow answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def photo_hits(self):
        return {k: v for k, v in self.hits.items() if k.startswith("/photos/")}


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def _tsv(root, base, header=True):
    """Three pairs in five annotation rows (one row per annotation, as released)."""
    def row(o1, p1, o2, p2, sel, split, ann, text):
        return "\t".join([f"https://www.inaturalist.org/observations/{o1}", f"{base}/photos/{p1}/medium.jpg", "Sp a", "base",
                          f"https://www.inaturalist.org/observations/{o2}", f"{base}/photos/{p2}/medium.jpg", "Sp b", sel,
                          split, str(ann), text])

    lines = [row(1, 10, 2, 20, "sameGenus", "train", 2, "Animal 1 is smaller. Animal 2 has a red crest."),
             row(1, 10, 2, 20, "sameGenus", "train", 1, "Animal 1 has a short beak."),
             row(3, 404, 4, 40, "visual", "val", 1, "Animal 2 is darker."),
             row(5, 777, 6, 503, "sameSpecies", "test", 1, "Animal 1 is brown."),
             row(5, 777, 6, 503, "sameSpecies", "test", 2, "Animal 2 is grey.")]
    head = ["img1ObservationURL\timg1ImgURL\timg1Species\timg1Selection\timg2ObservationURL\timg2ImgURL\timg2Species\t"
            "img2Selection\tsplit\tannN\tdescription"] if header else []
    root.mkdir(parents=True, exist_ok=True)
    (root / "birds-to-words-v1.0.tsv").write_text("\n".join(head + lines) + "\n")
    return root


def test_fetch_dead_slow_flaky_then_resume(server, tmp_path, monkeypatch):
    monkeypatch.setattr(fetch, "BACKOFF_S", 0.05)
    raw = _tsv(tmp_path / "raw", server.url)
    # the test's server is on loopback, which the fetcher refuses unless told otherwise
    config = {"rate": "50", "retries": "1", "timeout": "0.5", "api": f"{server.url}/v1", "allow_private_hosts": "true"}
    first = build_dataset(make_builder("birds_to_words", raw, config), tmp_path / "out1", progress=False)
    assert dict(first.report.rows) == {"train": 1}  # val: a dead photo; test: the flaky one is not there yet
    reasons = {p.split: p.reason for p in first.report.problems if p.action == "skipped"}
    assert "404" in reasons["validation"] and "HTTP 503 after 2 attempt(s)" in reasons["test"]
    assert first.report.counters["photos_dead"] == 1 and first.report.counters["photos_unreachable"] == 1
    assert server.hits["/photos/404/medium.jpg"] == 1  # a dead link is not retried
    assert server.hits["/photos/777/medium.jpg"] == 2  # the slow answer timed out once, then came
    train = load_dataset(str(tmp_path / "out1"), split="train")
    assert train[0]["pair_id"] == "10_20" and train[0]["captions"] == ["Animal 1 has a short beak.",
                                                                      "Animal 1 is smaller. Animal 2 has a red crest."]
    assert train[0]["licence_1"] == "cc-by-nc" and train.features["category"].int2str(train[0]["category"]) == "sameGenus"

    before = server.photo_hits()
    second = build_dataset(make_builder("birds_to_words", raw, config), tmp_path / "out2", progress=False)
    assert dict(second.report.rows) == {"train": 1, "test": 1}
    fetched_again = {k: server.photo_hits()[k] - before.get(k, 0) for k in server.photo_hits()}
    assert {k: v for k, v in fetched_again.items() if v} == {"/photos/503/medium.jpg": 1}  # only the missing one
    test = load_dataset(str(tmp_path / "out2"), split="test")[0]
    assert test["captions"] == ["Animal 1 is brown.", "Animal 2 is grey."] and test["after"].size == (10, 8)


def test_fetch_false_builds_from_downloaded_photos_without_the_network(server, tmp_path):
    raw = _tsv(tmp_path / "raw", server.url, header=False)  # no header row: read by position
    (raw / "images").mkdir()
    for pid in (10, 20):
        (raw / "images" / f"{pid}.jpg").write_bytes(_jpeg((pid, 0, 0)))
    result = build_dataset(make_builder("birds_to_words", raw, {"fetch": "false"}), tmp_path / "out", progress=False)
    assert dict(result.report.rows) == {"train": 1} and not server.hits
    assert any("not fetched (fetch=false)" in p.reason for p in result.report.problems)

"""The photo fetcher treats what a release lists and what a server sends as untrusted: schemes,
addresses (after every redirect), size, time, dropped connections and bodies that are not images.

Every server here listens on loopback and stops by itself; names other than IPs are answered by a
stand-in resolver, so no test sends anything beyond 127.0.0.x.
"""

import io
import ipaddress
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from idc_toolkit.builders import make_builder
from idc_toolkit.building import fetch
from idc_toolkit.building.pipeline import build_dataset


def _jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (10, 8), (200, 40, 90)).save(buf, "JPEG")
    return buf.getvalue()


JPEG = _jpeg()
HTML = b"<!DOCTYPE html><html><body>Too many requests, try later</body></html>"


class Server:
    """A loopback HTTP(S) server answering each path with its route (``route(handler, nth hit)``);
    every route's answer ends by itself within a few seconds."""

    def __init__(self, routes, host="127.0.0.1", tls=None):
        self.hits: Counter = Counter()
        self.hosts: list = []
        self.routes = routes
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.hits[self.path] += 1
                owner.hosts.append(self.headers.get("Host"))
                route = owner.routes.get(self.path)
                try:
                    if route is None:
                        self.send_error(404)
                    else:
                        route(self, owner.hits[self.path])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

        class HTTPServer(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                sock, addr = super().get_request()
                return (tls.wrap_socket(sock, server_side=True) if tls else sock), addr

        self.httpd = HTTPServer((host, 0), Handler)
        self.url = f"{'https' if tls else 'http'}://{host}:{self.httpd.server_address[1]}"
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def serve():
    servers = []

    def start(routes, **kwargs):
        servers.append(Server(routes, **kwargs))
        return servers[-1]

    yield start
    for s in servers:
        s.httpd.shutdown()
        s.httpd.server_close()


def ok(body, content_type="image/jpeg"):
    def route(h, n):
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return route


def redirect(location):
    def route(h, n):
        h.send_response(302)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return route


def fetcher(**kwargs):
    """A fetcher without waits between requests, bounded in time should anything hang."""
    return fetch.Fetcher(**{"rate": 0, "retries": 0, "timeout": 2.0, "deadline": 3.0, "backoff": 0.01, **kwargs})


def fetch_one(url, folder, **kwargs):
    dest = folder / "303.jpg"
    outcome = fetch.fetch_all([fetch.FetchJob(url, dest)], folder, fetcher(**kwargs), progress=False)
    return outcome, dest


def written(folder):
    """What the fetch left in ``folder`` beside its manifest."""
    return sorted(p.name for p in folder.iterdir() if p.name != fetch.MANIFEST) if folder.is_dir() else []


class Names:
    """A stand-in resolver: IPs as they are, the names in ``table`` to their address, any other name
    an error (nothing reaches a real DNS server); ``looked_up`` counts the lookups of each name."""

    def __init__(self):
        self.table: dict = {}
        self.looked_up: Counter = Counter()

    def getaddrinfo(self, host, port, *args, real=socket.getaddrinfo, **kwargs):
        try:
            ipaddress.ip_address(host)
            return real(host, port, *args, **kwargs)
        except ValueError:
            pass
        self.looked_up[host] += 1
        if host not in self.table:
            raise socket.gaierror(f"no lookup of {host} in a test")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (self.table[host], port))]


@pytest.fixture
def names(monkeypatch):
    resolver = Names()
    monkeypatch.setattr(socket, "getaddrinfo", resolver.getaddrinfo)
    return resolver


# -- the address check -----------------------------------------------------------------------
@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                                     "100.64.0.1", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
                                     "0.0.0.0", "::1", "::", "fc00::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
                                     "::ffff:10.0.0.1", "::ffff:169.254.169.254"])
def test_non_public_addresses_are_refused(address):
    assert fetch.refusal(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "151.101.1.140", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address):
    assert fetch.refusal(address) is None


def test_image_signatures():
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
    webp = b"RIFF\x10\0\0\0WEBPVP8 "
    assert [fetch.image_format(h) for h in (JPEG[:12], png, b"GIF89a" + b"\0" * 6, webp)] == ["JPEG", "PNG", "GIF", "WebP"]
    assert fetch.image_format(HTML[:12]) is None and fetch.image_format(b"RIFF\0\0\0\0WAVE") is None
    assert fetch.image_format(b"") is None


# -- schemes and addresses ---------------------------------------------------------------------
def test_file_url_is_refused_and_nothing_is_written(tmp_path):
    secret = tmp_path / "secret.jpg"
    secret.write_bytes(JPEG)  # an image, so only the scheme can stop it
    folder = tmp_path / "images"
    outcome, dest = fetch_one(f"file://{secret}#/photos/303/x.jpg", folder, allow_private=True)
    assert "scheme 'file' is not http(s)" in outcome.failed[f"file://{secret}#/photos/303/x.jpg"]
    assert written(folder) == [] and not outcome.fetched


def test_loopback_is_refused_without_the_opt_in(serve, tmp_path):
    server = serve({"/photos/303/medium.jpg": ok(JPEG), "/v1/observations/1": ok(b"{}", "application/json")})
    outcome, dest = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images")
    why = outcome.failed[f"{server.url}/photos/303/medium.jpg"]
    assert "127.0.0.1 is a loopback address" in why and "after 1 attempt(s)" in why
    with pytest.raises(fetch.Refused, match="loopback"):  # the licence lookup goes through the same check
        fetcher().get(f"{server.url}/v1/observations/1")
    assert not server.hits and written(tmp_path / "images") == []

    outcome, dest = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True)
    assert outcome.fetched == 1 and dest.read_bytes() == JPEG


def test_a_name_is_resolved_once_checked_and_kept_for_the_host_header(serve, names, tmp_path):
    server = serve({"/photos/303/medium.jpg": ok(JPEG)})
    names.table["photos.example"] = "127.0.0.1"
    url = f"http://photos.example:{server.port}/photos/303/medium.jpg"
    outcome, _ = fetch_one(url, tmp_path / "refused")
    assert "host photos.example refused: 127.0.0.1 is a loopback address" in outcome.failed[url] and not server.hits

    outcome, dest = fetch_one(url, tmp_path / "allowed", allow_private=True)
    assert outcome.fetched == 1 and dest.read_bytes() == JPEG
    assert server.hosts == [f"photos.example:{server.port}"]
    assert names.looked_up["photos.example"] == 2  # once per fetch: the address checked is the one connected to


def test_a_redirect_to_loopback_is_refused_after_an_allowed_first_host(serve, tmp_path, monkeypatch):
    service = serve({"/admin/secret.jpg": ok(JPEG)})
    try:
        host = serve({"/photos/303/medium.jpg": redirect(f"{service.url}/admin/secret.jpg")}, host="127.0.0.2")
    except OSError:
        pytest.skip("127.0.0.2 cannot be listened on here")
    real = fetch.refusal
    monkeypatch.setattr(fetch, "refusal", lambda a: None if a == "127.0.0.2" else real(a))  # the photo host: "public"
    outcome, _ = fetch_one(f"{host.url}/photos/303/medium.jpg", tmp_path / "images")
    why = outcome.failed[f"{host.url}/photos/303/medium.jpg"]
    assert f"redirected to '{service.url}/admin/secret.jpg'" in why and "127.0.0.1 is a loopback address" in why
    assert host.hits["/photos/303/medium.jpg"] == 1 and not service.hits
    assert written(tmp_path / "images") == []


def test_too_many_redirects_are_refused(serve, tmp_path):
    routes = {}
    server = serve(routes)
    routes.update({f"/r/{i}": redirect(f"{server.url}/r/{i + 1}") for i in range(20)})
    outcome, _ = fetch_one(f"{server.url}/r/0", tmp_path / "images", allow_private=True, retries=2)
    assert "more than 5 redirects" in outcome.failed[f"{server.url}/r/0"]
    assert sum(server.hits.values()) == 6  # the first request and five redirects, not retried
    assert written(tmp_path / "images") == []


@pytest.mark.parametrize("scheme", ["file", "ftp"])
def test_a_redirect_to_another_scheme_is_refused(serve, tmp_path, scheme):
    target = {"file": "file:///etc/passwd", "ftp": "ftp://127.0.0.1:{port}/photos/303/x.jpg"}[scheme]
    routes = {}
    server = serve(routes)
    routes["/photos/303/medium.jpg"] = redirect(target.format(port=server.port))
    outcome, _ = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True)
    assert f"scheme '{scheme}' is not http(s)" in outcome.failed[f"{server.url}/photos/303/medium.jpg"]
    assert written(tmp_path / "images") == [] and sum(server.hits.values()) == 1


@pytest.mark.parametrize("url", ["http://[::1/photos/303/x.jpg", "http://127.0.0.1:99999/photos/303/x.jpg",
                                 "http://127.0.0.1/photos/303/a b.jpg", "http:///photos/303/x.jpg",
                                 "gopher://127.0.0.1/photos/303/x.jpg"])
def test_a_malformed_url_is_refused_without_a_request(tmp_path, url):
    outcome, _ = fetch_one(url, tmp_path / "images", allow_private=True, retries=2)
    assert "after 1 attempt(s)" in outcome.failed[url] and written(tmp_path / "images") == []


# -- size and time ---------------------------------------------------------------------------
def _stream(h, seconds=3.0, announce=None):
    """An image's first bytes, then 64 KiB blocks for ``seconds`` (at most 64 MiB, or until the
    client hangs up)."""
    h.send_response(200)
    if announce is not None:
        h.send_header("Content-Length", str(announce))
    h.end_headers()
    h.wfile.write(JPEG[:12])
    end = time.monotonic() + seconds
    for _ in range(1024):
        if time.monotonic() > end:
            break
        h.wfile.write(b"\0" * 65536)


def test_a_content_length_over_the_cap_is_refused_before_reading(serve, tmp_path):
    server = serve({"/photos/303/medium.jpg": lambda h, n: _stream(h, announce=10 ** 12)})
    start = time.monotonic()
    outcome, _ = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True,
                           max_bytes=1_000_000, retries=2)
    assert "1000000000000 bytes announced, more than the 1000000 accepted" in outcome.failed[f"{server.url}/photos/303/medium.jpg"]
    assert time.monotonic() - start < 1.0 and server.hits["/photos/303/medium.jpg"] == 1
    assert written(tmp_path / "images") == []


def test_an_endless_body_is_stopped_at_the_cap_and_its_part_removed(serve, tmp_path):
    server = serve({"/photos/303/medium.jpg": lambda h, n: _stream(h)})  # no Content-Length: ends when the server closes
    start = time.monotonic()
    outcome, _ = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True,
                           max_bytes=1_000_000, retries=2)
    assert "more than the 1000000 bytes accepted" in outcome.failed[f"{server.url}/photos/303/medium.jpg"]
    assert time.monotonic() - start < 1.5 and server.hits["/photos/303/medium.jpg"] == 1
    assert written(tmp_path / "images") == []


def _dribble(h, data, every=0.2):
    for i in range(min(len(data), 25)):  # at most 5 s
        h.wfile.write(data[i:i + 1])
        time.sleep(every)


def _slow_body(h, n):
    h.send_response(200)
    h.send_header("Content-Length", str(len(JPEG)))
    h.end_headers()
    _dribble(h, JPEG)


def _slow_headers(h, n):
    _dribble(h, b"HTTP/1.0 200 OK\r\nContent-Type: image/jpeg\r\n\r\n" + JPEG)


@pytest.mark.parametrize("route", [_slow_body, _slow_headers], ids=["body", "headers"])
def test_a_slow_server_is_stopped_by_the_photo_deadline(serve, tmp_path, route):
    server = serve({"/photos/303/medium.jpg": route})
    start = time.monotonic()
    # each byte comes well within the read timeout; only the deadline over the whole photo stops it
    outcome, _ = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True,
                           timeout=1.0, deadline=1.0, retries=3)
    assert "deadline of 1 s passed" in outcome.failed[f"{server.url}/photos/303/medium.jpg"]
    assert time.monotonic() - start < 1.6
    assert written(tmp_path / "images") == []


# -- dropped connections and wrong bodies ------------------------------------------------------
def _drop_then_serve(how):
    def route(h, n):
        if n > 1:
            return ok(JPEG)(h, n)
        if how == "incomplete":
            h.send_response(200)
            h.send_header("Content-Length", str(len(JPEG)))
            h.end_headers()
            h.wfile.write(JPEG[:10])  # then the connection closes
        else:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()  # a reset
    return route


@pytest.mark.parametrize("how", ["incomplete", "reset"])
def test_a_dropped_connection_is_retried(serve, tmp_path, how):
    server = serve({"/photos/303/medium.jpg": _drop_then_serve(how)})
    outcome, dest = fetch_one(f"{server.url}/photos/303/medium.jpg", tmp_path / "images", allow_private=True, retries=1)
    assert outcome.fetched == 1 and not outcome.failed and dest.read_bytes() == JPEG
    assert server.hits["/photos/303/medium.jpg"] == 2 and written(tmp_path / "images") == ["303.jpg"]


def test_an_api_answer_over_its_cap_is_refused(serve):
    big = b"[" + b"0," * 600_000 + b"0]"
    server = serve({"/announced": ok(big, "application/json"),
                    "/unannounced": lambda h, n: (h.send_response(200), h.end_headers(), h.wfile.write(big))})
    for path, why in (("/announced", "bytes announced"), ("/unannounced", "more than the 1000000 bytes")):
        with pytest.raises(fetch.Refused, match=why):
            fetcher(allow_private=True).get(f"{server.url}{path}")
    assert fetcher(allow_private=True).get(f"{server.url}/announced", max_bytes=2_000_000) == big


def test_a_part_planted_as_a_link_is_neither_written_through_nor_removed(serve, tmp_path):
    server = serve({"/photos/303/medium.jpg": ok(JPEG)})
    folder = tmp_path / "images"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (folder / "303.jpg.part").symlink_to(victim)
    outcome, _ = fetch_one(f"{server.url}/photos/303/medium.jpg", folder, allow_private=True)
    assert outcome.failed and victim.read_text() == "keep me" and (folder / "303.jpg.part").is_symlink()


def test_an_html_page_instead_of_the_photo_is_reported_and_fetched_on_the_next_build(serve, tmp_path):
    def html_once(h, n):
        return (ok(HTML, "text/html") if n == 1 else ok(JPEG))(h, n)

    server = serve({"/photos/10/medium.jpg": html_once, "/photos/20/medium.jpg": ok(JPEG)})
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "birds-to-words-v1.0.tsv").write_text("\t".join([
        "https://www.inaturalist.org/observations/1", f"{server.url}/photos/10/medium.jpg", "Sp a", "base",
        "https://www.inaturalist.org/observations/2", f"{server.url}/photos/20/medium.jpg", "Sp b", "sameGenus",
        "train", "1", "Animal 1 has a short beak."]) + "\n")
    # the server is on loopback: opted in to here, refused by default
    config = {"rate": "0", "retries": "2", "api": "", "allow_private_hosts": "true"}
    first = build_dataset(make_builder("birds_to_words", raw, config), tmp_path / "out1", progress=False)
    assert dict(first.report.rows) == {}
    skipped = [p.reason for p in first.report.problems if p.action == "skipped"]
    assert len(skipped) == 1 and "not an image" in skipped[0] and "text/html" in skipped[0]
    notes = [p.reason for p in first.report.problems if "photo not fetched" in p.reason]
    assert len(notes) == 1 and notes[0].endswith("(retried on the next build)")
    assert server.hits["/photos/10/medium.jpg"] == 1  # refused, not retried within the build
    assert sorted(p.name for p in (raw / "images").iterdir()) == ["20.jpg", fetch.MANIFEST]

    second = build_dataset(make_builder("birds_to_words", raw, config), tmp_path / "out2", progress=False)
    assert dict(second.report.rows) == {"train": 1} and server.hits["/photos/10/medium.jpg"] == 2
    assert (raw / "images" / "10.jpg").read_bytes() == JPEG


# -- TLS ---------------------------------------------------------------------------------------
@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for photos.example (openssl's command line; skipped without it)."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                           "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=photos.example",
                           "-addext", "subjectAltName=DNS:photos.example"], capture_output=True, timeout=20)
    if made.returncode:
        pytest.skip(f"openssl could not make a test certificate: {made.stderr.decode()[-200:]}")
    return cert, key


def test_https_checks_the_certificate_against_the_name_at_the_checked_address(serve, names, certificate, tmp_path):
    cert, key = certificate
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    server = serve({"/photos/303/medium.jpg": ok(JPEG)}, tls=server_side)
    names.table.update({"photos.example": "127.0.0.1", "elsewhere.example": "127.0.0.1"})
    trust = ssl.create_default_context(cafile=str(cert))

    url = f"https://photos.example:{server.port}/photos/303/medium.jpg"
    outcome, dest = fetch_one(url, tmp_path / "ok", allow_private=True, context=trust)
    assert outcome.fetched == 1 and dest.read_bytes() == JPEG and server.hosts == [f"photos.example:{server.port}"]

    other = f"https://elsewhere.example:{server.port}/photos/303/medium.jpg"  # same address, a name the certificate lacks
    outcome, _ = fetch_one(other, tmp_path / "wrong", allow_private=True, context=ssl.create_default_context(cafile=str(cert)))
    assert "certificate" in outcome.failed[other].lower() and written(tmp_path / "wrong") == []

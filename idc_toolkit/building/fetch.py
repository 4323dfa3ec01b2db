"""Fetching a release's images from the URLs it lists: resumable, rate-limited, with retries.

Some releases ship URLs instead of images (Birds-to-Words: iNaturalist photos). Each photo is
streamed to a ``.part`` file and renamed when complete, so an interrupted run resumes where it
stopped, and a photo already on disk is never fetched again. The outcome of every URL (file,
HTTP status, licence where the source says it) is kept in a manifest beside the photos, so a
dead link is reported by the build instead of vanishing.

What a release lists and what a server answers are untrusted:

- only ``http`` and ``https`` URLs are fetched, redirects included (at most :data:`MAX_REDIRECTS`);
- every host is resolved once and each of its addresses checked (:func:`refusal`: loopback,
  private, link-local, multicast, reserved, unspecified and other non-public addresses are
  refused unless ``allow_private``); the connection goes to that checked address, with the
  host's name kept for the ``Host`` header and TLS (SNI and the certificate), so a second DNS
  answer cannot swap the address between the check and the connection;
- a photo is at most ``max_bytes`` (a larger ``Content-Length`` is refused before reading) and
  takes at most ``deadline`` seconds in all, its retries included (every read waits at most
  what is left);
- a photo is kept only if its bytes start as a JPEG, PNG, GIF or WebP does.

A refused URL or answer is a failed fetch: named in the build report with why, tried again on
the next build, not retried within this one. Proxies from the environment are not used: the
address checked must be the photo host's own. Plain ``http.client``: one GET per photo needs no
client library, and the loopback test server speaks to it the same way.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urljoin, urlsplit, urlunsplit

from ..files import write_text_atomic

MANIFEST = "fetch_manifest.json"
USER_AGENT = "idc-toolkit (+https://github.com/idc-toolkit/idc-toolkit)"
#: first wait before a retry, doubled after each
BACKOFF_S = 1.0
#: redirects followed per URL, each hop checked as the first
MAX_REDIRECTS = 5
#: the largest photo accepted (bytes)
MAX_BYTES = 50_000_000
#: the largest API answer (JSON) accepted (bytes)
MAX_JSON_BYTES = 1_000_000
#: seconds a photo may take in all, retries included
DEADLINE_S = 120.0
#: bytes read and written at a time
CHUNK = 1 << 16
#: how each accepted image format begins (WebP: ``RIFF`` + size + ``WEBP``)
IMAGE_MAGIC = {"JPEG": (b"\xff\xd8\xff",), "PNG": (b"\x89PNG\r\n\x1a\n",), "GIF": (b"GIF87a", b"GIF89a")}
REDIRECTS = (301, 302, 303, 307, 308)


class DeadLink(OSError):
    """The source answered that the file is gone (403 / 404 / 410): not retried, not on a rerun."""


class Refused(OSError):
    """The URL or the answer is not accepted (scheme, address, size, not an image): not retried in
    this build; tried again on the next."""


class _Status(OSError):
    """An HTTP answer other than 200, a redirect or a dead link's: retried."""


def refusal(address: str) -> Optional[str]:
    """Why ``address`` (an IP) may not be fetched from without ``allow_private``; None: public."""
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 reaches 127.0.0.1
    for kind in ("loopback", "unspecified", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return f"{address} is a {kind.replace('_', '-')} address"
    if not ip.is_global:
        return f"{address} is not a public address"
    return None


def image_format(head: bytes) -> Optional[str]:
    """The image format whose signature ``head`` (a body's first bytes) starts with; None: not an image."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    return next((name for name, starts in IMAGE_MAGIC.items() if head.startswith(starts)), None)


class _Deadline:
    """What is left of one URL's time; every socket wait is bounded by it."""

    def __init__(self, seconds: float, read_timeout: float):
        self.seconds, self.read_timeout = seconds, read_timeout
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def wait(self) -> float:
        left = self.left()
        if left <= 0:
            raise TimeoutError(f"deadline of {self.seconds:g} s passed")
        return min(self.read_timeout, left)


class _Bounded:
    """A socket whose every read waits at most the read timeout and what is left of the deadline
    (a server sending a byte at a time would otherwise reset a per-read timeout forever)."""

    deadline: Optional[_Deadline] = None

    def recv_into(self, *args, **kwargs):
        if self.deadline is not None:
            self.settimeout(self.deadline.wait())
        return super().recv_into(*args, **kwargs)

    def recv(self, *args, **kwargs):
        if self.deadline is not None:
            self.settimeout(self.deadline.wait())
        return super().recv(*args, **kwargs)


class _Socket(_Bounded, socket.socket):
    pass


class _SSLSocket(_Bounded, ssl.SSLSocket):
    """The class ``wrap_socket`` returns for the fetcher's TLS context."""


def _connect(host: str, port: int, deadline: _Deadline, allow_private: bool) -> _Socket:
    """A socket connected to an address of ``host`` that passed :func:`refusal`: resolved once, and
    that very address connected to (no second lookup for a rebinding DNS server to answer)."""
    infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    if not infos:
        raise OSError(f"{host} resolves to no address")
    if not allow_private:
        for *_, sockaddr in infos:
            why = refusal(sockaddr[0])
            if why:
                raise Refused(f"host {host} refused: {why} (not fetched from unless private hosts are allowed)")
    last: OSError = OSError(f"{host}: no address answered")
    for family, kind, proto, _, sockaddr in infos:
        sock = _Socket(family, kind, proto)
        try:
            sock.settimeout(deadline.wait())
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        sock.deadline = deadline
        return sock
    raise last


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, deadline: _Deadline, allow_private: bool):
        super().__init__(host, port, timeout=deadline.read_timeout)
        self._deadline, self._allow_private = deadline, allow_private

    def connect(self) -> None:
        self.sock = _connect(self.host, self.port, self._deadline, self._allow_private)


class _HTTPSConnection(_HTTPConnection):
    def __init__(self, host: str, port: int, deadline: _Deadline, allow_private: bool, context: ssl.SSLContext):
        super().__init__(host, port, deadline, allow_private)
        self._tls = context

    def connect(self) -> None:
        sock = _connect(self.host, self.port, self._deadline, self._allow_private)
        try:
            sock.settimeout(self._deadline.wait())  # the handshake, in all
            tls = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        tls.deadline = self._deadline
        self.sock = tls


class Fetcher:
    """GETs at most ``rate`` requests per second, retrying timeouts, dropped connections and
    5xx/429 answers ``retries`` times with doubling waits; 403 / 404 / 410 are dead at once
    (:class:`DeadLink`); what :class:`Refused` names is not retried. ``timeout``: seconds one
    read or connection may wait; ``deadline``: seconds one URL may take in all; ``max_bytes``:
    the largest photo; ``allow_private``: fetch from loopback, private and other non-public
    addresses too; ``context``: the TLS context (default: the system's trusted certificates)."""

    def __init__(self, rate: float = 1.0, retries: int = 3, timeout: float = 30.0, backoff: Optional[float] = None,
                 max_bytes: int = MAX_BYTES, deadline: float = DEADLINE_S, allow_private: bool = False,
                 max_redirects: int = MAX_REDIRECTS, context: Optional[ssl.SSLContext] = None):
        backoff = BACKOFF_S if backoff is None else backoff
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.retries, self.timeout, self.backoff = retries, timeout, backoff
        self.max_bytes, self.deadline, self.allow_private = max_bytes, deadline, allow_private
        self.max_redirects = max_redirects
        self.context = context or ssl.create_default_context()
        self.context.sslsocket_class = _SSLSocket
        self._last = 0.0

    # -- one request, its redirects followed and checked -------------------------------------
    def _open(self, url: str, deadline: _Deadline) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """The connection and the 200 answer of ``url``, each redirect checked as the first URL."""
        for hop in range(self.max_redirects + 1):
            try:
                conn, resp = self._request(url, deadline)
            except Refused as exc:
                raise Refused(f"redirected to {url!r}: {exc}" if hop else str(exc)) from None
            if resp.status not in REDIRECTS:
                return conn, resp
            location = resp.getheader("Location")
            conn.close()
            if not location:
                raise _Status(f"HTTP {resp.status} without a Location")
            url = urljoin(url, location)
        raise Refused(f"more than {self.max_redirects} redirects")

    def _request(self, url: str, deadline: _Deadline) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """One GET of ``url``; its answer is 200 or a redirect."""
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:  # a bracket left open, a port out of range
            raise Refused(f"not a URL: {exc}") from None
        if parts.scheme not in ("http", "https"):
            raise Refused(f"scheme {parts.scheme!r} is not http(s)")
        if not host:
            raise Refused("the URL names no host")
        try:
            if parts.scheme == "https":
                conn: _HTTPConnection = _HTTPSConnection(host, port, deadline, self.allow_private, self.context)
            else:
                conn = _HTTPConnection(host, port, deadline, self.allow_private)
        except (ValueError, http.client.InvalidURL) as exc:  # control characters in the host
            raise Refused(f"not a URL: {exc}") from None
        try:
            conn.request("GET", urlunsplit(("", "", parts.path or "/", parts.query, "")), headers={"User-Agent": USER_AGENT})
            resp = conn.getresponse()
        except (ValueError, http.client.InvalidURL) as exc:  # control characters in the path, a name IDNA cannot encode
            conn.close()
            raise Refused(f"not a URL: {exc}") from None
        except BaseException:
            conn.close()
            raise
        if resp.status != 200 and resp.status not in REDIRECTS:
            conn.close()
            raise (DeadLink if resp.status in (403, 404, 410) else _Status)(f"HTTP {resp.status}")
        return conn, resp

    def _attempts(self, url: str, read: Callable[[http.client.HTTPResponse], object]):
        last_error, deadline = "unreachable", None
        for attempt in range(self.retries + 1):
            wait = self._last + self.interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last = time.monotonic()
            deadline = deadline or _Deadline(self.deadline, self.timeout)
            try:
                conn, resp = self._open(url, deadline)
                try:
                    return read(resp)
                finally:
                    conn.close()
            except (Refused, DeadLink) as exc:
                raise type(exc)(f"{exc} after {attempt + 1} attempt(s)") from None
            except (OSError, http.client.HTTPException) as exc:  # IncompleteRead and resets among them
                last_error = str(exc) if isinstance(exc, _Status) else f"{type(exc).__name__}: {exc}"
            if deadline.left() <= 0:
                raise OSError(f"deadline of {self.deadline:g} s passed ({last_error}) after {attempt + 1} attempt(s)")
            if attempt < self.retries:
                time.sleep(min(self.backoff * 2 ** attempt, deadline.left()))
        raise OSError(f"{last_error} after {self.retries + 1} attempt(s)")

    def _check_length(self, resp: http.client.HTTPResponse, cap: int) -> None:
        if resp.length is not None and resp.length > cap:
            raise Refused(f"{resp.length} bytes announced, more than the {cap} accepted")

    # -- what callers use ---------------------------------------------------------------------
    def get(self, url: str, max_bytes: int = MAX_JSON_BYTES) -> bytes:
        """The body of ``url`` (an API's answer, held in memory: at most ``max_bytes``); raises
        ``OSError`` with the reason when it stays unreachable or is refused."""

        def read(resp: http.client.HTTPResponse) -> bytes:
            self._check_length(resp, max_bytes)
            data = resp.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise Refused(f"more than the {max_bytes} bytes accepted")
            self._check_complete(resp)
            return data

        return self._attempts(url, read)

    def download(self, url: str, dest: Path) -> None:
        """Stream ``url`` to ``dest`` (through ``dest.part``, removed on failure) if it is an image
        of at most ``max_bytes``; raises ``OSError`` with the reason otherwise."""
        part = dest.with_name(dest.name + ".part")

        def read(resp: http.client.HTTPResponse) -> None:
            self._check_length(resp, self.max_bytes)
            # O_NOFOLLOW: a .part planted as a link is not written through
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                with os.fdopen(fd, "wb") as out:
                    head, size = b"", 0
                    while chunk := resp.read(CHUNK):
                        size += len(chunk)
                        if size > self.max_bytes:
                            raise Refused(f"more than the {self.max_bytes} bytes accepted")
                        if len(head) < 12:
                            head += chunk[:12 - len(head)]
                            if len(head) == 12:
                                self._check_image(head, resp)
                        out.write(chunk)
                self._check_complete(resp)
                if len(head) < 12:
                    self._check_image(head, resp)
                part.replace(dest)
            except BaseException:
                part.unlink(missing_ok=True)  # the .part this download opened just above, never the photo
                raise

        self._attempts(url, read)

    @staticmethod
    def _check_complete(resp: http.client.HTTPResponse) -> None:
        # read(amt) returns short at a dropped connection instead of raising: what is left says so
        if resp.length:
            raise http.client.IncompleteRead(b"", resp.length)

    @staticmethod
    def _check_image(head: bytes, resp: http.client.HTTPResponse) -> None:
        if image_format(head) is None:
            raise Refused(f"not an image (Content-Type {resp.getheader('Content-Type')!r}, body starts {head!r})")


def read_manifest(folder: Path) -> dict[str, dict]:
    path = folder / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass
class FetchJob:
    url: str
    dest: Path
    #: called once the photo is fetched, to look up its licence (None: no lookup)
    licence: Optional[Callable[[], Optional[str]]] = None


@dataclass
class FetchOutcome:
    fetched: int = 0
    present: int = 0
    dead: dict[str, str] = field(default_factory=dict)  #: url -> why (gone for good)
    failed: dict[str, str] = field(default_factory=dict)  #: url -> why (retried on the next run)


def fetch_all(jobs: list[FetchJob], folder: Path, fetcher: Fetcher, progress: bool = True) -> FetchOutcome:
    """Fetch every job whose file is not on disk yet into ``folder``; the manifest is written
    after every photo, so an interrupted run keeps what it learnt."""
    from tqdm.auto import tqdm

    folder.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(folder)
    outcome = FetchOutcome()
    todo = []
    for job in jobs:
        if job.dest.is_file():
            outcome.present += 1
        elif manifest.get(job.url, {}).get("dead"):
            outcome.dead[job.url] = manifest[job.url]["dead"]
        else:
            todo.append(job)
    for job in tqdm(todo, desc="fetching photos", unit="photo", disable=not progress or not todo):
        entry: dict = {"file": job.dest.name}
        try:
            fetcher.download(job.url, job.dest)
            outcome.fetched += 1
            if job.licence is not None:
                try:
                    licence = job.licence()
                    if licence is not None and not isinstance(licence, str):
                        raise ValueError(f"licence {licence!r} is not a string")
                    entry["licence"] = licence
                except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # an API's JSON of any shape
                    entry["licence_error"] = str(exc)
        except DeadLink as exc:
            entry["dead"] = str(exc)
            outcome.dead[job.url] = str(exc)
        except OSError as exc:
            entry["error"] = str(exc)
            outcome.failed[job.url] = str(exc)
        manifest[job.url] = entry
        write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    return outcome

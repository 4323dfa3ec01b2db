"""An OpenAI-compatible chat endpoint as the judge (vLLM, TGI, llama.cpp's server, ...), with
every reply treated as untrusted.

* Each question is one ``POST …/chat/completions`` at temperature 0; ``concurrency`` requests
  are in flight at once, each thread on its own kept-alive connection.
* A redirect is followed only to the same origin and only where it keeps the method and body
  (307 / 308); any other redirect, and 401 / 403 / 404, stop the run naming the target: the
  key (``IDC_JUDGE_API_KEY``, or the URL's ``user:password@``) never leaves for another host.
* Connection errors, cut replies, timeouts, 429 and 5xx are retried with doubling waits
  (``Retry-After`` honoured up to :data:`MAX_WAIT_S`), ``retries`` times; a question still
  unanswered then is *failed*, counted, and asked again by a rerun.
* A reply is read up to :data:`MAX_REPLY_BYTES` (``Content-Length`` is checked first) within
  ``timeout`` seconds in all; its text is read by :func:`~.answers.parse_answer`.
* The URL is shown and recorded only as :func:`~idc_toolkit.urls.mask_url` writes it.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence
from urllib.parse import unquote, urljoin, urlsplit

from ..errors import EvaluationError
from ..urls import mask_url
from .answers import FAILED, UNPARSED, parse_answer

#: a chat completion is a few hundred bytes; a larger reply is refused unread
MAX_REPLY_BYTES = 1 << 20
#: the longest wait between two tries of one question
MAX_WAIT_S = 30.0
MAX_REDIRECTS = 3
KEY_ENV = "IDC_JUDGE_API_KEY"


class _Retry(Exception):
    """A transient failure of one try (the reason travels with it)."""

    def __init__(self, why: str, wait: Optional[float] = None):
        super().__init__(why)
        self.wait = wait


class _Failed(Exception):
    """This question's reply cannot be read (too large, not a chat completion): failed, not retried."""


class EndpointJudge:
    """Answers each prompt ``yes`` / ``no`` / ``unparsed`` / ``failed`` (module docstring)."""

    def __init__(self, model: str, endpoint: str, concurrency: int = 16, timeout: float = 120.0, max_tokens: int = 16,
                 retries: int = 4, backoff: float = 1.0):
        parts = urlsplit(endpoint)
        self.shown = mask_url(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EvaluationError(f"--judge-endpoint {self.shown}: not an http(s) URL")
        self.model, self.timeout, self.max_tokens = model, timeout, max_tokens
        self.retries, self.backoff, self.concurrency = retries, backoff, concurrency
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "keep-alive"}
        key = os.environ.get(KEY_ENV)
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        elif parts.username is not None:
            user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(user_pass).decode()
        if parts.query:
            self.path += "?" + parts.query
        self.dtype = "served"
        self._local = threading.local()
        self._pool: Optional[ThreadPoolExecutor] = None

    # -- one request ---------------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = self._local.conn = cls(self.host, self.port, timeout=self.timeout)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _post(self, path: str, body: bytes) -> tuple[int, http.client.HTTPResponse, bytes]:
        """One try: the status, the response and its body (read within the caps)."""
        deadline = time.monotonic() + self.timeout
        conn = self._connection()
        try:
            conn.request("POST", path, body, self.headers)
            resp = conn.getresponse()
            length = resp.getheader("Content-Length")
            if length is not None and (not length.strip().isdigit() or int(length) > MAX_REPLY_BYTES):
                self._drop_connection()
                raise _Failed(f"a reply of {length[:20]!r} bytes")
            chunks, size = [], 0
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no whole reply within {self.timeout:g} s")
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    self._drop_connection()
                    raise _Failed(f"a reply of more than {MAX_REPLY_BYTES:,} bytes")
                chunks.append(chunk)
            if length is not None and size < int(length):
                raise http.client.IncompleteRead(b"".join(chunks), int(length) - size)
            resp.close()  # read whole: the kept-alive connection takes the next request
            if resp.getheader("Connection", "").lower() == "close" or resp.version == 10:
                self._drop_connection()
            return resp.status, resp, b"".join(chunks)
        except (OSError, http.client.HTTPException) as exc:  # resets, cut replies, timeouts, refused connections
            self._drop_connection()
            raise _Retry(f"{type(exc).__name__}: {exc}") from None

    def _redirect(self, resp: http.client.HTTPResponse, path: str) -> str:
        """The path of a same-origin 307 / 308 redirect; anything else stops the run."""
        target = urljoin(f"{self.scheme}://{self.host}{':%d' % self.port if self.port else ''}{path}",
                         resp.getheader("Location") or "")
        t = urlsplit(target)
        same = (t.scheme, t.hostname, t.port or (443 if t.scheme == "https" else 80)) == \
               (self.scheme, self.host, self.port or (443 if self.scheme == "https" else 80))
        if resp.status not in (307, 308) or not same:
            why = "another origin" if not same else f"HTTP {resp.status} would turn the POST into a GET"
            raise EvaluationError(f"judge endpoint {self.shown}: redirected to {mask_url(target)} ({why}: not followed, "
                                  "no credentials sent; point --judge-endpoint at the server itself)")
        return t.path + (f"?{t.query}" if t.query else "")

    def _try(self, body: bytes) -> str:
        path = self.path
        for _ in range(MAX_REDIRECTS + 1):
            status, resp, data = self._post(path, body)
            if status in (301, 302, 303, 307, 308):
                path = self._redirect(resp, path)
                continue
            if status == 429 or status >= 500:
                retry_after = resp.getheader("Retry-After")
                wait = float(retry_after) if retry_after and retry_after.strip().isdigit() else None
                raise _Retry(f"HTTP {status}", wait)
            if status in (401, 403, 404):
                raise EvaluationError(f"judge endpoint {self.shown}: HTTP {status} "
                                      f"({'check ' + KEY_ENV if status != 404 else 'check the URL: it should end in /v1'})")
            if status != 200:
                return FAILED  # this prompt alone (too long for the served context, say): counted, not retried
            try:
                reply = json.loads(data)
                content = reply["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                return FAILED
            return parse_answer(content) if content is not None else UNPARSED
        raise EvaluationError(f"judge endpoint {self.shown}: more than {MAX_REDIRECTS} redirects")

    def _one(self, prompt: str) -> str:
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
                           "max_tokens": self.max_tokens, "seed": 0}).encode()
        for attempt in range(self.retries + 1):
            try:
                return self._try(body)
            except _Failed:
                return FAILED
            except _Retry as exc:
                if attempt == self.retries:
                    return FAILED
                wait = self.backoff * 2 ** attempt if exc.wait is None else exc.wait
                time.sleep(min(wait, MAX_WAIT_S))
        return FAILED

    # -- many ------------------------------------------------------------------------------------
    def answer(self, prompts: Sequence[str]) -> list[str]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="idc-judge")
        return list(self._pool.map(self._one, prompts))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __getstate__(self):  # sent to Ray workers: connections and threads are made there
        state = dict(self.__dict__)
        state["_local"], state["_pool"] = None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

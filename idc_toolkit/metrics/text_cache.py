"""Strings computed by a Java tool from exact text, kept on disk (SQLite) so that scoring the
same captions again does not start the tool again: METEOR's per-segment statistics and the PTB
tokenizer's output. A value depends only on its key text and the namespace (the tool's version
and options), and both are in the key. Deleting the file costs time only."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Sequence

from ..cache import cache_dir


#: characters of a key's text encoded at a time
KEY_PIECE = 1 << 20


class TextCache:
    """``env=0`` turns the cache off, ``env=PATH`` moves its file (default: the toolkit's cache
    folder). A home that cannot be written leaves it off: everything is computed, as without one."""

    def __init__(self, env: str, filename: str, table: str, namespace: str) -> None:
        self.table, self.namespace, self.db = table, namespace, None
        setting = os.environ.get(env, "")
        if setting == "0":
            return
        path = Path(setting) if setting else cache_dir(filename)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT)")
        except (OSError, sqlite3.Error):
            self.db = None

    def _key(self, text: str) -> str:
        """SHA-256 of the namespace, a newline and ``text`` in UTF-8, hashed a piece at a time: a
        tokenizer block's text (24 MB at 80,000 pairs) is never copied whole to be hashed."""
        digest = hashlib.sha256(f"{self.namespace}\n".encode())
        for start in range(0, len(text), KEY_PIECE):
            digest.update(text[start:start + KEY_PIECE].encode())
        return digest.hexdigest()

    def get(self, texts: Sequence[str]) -> dict[int, str]:
        """``{position in texts: value}`` of the texts that are cached."""
        if self.db is None:
            return {}
        keys = [self._key(text) for text in texts]
        found: dict[str, str] = {}
        for start in range(0, len(keys), 900):  # SQLite's variable limit
            chunk = keys[start:start + 900]
            rows = self.db.execute(f"SELECT key, value FROM {self.table} WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            found.update(rows.fetchall())
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put(self, texts: Sequence[str], values: Sequence[str]) -> None:
        if self.db is None or not texts:
            return
        try:
            with self.db:
                self.db.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)",
                                    [(self._key(text), value) for text, value in zip(texts, values)])
        except sqlite3.Error:
            pass  # a full disk costs the tool's time next run, not this run

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def __enter__(self) -> "TextCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

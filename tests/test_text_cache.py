"""The on-disk cache of the Java tools' outputs: a key is the SHA-256 of its namespace and text,
whole, however the text is hashed (entries written before stay found)."""

import hashlib

import idc_toolkit.metrics.text_cache as text_cache
from idc_toolkit.metrics.text_cache import TextCache


def test_a_key_is_the_digest_of_the_whole_text_hashed_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(text_cache, "KEY_PIECE", 5)  # pieces cut inside words and multi-byte characters
    monkeypatch.setenv("IDC_TEST_CACHE", str(tmp_path / "cache.sqlite"))
    texts = ["", "a", "abcde", "abcdef", "the cube\nis gone \u00e9\u4e2d\U0001F600 x" * 3]
    with TextCache("IDC_TEST_CACHE", "unused.sqlite", "t", "tool 1.0 \u00e9") as cache:
        for text in texts:
            assert cache._key(text) == hashlib.sha256(f"tool 1.0 \u00e9\n{text}".encode()).hexdigest()
        cache.put(texts, [f"value {k}" for k in range(len(texts))])
    monkeypatch.setattr(text_cache, "KEY_PIECE", 1 << 20)
    with TextCache("IDC_TEST_CACHE", "unused.sqlite", "t", "tool 1.0 \u00e9") as cache:
        assert cache.get(texts[::-1]) == {len(texts) - 1 - k: f"value {k}" for k in range(len(texts))}

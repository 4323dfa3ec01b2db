"""What a run's output depends on, as named fields and one digest.

A run's *fields* are a flat ``{name: JSON value}`` dict: every parameter, the input's
fingerprint, model names, revisions and content hashes of local weights, the toolkit
version. Two runs with equal fields write equal folders; a rerun whose fields differ is
refused with :func:`differences` naming each field that changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from ..files import content_sha256, write_text_atomic


def canonical(value: Any) -> Any:
    """``value`` as plain JSON types (paths as strings, tuples as lists, sorted dict keys)."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def recorded(args: Any) -> dict[str, Any]:
    """The fields of an options dataclass that a run's fingerprint and record hold, each as its
    ``record`` metadata says (:data:`idc_toolkit.options.Record`); a field without that metadata
    is recorded by value, a nested options object field by field, a secret masked. Derived from
    the fields, so an option added to the class is recorded with no other edit."""
    from dataclasses import fields, is_dataclass

    from ..options import masked

    out: dict[str, Any] = {}
    for f in fields(args):
        how, value = f.metadata.get("record", True), getattr(args, f.name)
        if how is False:
            continue
        if how == "content":
            value = path_content(value)
        elif callable(how):
            value = how(value)
        elif is_dataclass(value) and not isinstance(value, type):
            value = recorded(value)
        out[f.name] = value
    return masked(canonical(out))


def digest(fields: Mapping[str, Any]) -> str:
    """The fingerprint of ``fields`` (16 hex digits of a SHA-256 of their canonical JSON)."""
    text = json.dumps(canonical(fields), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``["delta: 32 -> 200", ...]`` for every field that differs (added and removed included)."""
    old, new = canonical(old), canonical(new)
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key, "<absent>") != new.get(key, "<absent>"):
            out.append(f"{key}: {_short(old.get(key, '<absent>'))} -> {_short(new.get(key, '<absent>'))}")
    return out


def _hash_cache_path() -> Path:
    from ..cache import cache_dir

    return cache_dir("content_hashes.json")


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file's content, cached (see :func:`files_sha256`)."""
    return files_sha256([path])[0]


#: content still to hash from which ``progress=True`` shows a bar: about a second's reading
PROGRESS_BYTES = 1 << 30


def _cache_key(path: Path) -> str:
    st = path.stat()
    return f"{path}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}|{st.st_ctime_ns}"


def _key_path(key: str) -> str:
    return key.rsplit("|", 5)[0]


def files_sha256(paths: list[Path | str], progress: bool = False) -> list[str]:
    """SHA-256 of each file's content, cached so multi-GB weights and datasets are read once
    per change, not on every rerun. The key holds what no copy can carry over: the inode and
    its change time (``st_ctime``, set by the kernel on every write or rename, which ``cp -p``,
    ``rsync -a`` and ``tar`` cannot restore), besides path, size and mtime. A file replaced by
    another of the same size and mtime is therefore hashed again.

    One read of the cache for all ``paths`` and at most one write, not a whole-cache read and
    rewrite per file (``benchmarks/input_fingerprint.py``). ``progress``: a bar over the bytes still to hash
    where they reach :data:`PROGRESS_BYTES` (a first run on a 100 GB dataset reads for a
    minute or more before its first row)."""
    resolved = [Path(p).resolve() for p in paths]
    keys = [_cache_key(p) for p in resolved]
    cache_path = _hash_cache_path()
    cache = _read_cache(cache_path)
    missing = {key: path for key, path in zip(keys, resolved) if key not in cache}
    if missing:
        with _hashing_lock(cache_path, missing):  # torchrun's ranks: one hashes, the others read its entries
            cache = _read_cache(cache_path)
            missing = {key: path for key, path in missing.items() if key not in cache}
            if missing:
                cache = {**cache, **_hash_and_store(cache_path, cache, missing, progress)}
    return [cache[key] for key in keys]


def _read_cache(cache_path: Path) -> dict[str, str]:
    try:
        return json.loads(cache_path.read_text())
    except (OSError, ValueError):
        return {}


@contextmanager
def _hashing_lock(cache_path: Path, missing: dict[str, Path]) -> Iterator[None]:
    """Wait while another process of this machine hashes the same file versions (a blocking
    ``flock`` on a file named by them, removed by its holder once the cache holds their hashes).
    Without it, every torchrun rank hashed a new dataset itself: the same CPU work once per rank.
    A cache that cannot be written takes no lock: the processes then hash side by side."""
    import fcntl

    folder = cache_path.parent / "hashing"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fh = open(folder / (hashlib.sha256("\n".join(sorted(missing)).encode()).hexdigest()[:16] + ".lock"), "a")
    except OSError:
        yield
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:  # a file system without flock
            pass
        try:
            yield
        finally:
            try:
                os.unlink(fh.name)  # newcomers find the cache filled; waiters still hold this file
            except OSError:
                pass


def _hash_and_store(cache_path: Path, cache: dict[str, str], missing: dict[str, Path], progress: bool) -> dict[str, str]:
    """Hash ``missing`` (a bar where :data:`PROGRESS_BYTES` or more are left), write the cache once."""
    todo = sum(path.stat().st_size for path in missing.values())
    bar = None
    if progress and todo >= PROGRESS_BYTES:
        from tqdm.auto import tqdm

        bar = tqdm(total=todo, unit="B", unit_scale=True, desc="hashing the input (once per file version)")
    fresh = {key: _sha256_file(path, bar) for key, path in missing.items()}
    if bar is not None:
        bar.close()
    # keys of files since rewritten or removed can never hit again: dropped, so the cache
    # holds one entry per existing file instead of growing with every rebuild
    rewritten = {str(path) for path in missing.values()}
    kept = {k: v for k, v in cache.items() if _key_path(k) not in rewritten and os.path.exists(_key_path(k))}
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cache_path, json.dumps({**kept, **fresh}))
    except OSError:  # a read-only home only costs the cache
        pass
    return fresh


def _sha256_file(path: Path, bar: Any = None) -> str:
    return content_sha256(path, None if bar is None else bar.update)


def path_content(path: Optional[Path | str], progress: bool = False) -> Optional[str]:
    """A content hash of a local file or folder (weights, adapters); ``None`` for ``None``.

    A name that is not a local path (a Hub id) hashes to ``None``: its revision is a field
    of its own.
    """
    if path is None:
        return None
    p = Path(path)
    if p.is_file():
        return file_sha256(p)
    if p.is_dir():
        files = sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith("."))
        h = hashlib.sha256()
        for f, sha in zip(files, files_sha256(files, progress)):
            h.update(f"{f.relative_to(p).as_posix()}\0{sha}\n".encode())
        return h.hexdigest()
    return None


def parquet_files_fingerprint(files: list[Path], progress: bool = False) -> str:
    """Fingerprint of a dataset stored as parquet files: their names and contents.

    Contents, not footers: hashing the size and the last 64 KiB (footer, page sizes,
    statistics) missed 8 of 200 one-letter caption edits in a 1.5 MB file (the edit kept
    every compressed size), and a resume would then have mixed rows of two versions of its
    input. A full read costs about 1 s per 1.3 GB on this machine, once per file version:
    :func:`files_sha256` caches it under the file's inode and change time."""
    h = hashlib.sha256()
    for f, sha in zip(files, files_sha256(files, progress)):
        h.update(f"{Path(f).name}\0{sha}\n".encode())
    return h.hexdigest()[:16]


def listing_fingerprint(root: Path, hash_content: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A raw folder's listing: the files named in ``hash_content`` (relative paths) by their
    content, every other file by (path, size). Returns ``{"files": n, "listing": digest,
    "<relative path>": sha256, ...}`` so a changed annotation file is named on its own."""
    hashed: dict[str, Path] = {}
    h = hashlib.sha256()
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            n += 1
            if rel in hash_content:
                hashed[rel] = full
            else:
                h.update(f"{rel}\0{full.stat().st_size}\n".encode())
    shas = files_sha256(list(hashed.values()))  # one cache read and write for all of them
    out: dict[str, Any] = {f"raw:{rel}": sha[:16] for rel, sha in zip(hashed, shas)}
    out["raw_files"] = n
    out["raw_listing"] = h.hexdigest()[:16]
    return out

"""METEOR 1.5's ``SCORE`` statistics in Python, equal to what pycocoevalcap's
``java -jar meteor-1.5.jar - - -stdio -l en -norm`` writes for a segment.

:func:`segment_statistics` answers what the jar answers to the line that
:func:`.meteor_stats.score_line` builds (pycocoevalcap's ``SCORE ||| ref1 ||| ... ||| hyp``);
:func:`statistics` does a batch. What the jar does, and so what is done here:

* the line is split on ``|||`` (Java's ``split``: trailing empty parts dropped) and each part
  trimmed (``String.trim``); each sentence is normalized (``Normalizer``, English, punctuation
  kept), lower-cased and split on whitespace (:mod:`.meteor_normalize`);
* the hypothesis is aligned with each reference (``Aligner``): matches from the four stages in
  order -- exact, stem (the jar's Snowball stemmer), synonym (WordNet synsets of the word and of
  its base forms), paraphrase (the table's entries whose first phrase lies in one sentence and
  second phrase in the other, reference side first) -- with the words compared, as the jar
  compares them, by ``String.hashCode`` in the first three stages; identical sentences use the
  exact stage alone;
* a reference position whose one match covers words nothing else covers is fixed; the rest is
  a beam search (beam 40) over the reference's positions with the jar's comparator (more
  matched words, stages weighted 1, 0.5, 0.5, 0.5 and each weighted count truncated to an
  ``int``; then fewer chunks; then less distance) and its quirk of adding a candidate's distance
  to the path it extends instead of the new path; Java's sort is stable, so is Python's;
* per stage, matched content and function words of each side, chunks recounted over the final
  alignment, and the reference with the highest METEOR score wins (the first on a tie).

The resources come from pycocoevalcap's installed files (:mod:`.meteor_resources`). Tests compare
every field with the jar on real, demo and generated segments.
"""

from __future__ import annotations

import threading
from operator import itemgetter
from typing import Optional, Sequence

import numpy as np

from . import meteor_resources as res
from .meteor_normalize import as_utf16, java_hash, java_trim, meteor_words, vouched
from .ngrams import sorted_distinct

#: ``Constants.DEFAULT_BEAM_SIZE``, which ``-l en`` keeps
BEAM_SIZE = 40
#: the search's stage weights: ``MeteorScorer.loadConfiguration`` gives the aligner 1, 0.5, 0.5,
#: 0.5 and ``PartialAlignment`` adds each weighted length to an ``int`` field, so a non-exact
#: match of ``n`` words adds ``n // 2``
HALF_STAGES = (False, True, True, True)
STAGES = 4
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
#: the layout of the phrase table's cached search arrays; bumped when the hash or the order changes
_SEARCH_VERSION = 1

ERROR_LINE = "Error: specify hypothesis and at least one reference"


def parse_score_line(line: str) -> Optional[tuple[str, list[str]]]:
    """The hypothesis and references the jar reads from a ``SCORE`` line; None where it answers
    :data:`ERROR_LINE`."""
    parts = line.split("|||")
    while parts and parts[-1] == "":
        parts.pop()  # String.split drops trailing empty strings
    if len(parts) < 3:
        return None
    return java_trim(parts[-1]), [java_trim(p) for p in parts[1:-1]]


# -- words --------------------------------------------------------------------------------

_WORDS: dict[str, tuple] = {}  # word -> (hash, stem's hash, synsets, function word)
_TEXTS: dict[str, tuple] = {}  # text -> its METEOR words
_CACHE_LOCK = threading.Lock()
_CACHE_LIMIT = 50_000  # texts (~500 bytes each) and words kept across blocks and jobs


def _word(word: str) -> tuple:
    found = _WORDS.get(word)
    if found is None:
        synonyms = res.synonyms()
        found = (java_hash(word), java_hash(res.stem(as_utf16(word))), synonyms.all_synsets(word),
                 word.lower() in res.function_words())
        if len(_WORDS) > _CACHE_LIMIT:
            _WORDS.clear()
        _WORDS[word] = found
    return found


def _words(text: str) -> tuple:
    found = _TEXTS.get(text)
    if found is None:
        found = meteor_words(text, res.nonbreaking_prefixes())
        if len(_TEXTS) > _CACHE_LIMIT:
            _TEXTS.clear()
        _TEXTS[text] = found
    return found


class _Sentence:
    """One distinct METEOR sentence and what the matchers read of it."""

    __slots__ = ("words", "n", "feats", "h", "stem", "syn", "fw", "function_words", "positions", "hits", "maps", "related")

    def __init__(self, words: tuple) -> None:
        self.words = words
        self.n = len(words)
        self.feats = feats = [_word(w) for w in words]
        self.h = [f[0] for f in feats]
        self.stem = [f[1] for f in feats]
        self.syn = [f[2] for f in feats]
        self.fw = [f[3] for f in feats]
        self.function_words = sum(self.fw)
        positions: dict[str, list[int]] = {}
        for i, w in enumerate(words):
            positions.setdefault(w, []).append(i)
        self.positions = positions
        self.hits: list = []  # (position, phrase length, second phrases in table order)
        self.maps = None
        self.related: dict[str, tuple] = {}

    def matches_of(self, word: str, features: tuple) -> tuple:
        """As this sentence is the hypothesis: the positions a reference word ``word`` matches,
        as (position, stage) in the jar's order (exact, stem, synonym; each by position), kept
        per word since a segment's references share most of theirs."""
        found = self.related.get(word)
        if found is None:
            if self.maps is None:
                self.maps = self._maps()
            by_hash, by_stem, by_syn = self.maps
            h, stem, syn = features[0], features[1], features[2]
            h1 = self.h
            found = [(i, 0) for i in by_hash.get(h, ())]
            found += [(i, 1) for i in by_stem.get(stem, ()) if h1[i] != h]
            if syn:
                near: set[int] = set()
                for sid in syn:
                    at = by_syn.get(sid)
                    if at:
                        near.update(at)
                found += [(i, 2) for i in sorted(near) if h1[i] != h]
            found = tuple(found)
            self.related[word] = found
        return found

    def _maps(self):
        by_hash: dict[int, list[int]] = {}
        by_stem: dict[int, list[int]] = {}
        by_syn: dict[int, list[int]] = {}
        for i in range(self.n):
            by_hash.setdefault(self.h[i], []).append(i)
            by_stem.setdefault(self.stem[i], []).append(i)
            for sid in self.syn[i]:
                by_syn.setdefault(sid, []).append(i)
        return by_hash, by_stem, by_syn


# -- paraphrases --------------------------------------------------------------------------

class _PhraseTable:
    """METEOR's paraphrase table, searchable by a hash of each entry's first phrase (word ids).

    A hash only narrows the candidates: every match is checked word for word, as the jar's
    transducer compares word ids, so a collision costs time, never a wrong match."""

    def __init__(self) -> None:
        from . import paraphrase

        index = res.paraphrase_index()
        self.index = index
        self.ids = {w: k for k, w in enumerate(index.words)}
        # hashing and sorting 5.27 M phrases took 0.5 s of every process: kept beside the index
        search = paraphrase.derived_arrays(f"search-{_SEARCH_VERSION}", self._search) or self._search(index)
        self.longest, self.order, self.sorted_first = int(search["longest"][0]), search["order"], search["sorted_first"]

    @classmethod
    def _search(cls, index) -> dict[str, np.ndarray]:
        """The longest phrase's length and the entries sorted by their first phrase's hash."""
        longest = max(np.diff(index.first_start).max(initial=0), np.diff(index.second_start).max(initial=0))
        first = cls._hashes(index.first, index.first_start[:-1], np.diff(index.first_start))
        order = np.argsort(first, kind="stable").astype(np.int32)
        return {"longest": np.array([longest], dtype=np.int64), "order": order, "sorted_first": first[order]}

    @staticmethod
    def _hashes(ids: np.ndarray, start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each phrase's hash, the fold ``h * M + id + 1`` of its word ids (full arrays per word
        position: faster than selecting the longer phrases)."""
        if not len(start):
            return np.zeros(0, dtype=np.uint64)
        last = len(ids) - 1
        h = ids[start].astype(np.uint64) + np.uint64(1)
        for k in range(1, int(lengths.max())):
            word = ids[np.minimum(start + k, last)].astype(np.uint64) + np.uint64(1)
            h = np.where(lengths > k, h * _HASH_MUL + word, h)
        return h

    def phrase(self, ids: np.ndarray, start: np.ndarray, k: int) -> tuple:
        words = self.index.words
        return tuple(words[i] for i in ids[start[k]:start[k + 1]])

    def attach_hits(self, sentences: Sequence[_Sentence]) -> None:
        """Set each sentence's ``hits``: where an entry's first phrase starts in it, with the
        second phrases of those entries that lie in some sentence of the batch."""
        ids, owner, pos = [], [], []
        for s_k, sentence in enumerate(sentences):
            ids.extend(self.ids.get(w, -1) for w in sentence.words)
            ids.append(-1)
            owner.extend([s_k] * (sentence.n + 1))
            pos.extend(range(sentence.n + 1))
        for sentence in sentences:
            sentence.hits = []
        tokens = np.array(ids, dtype=np.int64)
        owner_a, pos_a = np.array(owner, dtype=np.int64), np.array(pos, dtype=np.int64)
        valid = tokens >= 0
        h = np.zeros(len(tokens), dtype=np.uint64)
        ok = np.ones(len(tokens), dtype=bool)
        grams = []  # (hashes, still valid, length)
        for length in range(1, self.longest + 1):
            if length > len(tokens):
                break
            n = len(tokens) - length + 1
            ok = ok[:n] & valid[length - 1:]
            h = h[:n] * _HASH_MUL + tokens[length - 1:].astype(np.uint64) + np.uint64(1)
            grams.append((h, ok, length))
        present = sorted_distinct(np.concatenate([g[0][g[1]] for g in grams])) if grams else np.zeros(0, np.uint64)
        lo = np.searchsorted(self.sorted_first, present, "left")
        hi = np.searchsorted(self.sorted_first, present, "right")
        counts = hi - lo
        total = int(counts.sum())
        offsets = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(total)
        entries = np.sort(self.order[offsets].astype(np.int64))
        second_start = self.index.second_start
        seconds = self._hashes(self.index.second, second_start[entries], second_start[entries + 1] - second_start[entries])
        entries = entries[np.isin(seconds, present)]
        index = self.index
        by_first: dict[tuple, list[tuple]] = {}
        for k in entries.tolist():
            by_first.setdefault(self.phrase(index.first, index.first_start, k), []).append(
                self.phrase(index.second, index.second_start, k))
        if not by_first:
            return
        first_hashes = np.array(sorted({self._hash_words(f) for f in by_first}), dtype=np.uint64)
        found = []
        for gh, gok, length in grams:
            at = np.flatnonzero(gok & np.isin(gh, first_hashes))
            found.extend((int(o), int(p), length) for o, p in zip(owner_a[at], pos_a[at]))
        for s_k, p, length in sorted(found):
            sentence = sentences[s_k]
            seconds = by_first.get(sentence.words[p:p + length])
            if seconds is not None:
                sentence.hits.append((p, length, seconds))

    def _hash_words(self, words: tuple) -> int:
        h = 0
        for w in words:
            h = (h * int(_HASH_MUL) + self.ids[w] + 1) & 0xFFFFFFFFFFFFFFFF
        return h


_TABLE: list[_PhraseTable] = []


def _phrase_table() -> _PhraseTable:
    with _CACHE_LOCK:
        if not _TABLE:
            _TABLE.append(_PhraseTable())
        return _TABLE[0]


# -- alignment ----------------------------------------------------------------------------

#: a path's rank as one integer: fewer is better, so more weighted matches, then fewer chunks,
#: then less distance (each field far below 2**64)
_CHUNK = 1 << 64
_MATCHED = 1 << 128


def _resolve(n2: int, matches: list, fixed: list, used1: int, used2: int, beam: int):
    """``Aligner.resolve``. A path: [rank (:data:`_MATCHED`, :data:`_CHUNK`, distance), idx,
    lastMatchEnd, line-1 words used (bits), line-2 words used (bits), chosen matches (linked)];
    the jar's ``PartialAlignment`` fields that only its comparator reads live in the rank. A new
    path is kept as (rank, path it extends, match) until it makes the beam: most never do."""
    rank = itemgetter(0)
    next_paths: list = [[0, 0, -1, used1, used2, None]]
    for current in range(n2 + 1):
        paths = next_paths
        next_paths = []
        paths.sort(key=rank)
        del paths[beam:]
        for k, path in enumerate(paths):
            if type(path) is tuple:  # fields 3-5 of a path never change, so its extensions read them late
                key, parent, (m, mask1, end2, end1, mask2) = path[0], path[1], path[2][:5]
                paths[k] = [key, end2, end1, parent[3] | mask1, parent[4] | mask2, (m, parent[5])]
        if current == n2:
            for path in paths:
                if path[2] != -1:
                    path[0] += _CHUNK
                next_paths.append(path)
            break
        step = [_step(m) for m in matches[current]]
        bit = 1 << current
        for path in paths:
            key, idx, last, u1, u2, _ = path
            if u2 & bit:
                if current < idx:
                    next_paths.append(path)
                else:
                    m = fixed[idx]
                    if m is not None:
                        _, _, end2, end1, _, gain, dist, mstart = _step(m)
                        path[0] = key + gain + dist + (_CHUNK if last != -1 and mstart != last else 0)
                        path[1] = end2
                        path[2] = end1
                        next_paths.append(path)
                continue
            for record in step:
                if u2 & record[4] or u1 & record[1]:
                    continue
                mstart = record[7]
                next_paths.append((key + record[5] + (_CHUNK if last != -1 and mstart != last else 0), path, record))
                key += record[6]  # the jar adds it to the extended path, not the new one
            if last != -1:
                key += _CHUNK
                path[2] = -1
            path[0] = key
            path[1] = idx + 1
            next_paths.append(path)
        if not next_paths:
            next_paths.append(paths[0])
    next_paths.sort(key=rank)
    return next_paths[0]


def _step(m: tuple) -> tuple:
    """A match as the search reads it: the match, its line-1 mask, where it ends in each line,
    its line-2 mask, its rank gain (the weighted words it adds), its distance and where it
    starts in line 1."""
    start, length, mstart, mlength, module = m
    gain = (mlength >> 1) + (length >> 1) if HALF_STAGES[module] else mlength + length
    return (m, ((1 << mlength) - 1) << mstart, start + length, mstart + mlength, ((1 << length) - 1) << start,
            -gain * _MATCHED, abs(start - mstart), mstart)


def _align(hyp: _Sentence, ref: _Sentence, beam: int = BEAM_SIZE) -> list:
    """``Aligner.align(hyp, ref)`` and ``MeteorScorer.getMeteorStats``: the 23 statistics."""
    n1, n2 = hyp.n, ref.n
    h1, h2 = hyp.h, ref.h
    matches: list[list] = []
    cov1 = [0] * n1
    cov2 = [0] * n2
    identical = n1 == n2 and h1 == h2
    feats = ref.feats
    for j, word in enumerate(ref.words):
        found = hyp.matches_of(word, feats[j])
        if identical:  # the exact stage alone
            found = [f for f in found if f[1] == 0]
        for i, _ in found:
            cov1[i] += 1
        cov2[j] = len(found)
        matches.append([(j, 1, i, 1, stage) for i, stage in found])
    if not identical:
        words1, words2 = hyp.words, ref.words
        for j, length, seconds in ref.hits:
            for second in seconds:
                ls = len(second)
                for i in hyp.positions.get(second[0], ()):
                    if i + ls <= n1 and words1[i:i + ls] == second:
                        matches[j].append((j, length, i, ls, 3))
                        for k in range(i, i + ls):
                            cov1[k] += 1
                        for k in range(j, j + length):
                            cov2[k] += 1
        for i, length, seconds in hyp.hits:
            for second in seconds:
                ls = len(second)
                for j in ref.positions.get(second[0], ()):
                    if j + ls <= n2 and words2[j:j + ls] == second:
                        matches[j].append((j, ls, i, length, 3))
                        for k in range(i, i + length):
                            cov1[k] += 1
                        for k in range(j, j + ls):
                            cov2[k] += 1
    fixed: list = [None] * n2
    used1 = used2 = 0
    open_choice = False
    for j in range(n2):
        here = matches[j]
        if len(here) == 1:
            m = here[0]
            start, length, mstart, mlength, _ = m
            if (cov2[start] == 1 and cov1[mstart] == 1 if length == mlength == 1 else
                    all(cov2[k] == 1 for k in range(start, start + length))
                    and all(cov1[k] == 1 for k in range(mstart, mstart + mlength))):
                fixed[j] = m
                used2 |= ((1 << length) - 1) << start
                used1 |= ((1 << mlength) - 1) << mstart
                continue
        if here:
            open_choice = True
    final = list(fixed)
    if open_choice:  # with fixed matches alone every path is the start path
        chosen = _resolve(n2, matches, fixed, used1, used2, beam)[5]
        while chosen is not None:
            m, chosen = chosen
            final[m[0]] = m
    stats = [n1, n2, hyp.function_words, ref.function_words] + [0] * 19
    fw1, fw2 = hyp.fw, ref.fw
    chunks = 0
    last = -1
    idx = 0
    while idx < n2:
        m = final[idx]
        if m is None:
            if last != -1:
                chunks += 1
                last = -1
            idx += 1
            continue
        start, length, mstart, mlength, module = m
        base = 4 + 4 * module
        for k in range(mstart, mstart + mlength):
            stats[base + 2 if fw1[k] else base] += 1
        for k in range(start, start + length):
            stats[base + 3 if fw2[k] else base + 1] += 1
        if last != -1 and mstart != last:
            chunks += 1
        idx = start + length
        last = mstart + mlength
    if last != -1:
        chunks += 1
    stats[20] = chunks
    stats[21] = sum(stats[4 + 4 * s] + stats[6 + 4 * s] for s in range(STAGES))
    stats[22] = sum(stats[5 + 4 * s] + stats[7 + 4 * s] for s in range(STAGES))
    return stats


def _line(stats: Sequence[int]) -> str:
    return ".0 ".join(map(str, stats)) + ".0"  # Java's Double.toString of a whole count


class Memo:
    """What the blocks of one job share (its sentences and aligned pairs), so a job aligned block
    by block does the work of one call; its sentences cleared past ``keep``, its aligned pairs past
    ``keep_rows``, so memory stays bounded (a job's sentences repeat far more than its pairs do).
    After each block only the sentences it used and those more than one block met stay
    (:meth:`settle`): where every caption differs, that is one block's."""

    MET_BITS = 1 << 23  #: one bit per hash of a sentence made (1 MiB): a bit set by another sentence only keeps one longer

    # a sentence holds ~6 kB: bounded where every caption differs, all kept for templated ones (benchmarks/README.md)
    def __init__(self, keep: int = 20_000, keep_rows: int = 20_000) -> None:
        self.sentences: dict[tuple, _Sentence] = {}
        self.reused: set[tuple] = set()  # sentences met by more than one block
        self.met = bytearray(self.MET_BITS // 8)  # sentences made before, dropped since
        self.rows: dict[tuple, list[int]] = {}
        self.keep, self.keep_rows = keep, keep_rows

    def made(self, words: tuple) -> _Sentence:
        """A sentence not held: made, and counted as reused where one with its hash was made before."""
        at = hash(words) % self.MET_BITS
        if self.met[at >> 3] & (1 << (at & 7)):
            self.reused.add(words)
        self.met[at >> 3] |= 1 << (at & 7)
        sentence = self.sentences[words] = _Sentence(words)
        return sentence

    def settle(self, used: dict[tuple, _Sentence]) -> None:
        """After a block: drop the sentences it did not use that no other block met either."""
        if len(self.sentences) > len(used):
            self.sentences = {k: s for k, s in self.sentences.items() if k in used or k in self.reused}


def statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str]], beam: int = BEAM_SIZE,
               memo: Optional[Memo] = None) -> list[str]:
    """The jar's ``SCORE`` answer for each (hypothesis, references) segment, in order, as
    :meth:`.meteor.MeteorProcess.statistics` returns it. Text the jar would read as more than
    one line (a line break in a caption) is refused."""
    from .meteor_stats import score_line

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    lines = [score_line(h, r) for h, r in zip(hypotheses, references)]
    distinct = list(dict.fromkeys(lines))
    parsed = []
    for line in distinct:
        if "\n" in line or "\r" in line:
            raise ValueError(f"a line break in {line[:80]!r}: METEOR would read it as two lines")
        parsed.append(parse_score_line(line))
    table = _phrase_table()
    memo = memo or Memo()
    with _CACHE_LOCK:
        if len(memo.sentences) > memo.keep:
            memo.sentences.clear()
            memo.reused.clear()
        if len(memo.rows) > memo.keep_rows:
            memo.rows.clear()
        batch: dict[tuple, _Sentence] = {}
        segments = []
        for item in parsed:
            if item is None:
                segments.append(None)
                continue
            test, refs = item
            words = [_words(t) for t in (test, *refs)]
            for w in words:
                if w not in batch:
                    sentence = memo.sentences.get(w)
                    if sentence is None:
                        sentence = memo.made(w)
                    else:
                        memo.reused.add(w)
                    batch[w] = sentence
            segments.append([batch[w] for w in words])
        memo.settle(batch)
        # a sentence's hits keep the entries whose second phrase lies in this batch: found again per call
        table.attach_hits(list(batch.values()))
        rows: list[list[int]] = []
        spans = []
        for segment in segments:
            if segment is None:
                spans.append(None)
                continue
            hyp = segment[0]
            begin = len(rows)
            for ref in segment[1:]:
                key = (hyp.words, ref.words, beam)
                row = memo.rows.get(key)
                if row is None:
                    row = memo.rows[key] = _align(hyp, ref, beam)
                rows.append(row)
            spans.append((begin, len(rows)))
    answers = _pick(rows, spans)
    by_line = dict(zip(distinct, answers))
    return [by_line[line] for line in lines]


def warm() -> None:
    """Load what an alignment reads (the phrase table's search arrays, WordNet's synsets, the
    function words) before the first segment arrives."""
    _phrase_table()
    res.synonyms()
    res.function_words()
    res.nonbreaking_prefixes()


def _pick(rows: list, spans: list) -> list[str]:
    """Per segment, the statistics of the reference with the highest score, the first on a tie
    (``getMeteorStats``: ``curStats.score > stats.score``)."""
    from .meteor_stats import meteor_score

    scores = meteor_score(np.array(rows, dtype=float)) if rows else np.zeros(0)
    found = [span for span in spans if span is not None]
    bounds = [begin for begin, _ in found] + [len(rows)]
    if found and not np.isnan(scores).any() and all(b < e == n for (b, e), n in zip(found, bounds[1:])):
        # each span's first highest score at once (np.argmax's choice, NaN aside), not one call per segment
        starts = np.array(bounds[:-1])
        best = np.maximum.reduceat(scores, starts)
        sizes = np.diff(bounds)
        at = np.where(scores == np.repeat(best, sizes), np.arange(len(scores)), len(scores))
        chosen = iter(np.minimum.reduceat(at, starts).tolist())
        return [ERROR_LINE if span is None else _line(rows[next(chosen)]) for span in spans]
    out = []
    for span in spans:
        if span is None:
            out.append(ERROR_LINE)
            continue
        begin, end = span
        out.append(_line(rows[begin + int(np.argmax(scores[begin:end]))]))
    return out


def exact_for(hypothesis: str, references: Sequence[str]) -> bool:
    """Whether this segment's text is all such that Python reads it as the jar does
    (:func:`.meteor_normalize.vouched`: lower-casing); a segment it refuses is still answered,
    with Python's lower-casing."""
    return all(vouched(text) and "\n" not in text and "\r" not in text for text in (hypothesis, *references))


def segment_statistics(hypothesis: str, references: Sequence[str]) -> str:
    """The line the jar writes for pycocoevalcap's ``SCORE`` line of this segment."""
    return statistics([hypothesis], [references])[0]

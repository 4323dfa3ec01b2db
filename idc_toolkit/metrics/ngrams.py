"""The 1- to 4-grams of every distinct sentence of a scoring, counted once and laid out as arrays
for BLEU and CIDEr-D, which both count them as pycocoevalcap's ``precook`` does (``split()``,
each n-gram's term frequency, in first-seen order).

Per order, one padded row per distinct sentence (``gid``, ``tf``), and for every (pair,
reference) the column in the reference of each n-gram of the pair's hypothesis: BLEU's clipped
counts and CIDEr-D's dot products are array operations over them. A scoring makes them once for
both metrics (:func:`shared_layouts`).
"""

from __future__ import annotations

from itertools import chain
from typing import Optional, Sequence

import numpy as np

N = 4


class OrderLayouts:
    """Per n-gram order, ``(gid, tf)`` arrays of shape (sentences, widest sentence of that order):
    row = sentence, its n-grams in pycocoevalcap's ``precook`` order (first occurrence), padding
    the id :meth:`finish` is given (weight 0) with tf 0. Sentences are cooked a block at a time as
    arrays: no Python object per n-gram (one per n-gram held several times the layouts' memory on
    distinct captions; benchmarks/README.md).

    Ids: an n-gram of order n + 1 is known within its order by the key ``(id of its first n words
    within order n) << 32 | id of its last word``, kept sorted (``keys``) beside the id it was
    given (``within``); its id in the layouts (``gid``) is given in pycocoevalcap's first-seen
    order: sentence, then order, then first position."""

    BLOCK = 4096  #: sentences cooked together
    MOST_IDS = 1 << 31  #: distinct n-grams a scoring may hold: int32 ids, and keys that fit 64 bits

    def __init__(self, sentences: int, most_words: int) -> None:
        bound = [max(most_words - n, 0) for n in range(N)]  # an order's n-grams in a sentence of that many words
        # ids as int32 until the padding's id is known (fewer than MOST_IDS)
        self.gid = [np.full((sentences, b), -1, dtype=np.int32) for b in bound]
        self.tf = [np.zeros((sentences, b), dtype=np.min_scalar_type(most_words)) for b in bound]
        self.width = [0] * N
        self.rows = 0  # sentences written
        self.vocab = 0  # ids given in the layouts
        self.words: dict[str, int] = {}  # a word's id within order 1
        self.keys = [np.zeros(0, np.int64) for _ in range(N)]  # orders 2-4: known keys, sorted
        self.within = [np.zeros(0, np.int64) for _ in range(N)]  # the id within its order of each key
        self.given = [0] * N  # ids given within each order
        self.gid_of = [np.zeros(0, np.int64) for _ in range(N)]  # id in the layouts of each id within an order (-1: none yet)

    def fill(self, sentences: Sequence[str]) -> None:
        """Cook ``sentences`` into the next rows."""
        for start in range(0, len(sentences), self.BLOCK):
            self._write(sentences[start:start + self.BLOCK])

    def _ids_within(self, n: int, keys: np.ndarray) -> np.ndarray:
        """Each key's id within order ``n``; unseen keys are given the next ids."""
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
        head = np.ones(len(ranked), dtype=bool)
        head[1:] = ranked[1:] != ranked[:-1]
        distinct, inverse = ranked[head], np.empty(len(keys), dtype=np.int64)
        inverse[order] = np.cumsum(head) - 1
        known = self.keys[n]
        at = np.searchsorted(known, distinct)
        seen = np.zeros(len(distinct), dtype=bool)
        inside = at < len(known)
        seen[inside] = known[at[inside]] == distinct[inside]
        ids = np.empty(len(distinct), dtype=np.int64)
        ids[seen] = self.within[n][at[seen]]
        new = ~seen
        ids[new] = self.given[n] + np.arange(int(new.sum()))
        self.given[n] += int(new.sum())
        self.keys[n] = np.insert(known, at[new], distinct[new])
        self.within[n] = np.insert(self.within[n], at[new], ids[new])
        return ids[inverse]

    def _write(self, sentences: Sequence[str]) -> None:
        split = [s.split() for s in sentences]  # pycocoevalcap's words
        lengths = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        flat = list(chain.from_iterable(split))
        for word in dict.fromkeys(flat):  # this block's words, first seen first
            self.words.setdefault(word, len(self.words))
        word_id = np.fromiter(map(self.words.__getitem__, flat), dtype=np.int64, count=len(flat))
        sentence = np.repeat(np.arange(len(split)), lengths)
        position = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        left = lengths[sentence] - position  # words from each position to its sentence's end
        self.given[0] = len(self.words)
        cooked, within = [], word_id
        for n in range(N):
            at = np.flatnonzero(left > n)  # where an n-gram of order n + 1 starts
            if n:
                ids = np.full(len(flat), -1, dtype=np.int64)
                ids[at] = self._ids_within(n, (within[at] << 32) | word_id[at + n])
                within = ids
            s, i, p = sentence[at], within[at], position[at]
            # each sentence's n-grams, equal ones together, first occurrence first (at runs in position order)
            by = np.argsort((s << 32) | i, kind="stable")
            s, i, p = s[by], i[by], p[by]
            head = np.ones(len(s), dtype=bool)
            head[1:] = (s[1:] != s[:-1]) | (i[1:] != i[:-1])
            starts = np.flatnonzero(head)
            tf = np.diff(np.append(starts, len(s)))
            s, i, p = s[starts], i[starts], p[starts]
            by = np.argsort((s << 32) | p)  # a sentence's distinct n-grams in order of first occurrence: precook's
            cooked.append((s[by], i[by], p[by], tf[by]))
        self._give_ids(cooked)
        for n, (s, i, _, tf) in enumerate(cooked):
            count = np.bincount(s, minlength=len(split))
            rows = self.rows + s
            column = np.arange(len(s)) - np.repeat(np.cumsum(count) - count, count)  # rank within its sentence
            self.gid[n][rows, column] = self.gid_of[n][i]
            self.tf[n][rows, column] = tf
            self.width[n] = max(self.width[n], int(count.max(initial=0)))
        self.rows += len(split)

    def _give_ids(self, cooked: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Layout ids for the block's unseen n-grams, in first-seen order: sentence, order, position."""
        found = []
        for n, (s, i, p, _) in enumerate(cooked):
            grown = np.full(self.given[n], -1, dtype=np.int64)
            grown[:len(self.gid_of[n])] = self.gid_of[n]
            self.gid_of[n] = grown
            new = grown[i] < 0
            found.append((s[new], np.full(int(new.sum()), n), p[new], i[new]))
        s, n, p, i = (np.concatenate(part) for part in zip(*found))
        by = np.lexsort((p, n, s))
        n, i = n[by], i[by]
        _, first = np.unique(n * (1 << 32) + i, return_index=True)  # an n-gram's first occurrence in the block
        first.sort()
        n, i = n[first], i[first]
        if self.vocab + len(i) >= self.MOST_IDS:
            raise OverflowError(f"{self.MOST_IDS:,} distinct n-grams or more in one scoring")
        ids = self.vocab + np.arange(len(i))
        for order in range(N):
            mine = n == order
            self.gid_of[order][i[mine]] = ids[mine]
        self.vocab += len(i)

    def finish(self, pad_gid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The arrays, each cut to its widest sentence, in the narrowest exact types: a quarter of
        int64's memory, or less; ``pad_gid`` fills what no n-gram does."""
        layouts = []
        for gid, tf, width in zip(self.gid, self.tf, self.width):
            gid, tf = gid[:, :width], tf[:, :width]
            gid[gid < 0] = pad_gid
            kind = np.min_scalar_type(pad_gid)
            gid = gid.view(kind) if kind.itemsize == gid.itemsize else gid.astype(kind)
            tf = tf.astype(np.min_scalar_type(int(tf.max(initial=0))))
            layouts.append((np.ascontiguousarray(gid), np.ascontiguousarray(tf)))
        self.gid, self.tf = [], []
        return layouts


def _columns_in(ref_gid: np.ndarray, ref_tf: np.ndarray, query_gid: np.ndarray, query_tf: np.ndarray) -> np.ndarray:
    """For each query n-gram (row r, column j), its column in reference row r, or the pad
    column ``ref_gid.shape[1]`` where the reference lacks it (or the query slot is padding)."""
    rows, width = ref_gid.shape
    present = ref_tf > 0
    stride = int(max(ref_gid.max(initial=0), query_gid.max(initial=0))) + 1
    ref_gid, query_gid = ref_gid.astype(np.int64), query_gid.astype(np.int64)  # row * stride + id needs 64 bits
    keys = (np.arange(rows)[:, None] * stride + ref_gid)[present]
    column = np.broadcast_to(np.arange(width), (rows, width))[present]
    order = np.argsort(keys)
    keys, column = keys[order], column[order]
    query = np.arange(rows)[:, None] * stride + query_gid
    if not len(keys):
        return np.full(query.shape, width, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    found = (keys[at] == query) & (query_tf > 0)
    return np.where(found, column[at], width).astype(np.min_scalar_type(width))


#: pairs (or reference rows) per chunk of the array work
CHUNK = 4096


def chunks(n: int) -> list[slice]:
    return [slice(k, min(k + CHUNK, n)) for k in range(0, n, CHUNK)]


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of integers by sorting: numpy 2.4's hashing ``unique`` took 5-60x longer here."""
    out = np.sort(values)
    return out[np.concatenate([[True], out[1:] != out[:-1]])] if len(out) else out


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + k) for a, k in zip(starts, counts)])`` without the loop."""
    offsets = np.cumsum(counts) - counts
    return np.arange(int(counts.sum())) - np.repeat(offsets, counts) + np.repeat(starts, counts)


class NgramLayouts:
    """Every distinct sentence of the pairs cooked once and laid out per order; each pair's
    hypothesis and references as rows of the layouts (``hyp_sid``, ``ref_sid``, ``ref_start``)."""

    def __init__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]):
        sid: dict[str, int] = {}  # each distinct sentence's row in the layouts
        sentences: list[str] = []

        def row(sentence: str) -> int:
            k = sid.get(sentence)
            if k is None:
                k = sid[sentence] = len(sentences)
                sentences.append(sentence)
            return k

        # rows and pairs as int32 (half of int64's memory, a row per reference): fewer than 2**31 of either
        self.hyp_sid = np.fromiter(map(row, hypotheses), dtype=np.int32, count=len(hypotheses))
        self.n_refs = np.fromiter(map(len, references), dtype=np.int64, count=len(references))
        self.ref_sid = np.fromiter((row(r) for rs in references for r in rs), dtype=np.int32, count=int(self.n_refs.sum()))
        self.ref_start = np.concatenate([[0], np.cumsum(self.n_refs)])
        self.ref_pair = np.repeat(np.arange(len(references), dtype=np.int32), self.n_refs)
        sid.clear()
        self.words = np.fromiter((len(s.split()) for s in sentences), dtype=np.int64, count=len(sentences))  # BLEU's
        laid = OrderLayouts(len(sentences), int(self.words.max(initial=0)))
        laid.fill(sentences)
        self.length = np.maximum(self.words - 1, 0)  # CIDEr-D's length term: precook's count of bigrams
        self.vocab = laid.vocab
        self.layout = laid.finish(pad_gid=self.vocab)
        # a hypothesis's n-grams fill only the columns the widest hypothesis of each order fills
        hyps = sorted_distinct(self.hyp_sid)
        self.hyp_width = [int((tf[hyps] > 0).sum(axis=1).max(initial=0)) for _, tf in self.layout]
        self.columns = []
        for (g, t), width in zip(self.layout, self.hyp_width):
            parts = [_columns_in(g[self.ref_sid[c]], t[self.ref_sid[c]], g[self.hyp_sid[self.ref_pair[c]], :width],
                                 t[self.hyp_sid[self.ref_pair[c]], :width]) for c in chunks(len(self.ref_pair))]
            self.columns.append(np.concatenate(parts) if parts else np.zeros((0, width), np.uint8))

    def reference_rows(self, idx: np.ndarray) -> np.ndarray:
        """The rows of ``ref_sid`` holding the references of the pairs ``idx``, pair after pair."""
        return ranges(self.ref_start[idx], self.n_refs[idx])

    def matches(self) -> np.ndarray:
        """Per pair and order, BLEU's clipped count: each hypothesis n-gram's term frequency, at
        most its highest in any one reference (``cook_test``'s ``correct``); pairs in chunks."""
        out = np.zeros((len(self.n_refs), N), dtype=np.int64)
        for n, ((_, t), width, columns) in enumerate(zip(self.layout, self.hyp_width, self.columns)):
            held_at = np.pad(t, ((0, 0), (0, 1)))  # the last column: 0, where a reference lacks the n-gram
            for part in chunks(len(self.n_refs)):
                idx = np.arange(part.start, part.stop)
                rows = self.reference_rows(idx)
                if not len(rows):
                    continue
                held = held_at[self.ref_sid[rows][:, None], columns[rows]]
                most = np.maximum.reduceat(held, np.concatenate([[0], np.cumsum(self.n_refs[idx])[:-1]]), axis=0)
                out[idx, n] = np.minimum(t[self.hyp_sid[idx], :width], most).sum(axis=1)
        return out


def shared_layouts(shared: Optional[dict], hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> NgramLayouts:
    """The layouts of these pairs, made once per scoring: ``shared`` is the dict the scorer gives
    every metric of one scoring (``None``: made for this call alone)."""
    if shared is None:
        return NgramLayouts(hypotheses, references)
    made = shared.get("ngram_layouts")
    if made is None or made[0] is not hypotheses or made[1] is not references:
        made = shared["ngram_layouts"] = (hypotheses, references, NgramLayouts(hypotheses, references))
    return made[2]

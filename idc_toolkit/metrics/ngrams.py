"""The 1- to 4-grams of every distinct sentence of a scoring, counted once and laid out as arrays
for BLEU and CIDEr-D, which both count them as pycocoevalcap's ``precook`` does (``split()``,
each n-gram's term frequency, in first-seen order).

Per order, one padded row per distinct sentence (``gid``, ``tf``), and for every (pair,
reference) the column in the reference of each n-gram of the pair's hypothesis: BLEU's clipped
counts and CIDEr-D's dot products are array operations over them. A scoring makes them once for
both metrics (:func:`shared_layouts`).
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from typing import Optional, Sequence

import numpy as np

N = 4


def precook(sentence: str, intern: dict[tuple[str, ...], int]) -> tuple[list[list[int]], list[list[int]], int]:
    """Per n-gram order, each n-gram's id and term frequency in pycocoevalcap's insertion order,
    and the length term.

    The length is pycocoevalcap's: it adds the term frequencies of order index 1 (bigrams).
    """
    words = sentence.split()
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    for k in range(1, N + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i : i + k])] += 1
    gids: list[list[int]] = [[] for _ in range(N)]
    tfs: list[list[int]] = [[] for _ in range(N)]
    for ngram, tf in counts.items():
        gids[len(ngram) - 1].append(intern.setdefault(ngram, len(intern)))
        tfs[len(ngram) - 1].append(tf)
    return gids, tfs, sum(tfs[1])


class OrderLayouts:
    """Per n-gram order, ``(gid, tf)`` arrays of shape (sentences, widest sentence of that order):
    row = sentence, columns in insertion order; padding is the id :meth:`finish` is given (weight
    0) with tf 0. Filled a block of sentences at a time: their n-grams as Python numbers are never
    all held at once (they held several times the arrays' memory; benchmarks/README.md)."""

    BLOCK = 4096  #: sentences whose n-grams are gathered before they are written into the arrays

    def __init__(self, sentences: int, most_words: int) -> None:
        bound = [max(most_words - n, 0) for n in range(N)]  # an order's n-grams in a sentence of that many words
        # ids as int32 until the padding's id is known: fewer than 2**31 distinct n-grams (more: OverflowError)
        self.gid = [np.full((sentences, b), -1, dtype=np.int32) for b in bound]
        self.tf = [np.zeros((sentences, b), dtype=np.min_scalar_type(most_words)) for b in bound]
        self.width = [0] * N
        self.rows = 0  # sentences written
        self.pending: list[tuple[list[int], list[int], list[int]]] = [([], [], []) for _ in range(N)]

    def add(self, gids: list[list[int]], tfs: list[list[int]]) -> None:
        """The next sentence's n-grams, per order (:func:`precook`)."""
        for (g, t, counts), order_gids, order_tfs in zip(self.pending, gids, tfs):
            g += order_gids
            t += order_tfs
            counts.append(len(order_gids))
        if len(self.pending[0][2]) == self.BLOCK:
            self._write()

    def _write(self) -> None:
        for n, (g, t, counts) in enumerate(self.pending):
            c = np.array(counts, dtype=np.int64)
            if c.sum():
                rows = np.repeat(np.arange(self.rows, self.rows + len(c)), c)
                column = np.arange(len(rows)) - np.repeat(np.cumsum(c) - c, c)  # rank within its sentence
                self.gid[n][rows, column] = g
                self.tf[n][rows, column] = t
                self.width[n] = max(self.width[n], int(c.max()))
        self.rows += len(self.pending[0][2])
        self.pending = [([], [], []) for _ in range(N)]

    def finish(self, pad_gid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The arrays, each cut to its widest sentence, in the narrowest exact types: a quarter of
        int64's memory, or less; ``pad_gid`` fills what no n-gram does."""
        self._write()
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
        intern: dict[tuple[str, ...], int] = {}
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
        lengths = array("q")
        for sentence in sentences:
            gids, tfs, length = precook(sentence, intern)
            laid.add(gids, tfs)
            lengths.append(length)
        self.length = np.array(lengths, dtype=np.int64)  # CIDEr-D's length term
        self.vocab = len(intern)
        intern.clear()
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

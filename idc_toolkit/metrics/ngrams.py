"""The 1- to 4-grams of every distinct sentence of a scoring, counted once and laid out as arrays
for BLEU and CIDEr-D, which both count them as pycocoevalcap's ``precook`` does (``split()``,
each n-gram's term frequency, in first-seen order).

Per order, one row per distinct sentence (``gid``, ``tf``), held ragged (a sentence's n-grams
only) and read a chunk of rows at a time as padded arrays (:meth:`NgramLayouts.rows`); and for
every (pair, reference) the column in the reference of each n-gram of the pair's hypothesis:
BLEU's clipped counts and CIDEr-D's dot products are array operations over them. A scoring makes
them once for both metrics (:func:`shared_layouts`).
"""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple, Optional, Sequence

import numpy as np

N = 4


class Ragged(NamedTuple):
    """Rows of unequal length, each followed by one padding value: row ``k`` is
    ``values[start[k]:start[k + 1] - 1]`` of each array and its padding ``values[start[k + 1] - 1]``
    (read past a row's end, as a padded array's reader does, gives its padding: one ``minimum``
    finds it, 2.4x faster than masking with ``where``)."""

    start: np.ndarray  # one more than the rows (:func:`_starts`)
    gid: np.ndarray
    tf: np.ndarray


class OrderLayouts:
    """Per n-gram order, each sentence's row of ``(gid, tf)``: its n-grams in pycocoevalcap's
    ``precook`` order (first occurrence), ragged (:class:`Ragged`). Sentences are cooked a block
    at a time as arrays: no Python object per n-gram (one per n-gram held several times the
    layouts' memory on distinct captions; benchmarks/README.md).

    Ids: an n-gram of order n + 1 is known within its order by the key ``(id of its first n words
    within order n) << 32 | id of its last word``, kept sorted (``keys``) beside the id it was
    given (``within``); its id in the layouts (``gid``) is given in pycocoevalcap's first-seen
    order: sentence, then order, then first position."""

    BLOCK = 4096  #: sentences cooked together
    MOST_IDS = 1 << 31  #: distinct n-grams a scoring may hold: int32 ids, and keys that fit 64 bits

    def __init__(self, words: np.ndarray) -> None:
        # room for every n-gram a sentence of that many words can have, and its padding: a row is as
        # long as its sentence, not as the longest one (one 53-word caption padded 480,000 rows to its width)
        bound = [int(np.maximum(words - n, 0).sum()) + len(words) for n in range(N)]
        kind = np.min_scalar_type(int(words.max(initial=0)))
        self.gid = [np.empty(b, dtype=np.int32) for b in bound]  # ids as int32 until the padding's id is known
        self.tf = [np.empty(b, dtype=kind) for b in bound]
        self.count = [np.zeros(len(words), dtype=kind) for _ in range(N)]  # distinct n-grams per sentence
        self.filled = [0] * N  # values written per order
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
        for n, (s, i, _, tf) in enumerate(cooked):  # s, then position within s: the rows one after another
            count = np.bincount(s, minlength=len(split))
            first = self.filled[n] + np.cumsum(count + 1) - (count + 1)  # each row's first value
            at = first[s] + np.arange(len(s)) - np.repeat(np.cumsum(count) - count, count)
            self.gid[n][at], self.tf[n][at] = self.gid_of[n][i], tf
            self.gid[n][first + count], self.tf[n][first + count] = -1, 0  # the padding, its id set by finish()
            self.count[n][self.rows:self.rows + len(split)] = count
            self.filled[n] += len(s) + len(split)
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

    def finish(self, pad_gid: int) -> list[Ragged]:
        """The rows, in the narrowest exact types (a quarter of int64's memory, or less), each
        padded with id ``pad_gid`` and tf 0."""
        layouts = []
        for gid, tf, count, filled in zip(self.gid, self.tf, self.count, self.filled):
            kind = np.min_scalar_type(pad_gid)
            gid, tf = gid[:filled], tf[:filled]
            gid[gid < 0] = pad_gid
            gid = gid.view(kind) if kind.itemsize == gid.itemsize else gid.astype(kind)
            tf = tf.astype(np.min_scalar_type(int(tf.max(initial=0))))
            layouts.append(Ragged(_starts(count), gid, tf))
        self.gid, self.tf = [], []
        return layouts


#: pairs (or reference rows) per chunk of the array work
CHUNK = 4096


def _starts(counts: np.ndarray) -> np.ndarray:
    """:class:`Ragged`'s ``start`` of rows of ``counts`` values and their padding, as int32 where
    it fits with room for a start plus a row's width (:func:`_padded`): 8 bytes a row otherwise,
    13 MB of 4 orders' (pair, reference) rows at 80,000 pairs."""
    lengths = counts.astype(np.int64) + 1  # counts may be uint8: 255 n-grams and a padding are 256
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32 if lengths.sum() < 1 << 30 else np.int64)


def _padded(start: np.ndarray, rows: np.ndarray, width: Optional[int], *values: np.ndarray) -> list[np.ndarray]:
    """The ``rows`` of ragged ``values`` (:class:`Ragged`) as arrays ``width`` wide (``None``: one
    column wider than the longest of them), each row followed by its padding as far as the width goes."""
    first, padding = start[rows], start[rows + 1] - 1
    if width is None:
        width = int((padding - first).max(initial=0)) + 1
    at = first[:, None] + np.arange(width, dtype=start.dtype)
    np.minimum(at, padding[:, None], out=at)  # past a row's end: its padding
    return [v.take(at) for v in values]


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
        laid = OrderLayouts(self.words)
        laid.fill(sentences)
        self.length = np.maximum(self.words - 1, 0)  # CIDEr-D's length term: precook's count of bigrams
        self.vocab = laid.vocab  # also the padding's id
        self.layout = laid.finish(pad_gid=self.vocab)
        self.columns = [self._columns(n) for n in range(N)]
        # the longest sentence of each pair's hypothesis and references: the width its rows are read at
        self.pair_words = self.words[self.hyp_sid]
        has = self.n_refs > 0
        if has.any():
            self.pair_words[has] = np.maximum(self.pair_words[has],
                                              np.maximum.reduceat(self.words[self.ref_sid], self.ref_start[:-1][has]))

    def pair_chunks(self, idx: np.ndarray) -> list[np.ndarray]:
        """Positions in ``idx`` cut into chunks for the padded array work: pairs of like width
        together (their longest sentence at most 16, 32, 64, ... words; in their order within a
        class), ``CHUNK`` pairs of the first class a chunk and half as many for each next one. A
        100-word answer then widens the rows of a few pairs, not of 4,096 (benchmarks/README.md)."""
        width_class = np.searchsorted(16 << np.arange(48, dtype=np.int64), self.pair_words[idx])
        order = np.argsort(width_class, kind="stable")
        bounds = np.searchsorted(width_class[order], np.arange(int(width_class.max(initial=0)) + 2))
        return [order[at:min(at + max(CHUNK >> k, 1), int(bounds[k + 1]))] for k in range(len(bounds) - 1)
                for at in range(int(bounds[k]), int(bounds[k + 1]), max(CHUNK >> k, 1))]

    def _columns(self, n: int) -> Ragged:
        """Per (pair, reference) row, for each n-gram of order ``n`` of the pair's hypothesis, its
        column in the reference, or the reference's length where the reference lacks it: the
        column of its padding (``gid``; ``tf`` unused). Each row's padding is that length too."""
        hyp = self.hyp_sid[self.ref_pair]
        counts = self.counts(n, hyp)
        start = _starts(counts)
        widest = int(np.diff(self.layout[n].start).max(initial=1)) - 1
        out = np.empty(int(start[-1]), dtype=np.min_scalar_type(widest))
        out[start[1:] - 1] = self.counts(n, self.ref_sid)
        stride = self.vocab + 1
        for c in chunks(len(self.ref_pair)):
            # a reference row's n-grams as (row, id) keys, sorted, beside their columns
            ref_counts = self.counts(n, self.ref_sid[c])
            owner, ids = self.entries(n, self.ref_sid[c])
            keys = owner * stride + ids
            order = np.argsort(keys)
            keys, column = keys[order], ranges(np.zeros(len(ref_counts), np.int64), ref_counts)[order]
            owner, ids = self.entries(n, hyp[c])
            query, found = owner * stride + ids, ref_counts[owner]
            if len(keys):
                at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
                found = np.where(keys[at] == query, column[at], found)
            out[ranges(start[c.start:c.stop], counts[c])] = found
        return Ragged(start, out, np.zeros(0, np.uint8))

    def counts(self, n: int, sids: np.ndarray) -> np.ndarray:
        """The number of distinct n-grams of order ``n`` of each sentence ``sids``."""
        start = self.layout[n].start
        return start[sids + 1] - start[sids] - 1

    def entries(self, n: int, sids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The n-grams of order ``n`` of the rows ``sids``, row after row: each one's row (its
        index in ``sids``) and id."""
        start, gid, _ = self.layout[n]
        counts = self.counts(n, sids)
        return np.repeat(np.arange(len(sids)), counts), gid[ranges(start[sids], counts)]

    def rows(self, n: int, sids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``sids`` of order ``n`` as padded ``(gid, tf)`` arrays, one column wider than
        the longest of them: padding has the id ``vocab`` and tf 0, and a row's length is the
        column of its first padding."""
        start, gid, tf = self.layout[n]
        return _padded(start, sids, None, gid, tf)

    def column_rows(self, n: int, rows: np.ndarray, width: int) -> np.ndarray:
        """:meth:`_columns` of the reference rows ``rows`` as a padded array ``width`` wide (at
        least their hypotheses' n-grams), padded with each reference's length."""
        return _padded(self.columns[n].start, rows, width, self.columns[n].gid)[0]

    def reference_rows(self, idx: np.ndarray) -> np.ndarray:
        """The rows of ``ref_sid`` holding the references of the pairs ``idx``, pair after pair."""
        return ranges(self.ref_start[idx], self.n_refs[idx])

    def matches(self) -> np.ndarray:
        """Per pair and order, BLEU's clipped count: each hypothesis n-gram's term frequency, at
        most its highest in any one reference (``cook_test``'s ``correct``); pairs in chunks."""
        out = np.zeros((len(self.n_refs), N), dtype=np.int64)
        for idx in self.pair_chunks(np.arange(len(self.n_refs))):  # the chunks, their rows and offsets: one for all orders
            rows = self.reference_rows(idx)
            if not len(rows):
                continue
            firsts = np.concatenate([[0], np.cumsum(self.n_refs[idx])[:-1]])
            for n in range(N):
                start, _, tf = self.layout[n]
                hyp_tf = _padded(start, self.hyp_sid[idx], None, tf)[0]  # the tf alone: BLEU reads no id
                # each hypothesis n-gram's tf in each reference, read from the reference's row (0: its padding)
                held = tf[start[self.ref_sid[rows]][:, None] + self.column_rows(n, rows, hyp_tf.shape[1])]
                most = np.maximum.reduceat(held, firsts, axis=0)
                out[idx, n] = np.minimum(hyp_tf, most).sum(axis=1)
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

"""METEOR 1.5's sufficient statistics: their layout, how METEOR sums them, how it scores them.

METEOR's JVM aligns a segment into one statistics line (``SCORE``); the score of a segment, a
group or a bootstrap resample is arithmetic on such lines. :func:`meteor_score` is that
arithmetic, operation for operation as ``MeteorScorer.computeMetrics`` of meteor-1.5.jar does
it (read from its bytecode) with the parameters of ``-l en -norm`` (task ``rank``), so it
equals METEOR's own ``EVAL`` bit for bit (tests: every segment, group and resample compared).
Every step is an IEEE ``+ - * /`` (the same bits on every CPU and SIMD width) but the
fragmentation penalty's ``Math.pow``, which :func:`~.java_pow.java_pow_array` replays as
OpenJDK's x86-64 stub computes it (numpy's ``power`` rounds differently on AVX-512 machines,
and neither it nor libm's ``pow`` is Java's).
Why not ask the JVM: its ``EVAL`` parses every number with ``java.util.Scanner``, 1.5-1.9 s for
8,000 segments in a fresh JVM, on the critical path after the last alignment; numpy takes 2 ms,
and a rerun whose statistics are all cached needs no JVM at all.
"""

from __future__ import annotations

#: statistics line layout (``MeteorStats(String)``): test length, reference length, test /
#: reference function words, then per matcher stage (exact, stem, synonym, paraphrase) test
#: content, reference content, test function, reference function matches; then chunks, test
#: word matches, reference word matches
TEST_LEN, REF_LEN, TEST_FUNCTION, REF_FUNCTION = 0, 1, 2, 3
STAGES = 4
CHUNKS, TEST_WORD_MATCHES, REF_WORD_MATCHES = 20, 21, 22
TEST_MATCH_COLS = [4 + 4 * s + k for s in range(STAGES) for k in (0, 2)]
REF_MATCH_COLS = [4 + 4 * s + k for s in range(STAGES) for k in (1, 3)]

#: ``Constants.getParameters(en, rank)`` and ``getModuleWeights(en, rank)`` of meteor-1.5.jar
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
STAGE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)


def perfect_segments(stats):
    """Rows whose every test and reference word is matched, in one chunk: ``computeMetrics``
    gives them no fragmentation and ``addStats`` adds no chunk for them. The match counts are
    whole numbers, so their sums are exact in any order."""
    return ((stats[:, TEST_MATCH_COLS].sum(axis=1) == stats[:, TEST_LEN])
            & (stats[:, REF_MATCH_COLS].sum(axis=1) == stats[:, REF_LEN])
            & (stats[:, CHUNKS] == 1))


def added_rows(stats):
    """The rows as ``addStats`` adds them, as floats: a perfectly matched segment's chunk is 0."""
    import numpy as np

    adjusted = np.asarray(stats).astype(float)
    adjusted[perfect_segments(adjusted), CHUNKS] = 0.0
    return adjusted


def aggregate_statistics(stats, weights=None, rows=None):
    """Sum statistics the way METEOR's ``MeteorStats.addStats`` does, so that scoring the sum
    equals METEOR's corpus score of the segments (each counted ``weights[i]`` times).

    Every field is summed, except that a perfectly matched segment (all words of test and
    reference matched in one chunk) contributes no chunk: METEOR 1.5 skips its chunk count.
    ``weights`` may be a vector (one sum) or a matrix (one sum per row, for bootstrap); ``rows``:
    the rows summed (all of them by default). The fields are whole counts, so every sum is exact
    in any order: without weights, the rows are summed a block at a time (no copy of a group).
    """
    import numpy as np

    from .ngrams import chunks

    stats = np.asarray(stats)  # any exact type (the scorer keeps counts as uint16): floats a block at a time
    if weights is not None:
        return np.asarray(weights, dtype=float) @ added_rows(stats[rows] if rows is not None else stats)
    picked = np.arange(len(stats)) if rows is None else np.asarray(rows, dtype=np.int64)
    total = np.zeros(stats.shape[-1])
    for block in chunks(len(picked)):
        part = stats[picked[block]].astype(float)
        total += part.sum(axis=0)
        total[CHUNKS] -= part[perfect_segments(part), CHUNKS].sum()
    return total


def meteor_score(stats):
    """METEOR's score of each statistics row (a segment, or a sum from :func:`aggregate_statistics`).

    The order of every floating-point operation is ``computeMetrics``'s: weighted matches add
    the content matches of the four stages, then their function-word matches; an undefined
    score (no words, no matches) is 0, as METEOR's ``NaN`` check makes it.
    """
    import numpy as np

    from .java_pow import java_pow_array
    from .ngrams import CHUNK, chunks

    s = np.atleast_2d(np.asarray(stats))
    if len(s) > CHUNK:  # each row's arithmetic is its own: a block's temporaries at a time
        return np.concatenate([meteor_score(s[block]) for block in chunks(len(s))])
    s = s.astype(float)
    test_weighted = np.zeros(len(s))
    ref_weighted = np.zeros(len(s))
    for k, factor in ((0, DELTA), (2, 1.0 - DELTA)):
        for stage in range(STAGES):
            test_weighted = test_weighted + s[:, 4 + 4 * stage + k] * STAGE_WEIGHTS[stage] * factor
        for stage in range(STAGES):
            ref_weighted = ref_weighted + s[:, 5 + 4 * stage + k] * STAGE_WEIGHTS[stage] * factor
    test_length = DELTA * (s[:, TEST_LEN] - s[:, TEST_FUNCTION]) + (1.0 - DELTA) * s[:, TEST_FUNCTION]
    ref_length = DELTA * (s[:, REF_LEN] - s[:, REF_FUNCTION]) + (1.0 - DELTA) * s[:, REF_FUNCTION]
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = test_weighted / test_length
        recall = ref_weighted / ref_length
        f_mean = 1.0 / ((1.0 - ALPHA) / precision + ALPHA / recall)
        fragmentation = np.where(perfect_segments(s), 0.0, s[:, CHUNKS] / ((s[:, TEST_WORD_MATCHES] + s[:, REF_WORD_MATCHES]) / 2.0))
        score = f_mean * (1.0 - GAMMA * java_pow_array(fragmentation, BETA))
    return np.where(np.isnan(score), 0.0, np.maximum(score, 0.0))


def stats_line(row) -> str:
    """A statistics line for METEOR's own ``EVAL`` (the reference :func:`meteor_score` is tested
    against): METEOR scores it as the corpus of the segments summed into it."""
    return " ".join(repr(float(v)) for v in row)


def score_line(hypothesis: str, references) -> str:
    """The ``SCORE`` line pycocoevalcap's ``Meteor._stat`` sends, byte for byte (a segment's key)."""
    hypothesis = hypothesis.replace("|||", "").replace("  ", " ")
    return " ||| ".join(("SCORE", " ||| ".join(references), hypothesis))

"""The functional core: score hypotheses against references for several groups in one pass.

Per-group semantics are the field's (RobustChangeCaptioning, SCORER, DIRL, BLIP2IDC): each
group is scored as its own coco-caption evaluation over that group's pairs only. BLEU and
METEOR are corpus totals over the group, CIDEr's document frequencies come from the group's
references, ROUGE-L and SPICE are means over the group. One pass means: every caption is
tokenized once (one JVM), one METEOR JVM aligns every pair once, and each group is then
aggregated from the shared per-pair results, giving the numbers separate pycocoevalcap runs
would give.
"""

from __future__ import annotations

import threading
from array import array
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .base import Metric, OnSubset
from .registry import columns, metric_class, resolve_families
from .results import GroupScores, PairCache, ScoreResult
from .text import sanitize_caption
from .tokenizer import ptb_tokenize_blocks
from .views import Slices



def build_cache(
    hypotheses: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    families: Sequence[str],
    spice_jars: Optional[str] = None,
    tokenize: Optional[Callable[[list[str]], list[str]]] = None,
    on_computed: Optional[Callable[[Metric], None]] = None,
    extra: Sequence[Metric] = (),
) -> PairCache:
    """Tokenize once (coco-caption's PTB tokenizer unless ``tokenize`` is given: a protocol's
    own) and compute every metric's per-pair results (background metrics, i.e. METEOR's JVM,
    run in a thread beside the others). ``on_computed(metric)`` runs as soon as one metric's
    results are ready, in the thread that computed them: :func:`score_groups` scores the groups
    of BLEU, ROUGE-L and CIDEr while METEOR still aligns. ``extra``: metrics made by the caller
    (the judge's, whose per-pair values come from a model run), after the registry's. The
    caller closes the cache.

    The registry's metrics score the pairs that have references; a pair whose list is empty (a
    multiple-choice item with no caption) takes no part in them (:class:`~.base.OnSubset`), and
    ``cache.captioned`` lists the pairs that do. With no family, nothing is tokenized."""
    ids = list(references)
    captioned: Sequence[int] = [k for k, i in enumerate(ids) if len(references[i])]
    if len(captioned) == len(ids):
        captioned = range(len(ids))  # every pair: a range, not an int object per pair
    if families and not captioned:
        from ..errors import EvaluationError

        raise EvaluationError(f"no pair has a reference: nothing for {', '.join(families)} to score")
    metrics: dict[str, Metric] = {f: metric_class(f)(spice_jars=spice_jars) for f in families}  # the metric options
    shared: dict = {}  # what they make once for all of them (n-gram layouts), let go once they have computed
    for m in metrics.values():
        m.shared = shared
    if len(captioned) < len(ids):
        metrics = {f: OnSubset(m, captioned, len(ids)) for f, m in metrics.items()}
    metrics.update({m.family: m for m in extra})
    cache = PairCache(ids=ids, hypotheses=[], references=[], metrics=metrics, captioned=captioned)
    scored = [ids[k] for k in captioned]
    try:
        for m in metrics.values():
            m.start(len(captioned))
        flat_refs = [sanitize_caption(r) for i in scored for r in references[i]]
        hyps_raw = [sanitize_caption(hypotheses[i]) for i in scored]
        if not families:
            ref_tokens, cache.hypotheses = flat_refs, hyps_raw
        elif tokenize is None:  # references and hypotheses each as pycocoevalcap tokenizes them, in one JVM
            ref_tokens, cache.hypotheses = ptb_tokenize_blocks([flat_refs, hyps_raw])
        else:
            tokens = tokenize(flat_refs + hyps_raw)
            ref_tokens, cache.hypotheses = tokens[:len(flat_refs)], tokens[len(flat_refs):]
            del tokens
        cache.references = Slices(ref_tokens, [len(references[i]) for i in scored])
        del scored, flat_refs, hyps_raw, ref_tokens  # a slot per caption each, while the metrics compute
        for m in metrics.values():
            if m.background:
                # before the others hold the interpreter: a JVM's cut table is written here
                m.prepare(cache.hypotheses, cache.references)
        errors: list[BaseException] = []

        def run(metric: Metric) -> None:
            try:
                metric.compute(cache.hypotheses, cache.references)
                if on_computed is not None:
                    on_computed(metric)
            except BaseException as exc:  # re-raised in the calling thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in metrics.values() if m.background]
        for t in threads:
            t.start()
        for m in metrics.values():
            if not m.background:
                m.compute(cache.hypotheses, cache.references)
                if on_computed is not None:
                    on_computed(m)
        shared.clear()  # the n-gram layouts: each metric that reads them again holds its own reference
        for m in metrics.values():
            if m.background and not errors:
                m.assist()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return cache
    except BaseException:
        cache.close()
        raise


def score_groups(
    hypotheses: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    groups: Optional[Mapping[str, Sequence[str]]] = None,
    metrics: Optional[Sequence[str]] = None,
    spice_jars: Optional[str] = None,
    bootstrap: int = 0,
    seed: int = 0,
    progress: Optional[Callable[[str], None]] = None,
    tokenize: Optional[Callable[[list[str]], list[str]]] = None,
    extra: Sequence[Metric] = (),
    scorer: Optional[str] = None,
) -> ScoreResult:
    """Score every group of pairs as its own coco-caption evaluation, in one pass.

    ``references`` fixes the pair order (``overall`` is all of it); ``groups`` maps a group
    name to pair ids. Hypotheses must cover every reference id (the CLI checks and explains).
    Returns the group scores on pycocoevalcap's 0-1 scale (CIDEr 0-10), per-pair scores of
    the ``overall`` evaluation and, with ``bootstrap`` > 0, 95% percentile intervals. A pair
    with no reference takes no part in the registry's metrics (:func:`build_cache`); ``metrics``
    naming none of them (``[]``, ``["MC"]``) scores only ``extra``. ``scorer``: ``python`` or
    ``java`` (:mod:`.implementation`; default ``IDC_SCORER``, else Python), recorded in the result.
    Each metric's per-pair intermediate results are released once its answers are in (kept for the
    resamples where ``bootstrap`` > 0): ask :func:`build_cache` for a cache that answers more.
    """
    from .implementation import JAVA, current, using

    with using(scorer):
        implementation = current()
    families = resolve_families(metrics) if metrics is None or len(metrics) else ()
    say = progress or (lambda line: None)
    n_refs = sum(len(r) for r in references.values())
    n_captioned = sum(1 for r in references.values() if r)
    if families:
        say(f"tokenizing {n_captioned + n_refs:,} captions; {', '.join(families)} on {n_captioned:,} pairs"
            + (f" (of {len(references):,}; the others have no reference)" if n_captioned < len(references) else "")
            + (" (the jars' JVMs)" if implementation == JAVA else ""))
    for family in families:
        for note in metric_class(family).notes():
            say(note)
    position = {pid: k for k, pid in enumerate(references)}  # the cache's pair order
    # 8 bytes a member, not an int object per pair, while the metrics compute
    group_indices: dict[str, Sequence[int]] = {"overall": range(len(position))}
    for gname, gids in (groups or {}).items():
        group_indices[gname] = array("q", map(position.__getitem__, gids))
    del position  # a dict entry per pair, not needed while the metrics compute
    scored = {g: idx for g, idx in group_indices.items() if idx}  # an empty group has no score, not 0
    by_metric: dict[str, tuple[dict, dict]] = {}

    def aggregate(metric: Metric) -> None:  # each metric's groups, as soon as its pairs are scored
        by_metric[metric.family] = (metric.scores(scored), metric.per_pair())
        if not bootstrap:  # nothing more is asked of it: its per-pair data goes before the others finish
            metric.release()

    with using(implementation):
        cache = build_cache(hypotheses, references, families, spice_jars, tokenize, on_computed=aggregate, extra=extra)
    cache.release_tokens()
    try:
        scores: dict[str, dict[str, Optional[float]]] = {g: {} for g in group_indices}
        per_pair: dict[str, np.ndarray] = {}
        for family in cache.metrics:  # in the registry's order, whichever finished first
            group_values, pair_values = by_metric[family]
            for gname, values in group_values.items():
                scores[gname].update(values)
            per_pair.update(pair_values)
        every_column = (*columns(families), *(c for m in extra for c in m.columns))
        for gname in group_indices:
            if gname not in scored:
                scores[gname] = {k: None for k in every_column}
        say(f"scored {len(group_indices)} group(s)")
        results = {g: GroupScores(g, len(idx), scores[g]) for g, idx in group_indices.items()}
        statuses = {f: m.status for f, m in cache.metrics.items() if m.optional}  # why an optional one gave nothing
        result = ScoreResult(cache.ids, results, per_pair, every_column, statuses, cache, group_indices,
                             scorer=implementation)
        if bootstrap > 0:
            from .bootstrap import bootstrap_intervals

            say(f"bootstrap: {bootstrap:,} resamples x {len(group_indices)} group(s)")
            result.ci = bootstrap_intervals(result, bootstrap, seed)
        return result
    finally:
        cache.close()

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
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np

from ..errors import EvaluationError
from .bleu import BleuCache
from .cider import CiderCache
from .tokenizer import ptb_tokenize
from .meteor import MeteorProcess, aggregate_statistics, stats_line
from .rouge import rouge_scores
from .spice import run_spice, spice_jar_dir
from .text import sanitize_caption

METRICS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr", "SPICE")
#: the names ``--metrics`` accepts, and the columns each produces
FAMILIES = {
    "BLEU": ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"),
    "METEOR": ("METEOR",),
    "ROUGE_L": ("ROUGE_L",),
    "CIDEr": ("CIDEr",),
    "SPICE": ("SPICE",),
}
DEFAULT_FAMILIES = ("BLEU", "METEOR", "ROUGE_L", "CIDEr", "SPICE")


@dataclass
class GroupScores:
    name: str
    n: int
    scores: dict[str, Optional[float]]


@dataclass
class PairCache:
    """Per-pair intermediate results shared by every group (and by bootstrap resampling)."""

    ids: list[str]
    hypotheses: list[str]  # tokenized
    references: list[list[str]]  # tokenized
    bleu: Optional[BleuCache] = None
    meteor_lines: Optional[list[str]] = None  # METEOR's statistics line per pair
    meteor_stats: Optional[np.ndarray] = None  # the same, parsed: pairs x statistics
    rouge: Optional[np.ndarray] = None
    cider: Optional[CiderCache] = None
    spice: Optional[np.ndarray] = None


@dataclass
class ScoreResult:
    ids: list[str]
    groups: dict[str, GroupScores]
    per_pair: dict[str, np.ndarray]
    metrics: tuple[str, ...]
    spice_status: str
    cache: PairCache
    group_indices: dict[str, list[int]]
    ci: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)


def resolve_families(names: Optional[Sequence[str]]) -> tuple[str, ...]:
    if not names:
        return DEFAULT_FAMILIES
    out = []
    for name in names:
        key = {"bleu": "BLEU", "meteor": "METEOR", "rouge": "ROUGE_L", "rouge_l": "ROUGE_L", "cider": "CIDEr", "spice": "SPICE"}.get(
            name.lower()
        )
        if key is None:
            raise EvaluationError(f"unknown metric {name!r}; choose from BLEU, METEOR, ROUGE_L, CIDEr, SPICE")
        out.append(key)
    return tuple(dict.fromkeys(out))


def build_cache(
    hypotheses: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    families: Sequence[str],
    spice_jars: Optional[str] = None,
) -> tuple[PairCache, Optional[MeteorProcess], str]:
    """Tokenize once, start METEOR, compute every per-pair intermediate result."""
    ids = list(references)
    meteor = MeteorProcess() if "METEOR" in families else None  # loads while we tokenize
    try:
        flat_refs = [sanitize_caption(r) for i in ids for r in references[i]]
        hyps_raw = [sanitize_caption(hypotheses[i]) for i in ids]
        tokens = ptb_tokenize(flat_refs + hyps_raw)
        tok_hyps = tokens[len(flat_refs) :]
        tok_refs: list[list[str]] = []
        pos = 0
        for i in ids:
            k = len(references[i])
            tok_refs.append(tokens[pos : pos + k])
            pos += k
        cache = PairCache(ids=ids, hypotheses=tok_hyps, references=tok_refs)

        stats_box: dict[str, object] = {}
        worker = None
        if meteor is not None:
            def _stats() -> None:
                try:
                    stats_box["stats"] = meteor.statistics(tok_hyps, tok_refs)
                except BaseException as exc:  # re-raised in the main thread
                    stats_box["error"] = exc

            worker = threading.Thread(target=_stats, daemon=True)
            worker.start()
        if "BLEU" in families:
            cache.bleu = BleuCache(tok_hyps, tok_refs)
        if "ROUGE_L" in families:
            cache.rouge = rouge_scores(tok_hyps, tok_refs)
        if "CIDEr" in families:
            cache.cider = CiderCache(tok_hyps, tok_refs)
        spice_status = "not requested"
        if "SPICE" in families:
            outcome = run_spice(tok_hyps, tok_refs, spice_jar_dir(spice_jars))
            cache.spice, spice_status = outcome.scores, outcome.status
        if worker is not None:
            worker.join()
            if "error" in stats_box:
                raise stats_box["error"]  # type: ignore[misc]
            cache.meteor_lines = list(stats_box["stats"])  # type: ignore[call-overload]
            cache.meteor_stats = np.array([[float(x) for x in s.split()] for s in cache.meteor_lines])
        return cache, meteor, spice_status
    except BaseException:
        if meteor is not None:
            meteor.close()
        raise


def score_groups(
    hypotheses: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    groups: Optional[Mapping[str, Sequence[str]]] = None,
    metrics: Optional[Sequence[str]] = None,
    spice_jars: Optional[str] = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> ScoreResult:
    """Score every group of pairs as its own coco-caption evaluation, in one pass.

    ``references`` fixes the pair order (``overall`` is all of it); ``groups`` maps a group
    name to pair ids. Hypotheses must cover every reference id (the CLI checks and explains).
    Returns the group scores on pycocoevalcap's 0-1 scale (CIDEr 0-10), per-pair scores of
    the ``overall`` evaluation and, with ``bootstrap`` > 0, 95% percentile intervals.
    """
    families = resolve_families(metrics)
    names = tuple(m for f in families for m in FAMILIES[f])
    cache, meteor, spice_status = build_cache(hypotheses, references, families, spice_jars)
    try:
        position = {pid: k for k, pid in enumerate(cache.ids)}
        group_indices = {"overall": list(range(len(cache.ids)))}
        for gname, gids in (groups or {}).items():
            group_indices[gname] = [position[g] for g in gids]
        results: dict[str, GroupScores] = {}
        per_pair: dict[str, np.ndarray] = {}
        meteor_scores: dict[str, float] = {}
        if meteor is not None:
            assert cache.meteor_lines is not None and cache.meteor_stats is not None
            overall, segments = meteor.evaluate(cache.meteor_lines)
            per_pair["METEOR"] = np.array(segments)
            # other groups: one aggregated statistics line each (METEOR's corpus score is a
            # function of the aggregated statistics), all groups in a single EVAL
            others = [g for g in group_indices if g != "overall" and group_indices[g]]
            summed = [stats_line(aggregate_statistics(cache.meteor_stats[group_indices[g]])) for g in others]
            _, values = meteor.evaluate(summed) if summed else (0.0, [])
            meteor_scores = {"overall": overall, **dict(zip(others, values))}
        for gname, idx in group_indices.items():
            scores: dict[str, Optional[float]] = {}
            if cache.bleu is not None:
                bleu, bleu_pairs = cache.bleu.score(idx)
                scores.update({f"Bleu_{k + 1}": bleu[k] for k in range(4)})
                if gname == "overall":
                    per_pair.update({f"Bleu_{k + 1}": np.array(bleu_pairs[k]) for k in range(4)})
            if meteor is not None:
                scores["METEOR"] = float(meteor_scores.get(gname, 0.0))
            if cache.rouge is not None:
                scores["ROUGE_L"] = float(np.mean(cache.rouge[idx])) if idx else 0.0
                if gname == "overall":
                    per_pair["ROUGE_L"] = cache.rouge
            if cache.cider is not None:
                cider, cider_pairs = cache.cider.score(idx)
                scores["CIDEr"] = cider
                if gname == "overall":
                    per_pair["CIDEr"] = cider_pairs
            if "SPICE" in families:
                scores["SPICE"] = float(np.nanmean(cache.spice[idx])) if cache.spice is not None and idx else None
                if gname == "overall" and cache.spice is not None:
                    per_pair["SPICE"] = cache.spice
            results[gname] = GroupScores(gname, len(idx), scores)
        result = ScoreResult(cache.ids, results, per_pair, names, spice_status, cache, group_indices)
        if bootstrap > 0:
            from .bootstrap import bootstrap_intervals

            result.ci = bootstrap_intervals(result, meteor, bootstrap, seed)
        return result
    finally:
        if meteor is not None:
            meteor.close()

"""``idc-precompute entities``: ``entities``, ``entity_scores`` and ``gt_entities`` columns.

See :mod:`idc_toolkit.entities` for the phrase and retrieval strategies. The vocabulary is
built from the source's TRAIN split and written to ``OUT/entities_vocab.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pyarrow.parquet as pq

from .changemask import MaskParams, compute_change_mask
from .entities import (DEFAULT_SPACY, PHRASE_STRATEGIES, RETRIEVAL_STRATEGIES, ClipScorer, build_vocabulary, decode,
                       extract_phrases, load_spacy, masked, retrieve, write_vocabulary)
from .errors import IDCError
from .precompute import PassResult, pass_section, run_pass
from .schema import ENTITY_FEATURES
from .writer import split_shards


def split_captions(dataset: Path, split: str) -> list[str]:
    shards = split_shards(dataset, split)
    if not shards:
        raise IDCError(f"{dataset}: no {split!r} split to build the entity vocabulary from (use --vocab-split)")
    return [c for f in shards for caps in pq.read_table(f, columns=["captions"]).column("captions").to_pylist() for c in caps if c.strip()]


class EntityBatch:
    def __init__(self, nlp, scorer: ClipScorer, strategy: str, phrases: str, top_k: int, mask_params: MaskParams):
        self.nlp, self.scorer, self.strategy, self.phrases, self.k, self.mask_params = nlp, scorer, strategy, phrases, top_k, mask_params

    def _mask(self, row: dict[str, Any], before, after) -> Optional[np.ndarray]:
        if self.strategy != "davir":
            return None
        cell = row.get("change_mask")
        if cell and cell.get("bytes"):
            return np.asarray(decode(cell).convert("L")) > 127
        return compute_change_mask(before, after, self.mask_params).mask

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        befores, afters = [], []
        for row in rows:
            before, after = decode(row["before"]).convert("RGB"), decode(row["after"]).convert("RGB")
            mask = self._mask(row, before, after)
            befores.append(masked(before, mask))
            afters.append(masked(after, mask))
        s_before = self.scorer.similarities(befores)
        s_after = self.scorer.similarities(afters)
        out = []
        for row, sb, sa in zip(rows, s_before, s_after):
            picked = retrieve(sb, sa, self.strategy, self.k)
            refs = [c for c in row["captions"] if c.strip()]
            gt: dict[str, int] = {}
            for doc in self.nlp.pipe(refs):
                for p in extract_phrases(doc, self.phrases):
                    gt[p] = gt.get(p, 0) + 1
            out.append({
                "entities": [self.scorer.phrases[i] for i, _ in picked],
                "entity_scores": [s for _, s in picked],
                "gt_entities": [p for p, _ in sorted(gt.items(), key=lambda kv: -kv[1])],
            })
        return out


def add_change_entities(
    dataset: Path | str,
    out: Path | str,
    clip_model: str,
    clip_checkpoint: Optional[str] = None,
    clip_config: Optional[str] = None,
    strategy: str = "davir",
    phrases: str = "davir",
    top_k: int = 5,
    min_count: int = 1,
    vocab_split: str = "train",
    spacy_model: str = DEFAULT_SPACY,
    device: str = "auto",
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
    mask_params: MaskParams = MaskParams(),
) -> PassResult:
    if strategy not in RETRIEVAL_STRATEGIES:
        raise IDCError(f"unknown --strategy {strategy!r}; choose {', '.join(RETRIEVAL_STRATEGIES)}")
    if phrases not in PHRASE_STRATEGIES:
        raise IDCError(f"unknown --phrases {phrases!r}; choose {', '.join(PHRASE_STRATEGIES)}")
    from .sam_refine import resolve_device

    dataset, out = Path(dataset), Path(out)
    nlp = load_spacy(spacy_model)
    vocab = build_vocabulary(nlp, split_captions(dataset, vocab_split), phrases, min_count)
    if not vocab:
        raise IDCError(f"no phrase found in the {vocab_split!r} captions with --phrases {phrases}")
    scorer = ClipScorer(clip_model, clip_checkpoint, [p for p, _ in vocab], resolve_device(device), clip_config)
    weights = Path(clip_checkpoint).name if clip_checkpoint else "none: RANDOM weights, the retrieved entities are meaningless"
    if scorer.random_weights:
        print("warning: no --clip-checkpoint: open_clip runs with random weights; entities will be meaningless")
    out.mkdir(parents=True, exist_ok=True)
    meta = {"phrase_strategy": phrases, "spacy_model": nlp.meta.get("idc_loaded_as", spacy_model),
            "spacy_version": nlp.meta.get("version"), "split": vocab_split, "min_count": min_count}
    write_vocabulary(out / "entities_vocab.json", vocab, meta)
    section = pass_section(
        "Change entities (idc-precompute entities)",
        [
            "Columns `entities` (top-k vocabulary phrases retrieved from the images), `entity_scores` and "
            "`gt_entities` (the phrases of the pair's own references). The vocabulary, with frequencies, is "
            "`entities_vocab.json`.",
            "",
            f"Phrases: `{phrases}` strategy with spaCy `{meta['spacy_model']}` {meta['spacy_version']}. Retrieval: "
            f"`{strategy}` strategy with open_clip `{clip_model}` (weights: {weights}).",
        ],
        {"strategy": strategy, "phrases": phrases, "top_k": top_k, "min_count": min_count, "vocab_split": vocab_split,
         "clip_model": clip_model, "clip_checkpoint": Path(clip_checkpoint).name if clip_checkpoint else None,
         "clip_random_weights": scorer.random_weights, "vocabulary_size": len(vocab)},
    )
    return run_pass(dataset, out, ENTITY_FEATURES, EntityBatch(nlp, scorer, strategy, phrases, top_k, mask_params),
                    section, shard=shard, progress=progress, batched=True)

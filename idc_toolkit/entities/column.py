"""``idc-precompute entities``: ``entities``, ``entity_scores`` and ``gt_entities`` columns;
with ``--phrases rdd`` also ``noun_texts`` and ``verb_texts`` (ACR's two texts per reference).

See :mod:`.phrases` (spaCy phrase strategies) and :mod:`.retrieval` (open_clip retrieval).
The vocabulary is built from the source's TRAIN split (``--vocab-split``) and written to
``OUT/entities_vocab.json``; the pass itself runs on the run engine (:mod:`idc_toolkit.runs`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..cards import pass_section
from ..errors import IDCError
from ..stores import input_folder
from ..masks.diff import compute_change_mask
from ..masks.params import MaskParams
from ..options import taken, with_fields
from ..runs import ColumnPass, PassResult, path_content, run_column_pass
from ..runs.columns import inputs, run_args
from ..runs.fingerprint import recorded
from ..runs.rows import decode_image, iter_rows, open_split
from ..schema import ENTITY_FEATURES, RDD_FEATURES
from .phrases import build_vocabulary, extract_phrases, load_spacy, rdd_texts
from .params import EntitiesArgs, EntityParams
from .retrieval import ClipScorer, soft_masked, retrieve, vocabulary_json

log = logging.getLogger(__name__)


def split_captions(dataset: str | Path, split: str) -> list[str]:
    """Every non-empty reference of a split (the vocabulary's source)."""
    from ..runs.rows import ParquetRows, local_split_files

    files = local_split_files(dataset, split)
    source = ParquetRows(files, columns=["captions"]) if files else open_split(dataset, split)[0]
    return [c for row in iter_rows(source, 1024) for c in row["captions"] if c.strip()]


class EntityColumns:
    """The pass's per-batch function; spaCy and open_clip load in :meth:`setup`, once per
    process or Ray actor."""

    def __init__(self, vocabulary: list[str], clip_model: str, clip_checkpoint: Optional[str], clip_config: Optional[str],
                 strategy: str, phrases: str, top_k: int, spacy_model: str, mask_params: MaskParams,
                 cheer_score: str = "signed"):
        self.vocabulary, self.clip, self.cheer_score = vocabulary, (clip_model, clip_checkpoint, clip_config), cheer_score
        self.strategy, self.phrases, self.k, self.spacy_model, self.mask_params = strategy, phrases, top_k, spacy_model, mask_params
        self.nlp = self.scorer = None

    def setup(self, device: str) -> None:
        if self.scorer is None:
            self.nlp = load_spacy(self.spacy_model)
            model, checkpoint, config = self.clip
            self.scorer = ClipScorer(model, checkpoint, self.vocabulary, device, config)

    def _mask(self, row: dict[str, Any], before, after) -> Optional[np.ndarray]:
        if self.strategy != "davir":
            return None
        cell = row.get("change_mask")
        if cell and cell.get("bytes"):
            return np.asarray(decode_image(cell).convert("L")) > 127
        return compute_change_mask(before, after, self.mask_params).mask

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.scorer is None:
            self.setup("cpu")
        befores, afters = [], []
        for row in rows:
            before, after = decode_image(row["before"]).convert("RGB"), decode_image(row["after"]).convert("RGB")
            mask = self._mask(row, before, after)
            befores.append(soft_masked(before, mask, self.scorer.grid))
            afters.append(soft_masked(after, mask, self.scorer.grid))
        s_before = self.scorer.similarities(befores)
        s_after = self.scorer.similarities(afters)
        out = []
        for row, sb, sa in zip(rows, s_before, s_after):
            picked = retrieve(sb, sa, self.strategy, self.k, self.cheer_score)
            gt: dict[str, int] = {}
            docs = list(self.nlp.pipe(row["captions"]))  # every reference, so texts align with captions
            for doc, ref in zip(docs, row["captions"]):
                if ref.strip():
                    for p in extract_phrases(doc, self.phrases):
                        gt[p] = gt.get(p, 0) + 1
            cells = {
                "entities": [self.scorer.phrases[i] for i, _ in picked],
                "entity_scores": [s for _, s in picked],
                "gt_entities": [p for p, _ in sorted(gt.items(), key=lambda kv: -kv[1])],
            }
            if self.phrases == "rdd":
                texts = [rdd_texts(doc) for doc in docs]
                cells["noun_texts"] = [n for n, _ in texts]
                cells["verb_texts"] = [v for _, v in texts]
            out.append(cells)
        return out


def add_change_entities(dataset: Optional[Path | str] = None, out: Optional[Path | str] = None,
                        params: Optional[EntityParams] = None, args: Optional[EntitiesArgs] = None,
                        **fields: Any) -> PassResult:
    """Add ``entities``, ``entity_scores`` and ``gt_entities`` to every split of ``dataset``.
    ``params``: the method's :class:`~.params.EntityParams`; ``args``: the run's
    :class:`~.params.EntitiesArgs` (``dataset`` and ``out`` are its fields too). ``fields`` set
    either's fields by name (``clip_model=``, ``mask_params=``, ``device=``, ``rows_per_part=``, ...;
    ``engine=`` also takes an :class:`~idc_toolkit.runs.EngineArgs`).

    Defaults follow the papers: 3 entities (CHEER uses 3), CHEER's signed score, CLIP ViT-L/14
    (pass its weights as ``clip_checkpoint``). Without weights the retrieved entities would be
    meaningless: that is refused unless ``random_weights`` says it is meant (tests, the demo)."""
    p = with_fields(EntityParams, params, **taken(fields, EntityParams))
    a = run_args(EntitiesArgs, args, **fields, **inputs(dataset, out))
    clip_model, clip_checkpoint, clip_config = p.clip_model, p.clip_checkpoint, p.clip_config
    strategy, phrases, top_k, cheer_score = p.strategy, p.phrases, p.top_k, p.cheer_score
    min_count, vocab_split, spacy_model, mask_params = p.min_count, p.vocab_split, p.spacy_model, p.mask_params
    if clip_checkpoint and not Path(clip_checkpoint).is_file():
        raise IDCError(f"CLIP checkpoint not found: {clip_checkpoint}")
    if clip_checkpoint is None and not p.random_weights:
        raise IDCError("no --clip-checkpoint: CLIP with random weights retrieves meaningless entities; pass the "
                       f"{clip_model} weights file, or --random-weights to run anyway (a pipeline check)")
    from ..devices import resolve_device

    nlp = load_spacy(spacy_model)
    dataset = input_folder(str(a.dataset), IDCError, a.progress)  # a store's dataset: its local copy
    vocab = build_vocabulary(nlp, split_captions(dataset, vocab_split), phrases, min_count)
    if not vocab:
        raise IDCError(f"no phrase found in the {vocab_split!r} captions with --phrases {phrases}")
    weights = Path(clip_checkpoint).name if clip_checkpoint else "none: RANDOM weights, the retrieved entities are meaningless"
    if clip_checkpoint is None:
        log.warning("no --clip-checkpoint: open_clip runs with random weights; entities will be meaningless")
    meta = {"phrase_strategy": phrases, "spacy_model": nlp.meta.get("idc_loaded_as", spacy_model),
            "spacy_version": nlp.meta.get("version"), "split": vocab_split, "min_count": min_count}
    # the card's parameters; the run's fingerprint adds recorded(a) beneath them
    chosen = recorded(p)
    run_params = {**chosen, "cheer_score": cheer_score if strategy == "cheer" else None,
                  "clip_checkpoint_sha256": path_content(clip_checkpoint), "clip_random_weights": clip_checkpoint is None,
                  "vocabulary_size": len(vocab), "spacy_model": meta["spacy_model"], "spacy_version": meta["spacy_version"],
                  "mask_params": chosen["mask_params"] if strategy == "davir" else None}
    section = pass_section(
        "Change entities (idc-precompute entities)",
        [
            "Columns `entities` (top-k vocabulary phrases retrieved from the images), `entity_scores` and "
            "`gt_entities` (the phrases of the pair's own references). The vocabulary, with frequencies, is "
            "`entities_vocab.json`.",
            "",
            f"Phrases: `{phrases}` strategy with spaCy `{meta['spacy_model']}` {meta['spacy_version']}. Retrieval: "
            f"`{strategy}` strategy with open_clip `{clip_model}` (weights: {weights}).",
            *([""] + ["Columns `noun_texts` and `verb_texts`: per reference (in the order of `captions`), its noun "
                      "phrases and its verb phrases (adjectives and adverbs kept, verbs as written) joined by \"and\", "
                      "RDD+ACR §3.3's two texts."] if phrases == "rdd" else []),
            "",
            "Paper settings: CHEER's 3 entities and signed S_bef - S_aft (eq. 1), DAVIR's soft mask M̂ (eq. 6) on "
            "both images before CLIP (eq. 8), CLIP ViT-L/14. Our choices: the prompt `a photo of {phrase}.`, "
            "retrieval on the full images when a pair's change mask is empty (DAVIR does not say), the vocabulary "
            "from the train split with `min_count`, and the phrase normalisation (lower case, leading "
            "determiners dropped).",
        ],
        run_params,
    )
    compute = EntityColumns([p for p, _ in vocab], clip_model, clip_checkpoint, clip_config, strategy, phrases, top_k,
                            spacy_model, mask_params, cheer_score)
    features = {**ENTITY_FEATURES, **RDD_FEATURES} if phrases == "rdd" else ENTITY_FEATURES
    spec = ColumnPass("entities", compute, features, run_params, section, {"entities_vocab.json": vocabulary_json(vocab, meta)},
                      {"entities_strategy": strategy, "entities_phrases": phrases})
    return run_column_pass(dataset, a.out, spec, a, device=resolve_device(a.device) if a.engine == "local" else a.device)

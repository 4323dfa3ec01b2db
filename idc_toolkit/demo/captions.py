"""Synthetic caption sets with categories, for scorer tests and the scoring benchmark.

Shaped like CLEVR-Change evaluation data: half no-change pairs, half spread over five change
types, several template references per pair, predictions that are right about 70% of the time,
with the punctuation, case and contractions the PTB tokenizer must handle.
"""

from __future__ import annotations

import numpy as np

from ..schema import CLEVR_CATEGORIES as CATEGORIES
from .generator import CHANGE_TEMPLATES, COLORS, MATERIALS, NO_CHANGE_TEMPLATES, SHAPE_WORDS, SIZES


def _fill(template: str, rng: np.random.Generator) -> str:
    colors = list(COLORS)
    old, new = rng.choice(colors, 2, replace=False)
    words = {
        "shape": rng.choice(list(SHAPE_WORDS.values())), "color": rng.choice(colors), "material": rng.choice(MATERIALS),
        "size": rng.choice(list(SIZES)), "old_color": old, "new_color": new, "old_material": "rubber", "new_material": "metal",
    }
    return template.format(**{k: str(v) for k, v in words.items()})


def synthetic_caption_set(n_pairs: int, n_refs: int = 5, seed: int = 0):
    """Return ``(hypotheses, references, categories)`` dicts keyed by pair id."""
    rng = np.random.default_rng(seed)
    hyps: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    cats: dict[str, str] = {}
    for i in range(n_pairs):
        pid = f"{i:06d}"
        cat = "distractor" if i % 2 else CATEGORIES[(i // 2) % 5]
        pool = NO_CHANGE_TEMPLATES if cat == "distractor" else CHANGE_TEMPLATES[cat]
        refs[pid] = [_fill(str(rng.choice(pool)), rng) for _ in range(n_refs)]
        if rng.random() < 0.7:
            hyp = _fill(str(rng.choice(pool)), rng)
        else:
            other = CATEGORIES[int(rng.integers(0, 6))]
            hyp = _fill(str(rng.choice(NO_CHANGE_TEMPLATES if other == "distractor" else CHANGE_TEMPLATES[other])), rng)
        decoration = rng.integers(0, 4)
        if decoration == 1:
            hyp = hyp.capitalize() + "."
        elif decoration == 2:
            hyp = hyp.replace("is ", "isn't ", 1) + "!"
        hyps[pid] = hyp
        cats[pid] = cat
    return hyps, refs, cats

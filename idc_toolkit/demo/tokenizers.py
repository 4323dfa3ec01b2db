"""The demo bases' tokenizers: word-level, over the demo's vocabulary, configured as the real
checkpoints' are: OPT-style for BLIP-2 (``</s>`` prepended as BOS, pad id 1, right padding),
Vicuna-style for InstructBLIP (``<s>`` BOS, no EOS added, no pad token, left padding). The bases
that read them are :mod:`idc_toolkit.demo.models`.
"""

from __future__ import annotations

import re
from typing import Iterable

SPECIALS_OPT = ["<s>", "<pad>", "</s>", "<unk>"]
SPECIALS_LLAMA = ["<unk>", "<s>", "</s>"]


def words_of(texts: Iterable[str]) -> list[str]:
    """Every word and punctuation mark, in first-seen order (the tokenizer's vocabulary)."""
    seen: dict[str, None] = {}
    for text in texts:
        for w in re.findall(r"\w+|[^\w\s]", text):
            seen.setdefault(w, None)
    return list(seen)


def demo_vocabulary() -> list[str]:
    """Every word a demo caption or DAVIR's prompt can hold (the generator's templates filled with
    every value), in a fixed order."""
    from ..models.davir import PROMPT
    from .generator import CHANGE_TEMPLATES, COLORS, MATERIALS, NO_CHANGE_TEMPLATES, SHAPE_WORDS, SIZES

    fillers = [*COLORS, *MATERIALS, *SIZES, *SHAPE_WORDS.values()]
    texts = [re.sub(r"\{\w+\}", " ", t) for ts in CHANGE_TEMPLATES.values() for t in ts]
    return words_of([*texts, *NO_CHANGE_TEMPLATES, " ".join(fillers), f"{PROMPT} Entity:"])


def word_tokenizer(words: list[str], style: str):
    """A word-level fast tokenizer in the real checkpoints' configuration (module docstring)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = SPECIALS_OPT if style == "opt" else SPECIALS_LLAMA
    vocab = {w: i for i, w in enumerate(dict.fromkeys([*specials, *words]))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces, punctuation without
    bos = "</s>" if style == "opt" else "<s>"
    tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A $B",
                                                      special_tokens=[(bos, vocab[bos])])
    if style == "opt":
        return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="</s>", eos_token="</s>", pad_token="<pad>",
                                       unk_token="<unk>", padding_side="right")
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   padding_side="left")

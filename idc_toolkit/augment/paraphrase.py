"""Paraphrased references for edited pairs (the Syned recipe): LLM output, cleaned.

The released Syned references show what raw LLM output looks like: literal quotes around
the sentence, numbering, "Sure! Here is a variation:" preambles, empty strings, copies of
the instruction. :func:`clean_candidates` turns raw generations into usable references
and says why every rejected candidate was rejected; :class:`Paraphraser` asks a chat model
(via its chat template, with BLIP2IDC's prompt) until it has the requested number or its
tries run out, and reports the shortfall.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ..text import strip_surrounding_quotes

SYSTEM_PROMPT = (
    "your goal is to write a variation of the user prompt while keeping the meaning of the instruction. "
    "Keep the format of a neutral instruction for a diffusion model. Be concise. Stay really close to the "
    "instruction I give you. Do not include any additional information other than the expected output. "
    "The expected format is: {variation}"
)
USER_PROMPT = "INSTRUCTION : {instruction}"

_NUMBERING = re.compile(r"^\s*(?:\(?\d{1,2}\s*[.):]|[-*\u2022])\s*")
_LABEL = re.compile(r"^\s*(?:variation|instruction|output|answer|paraphrase)\s*\d*\s*:\s*", re.I)
_PREAMBLE = re.compile(r"^(?:sure|here|certainly|of course|okay|ok|absolutely)\b", re.I)
QUOTE_CHARS = "\"\u201c\u201d'`"

#: paraphrase sampling: our choice (Syned does not give it), written into the augmented card
TOP_P, TEMPERATURE = 0.9, 0.8


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@dataclass
class Cleaned:
    kept: list[str] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)


def clean_candidates(raw: Sequence[str], source: str, already: Sequence[str] = (), max_words: Optional[int] = None,
                     min_words: int = 2) -> Cleaned:
    """Usable paraphrases of ``source`` from raw generations (one candidate per line).

    Rules: special tokens and surrounding whitespace removed; numbering ("1.", "2)", "-") and
    labels ("Variation:") stripped; preamble lines ("Sure! Here is ...") rejected; surrounding
    quotes stripped; then rejected if empty, shorter than ``min_words`` or longer than
    ``max_words`` (default: twice the source's words plus 8), a copy of the source, or a
    duplicate (case and punctuation ignored) of a kept or earlier paraphrase."""
    out = Cleaned()
    limit = max_words if max_words is not None else 2 * len(source.split()) + 8
    seen = {_key(source)} | {_key(a) for a in already}
    for text in raw:
        text = re.sub(r"</?s>|<\|[a-z_]+\|>", " ", text)
        for line in text.splitlines() or [""]:
            cand = _LABEL.sub("", _NUMBERING.sub("", line.strip()))
            if _PREAMBLE.match(cand) and (cand.rstrip().endswith(":") or "variation" in cand.lower()):
                out.rejected["preamble"] += 1
                continue
            cand = strip_surrounding_quotes(cand, QUOTE_CHARS, allow_empty=False)
            key = _key(cand)
            n = len(cand.split())
            if not key:
                out.rejected["empty"] += 1
            elif key == _key(source):
                out.rejected["copy of the source"] += 1
            elif key in seen:
                out.rejected["duplicate"] += 1
            elif n < min_words or n > limit:
                out.rejected["length out of range"] += 1
            else:
                seen.add(key)
                out.kept.append(cand)
    return out


GenerateFn = Callable[[str, int, int], list[str]]  # (instruction, how many, seed) -> raw texts


class Paraphraser:
    """A transformers chat model behind :func:`clean_candidates`, retrying up to ``tries``."""

    def __init__(self, model_path: str, device: str = "cpu", max_new_tokens: int = 48, generate: Optional[GenerateFn] = None):
        self.name = model_path
        self.max_new_tokens = max_new_tokens
        if generate is not None:
            self._generate = generate
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        if self.tokenizer.chat_template is None:
            from ..errors import IDCError

            raise IDCError(f"paraphraser {model_path}: its tokenizer has no chat template")
        self.model = AutoModelForCausalLM.from_pretrained(model_path).to(device).eval()
        self.device = device
        self.torch = torch
        self._generate = self._chat_generate

    def _chat_generate(self, instruction: str, n: int, seed: int) -> list[str]:
        msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": USER_PROMPT.format(instruction=instruction)}]
        ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        ids = {k: v.to(self.device) for k, v in ids.items()}
        self.torch.manual_seed(seed)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self.torch.no_grad():
            out = self.model.generate(**ids, do_sample=True, top_p=TOP_P, temperature=TEMPERATURE, num_return_sequences=n,
                                      max_new_tokens=self.max_new_tokens, pad_token_id=pad)
        return self.tokenizer.batch_decode(out[:, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    def paraphrase(self, instruction: str, n: int, seed: int, tries: int = 3) -> tuple[list[str], Counter]:
        kept: list[str] = []
        rejected: Counter = Counter()
        for attempt in range(tries):
            if len(kept) >= n:
                break
            cleaned = clean_candidates(self._generate(instruction, n - len(kept), seed + attempt), instruction, kept)
            kept += cleaned.kept[: n - len(kept)]
            rejected.update(cleaned.rejected)
        return kept, rejected

"""Who answers the judge's yes / no questions: a model loaded here through transformers, or an
OpenAI-compatible endpoint (:mod:`.endpoint`). Both are deterministic: greedy decoding, fixed prompts."""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import EvaluationError
from .answers import NO as NO_ANSWER, YES as YES_ANSWER

YES = ("yes", "Yes", "YES")
NO = ("no", "No", "NO")


def answer_token_ids(tokenizer) -> tuple[list[int], list[int]]:
    """The first tokens a reply of "yes" and of "no" can start with (with and without a leading
    space); a token both could start with (a byte-level tokenizer's space) decides nothing and
    is left out."""
    def first(words: Sequence[str]) -> set[int]:
        ids = set()
        for w in words:
            for text in (w, " " + w):
                enc = tokenizer(text, add_special_tokens=False)["input_ids"]
                if enc:
                    ids.add(enc[0])
        return ids

    yes, no = first(YES), first(NO)
    shared = yes & no
    yes, no = sorted(yes - shared), sorted(no - shared)
    if not yes or not no:
        raise EvaluationError("the judge's tokenizer cannot tell 'yes' from 'no' by their first token")
    return yes, no


class LocalJudge:
    """A causal or chat LM: each prompt (in its chat template where it has one) is read in one
    forward pass and answered yes when the likeliest "yes" token outscores the likeliest "no"
    token at the reply's first position (greedy decoding restricted to the two answers; a tie is no)."""

    def __init__(self, model: str, revision: Optional[str] = None, dtype: str = "auto", device: str = "cpu",
                 batch_size: int = 16):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..devices import load_weights, resolve_dtype

        self.device, self.batch_size = device, batch_size
        torch_dtype = resolve_dtype(dtype, device)
        self.dtype = str(torch_dtype).removeprefix("torch.")
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.model = load_weights(AutoModelForCausalLM, model, "--judge", revision=revision, dtype=torch_dtype)
        self.model.to(device).eval()
        self.yes, self.no = answer_token_ids(self.tokenizer)

    def text(self, prompt: str) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                      add_generation_prompt=True)
        return prompt + "\nAnswer:"

    def margins(self, prompts: Sequence[str]) -> list[float]:
        """Best "yes" logit minus best "no" logit of each prompt (> 0: yes)."""
        import torch

        texts = [self.text(p) for p in prompts]
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))  # like lengths share a batch: less padding
        out: list[float] = [0.0] * len(texts)
        for b0 in range(0, len(order), self.batch_size):
            chunk = order[b0: b0 + self.batch_size]
            enc = self.tokenizer([texts[k] for k in chunk], return_tensors="pt", padding=True,
                                 add_special_tokens=not getattr(self.tokenizer, "chat_template", None)).to(self.device)
            # positions counted from each prompt's first real token: a left-padded prompt reads as it does alone
            positions = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode():
                logits = self.model(**enc, position_ids=positions).logits[:, -1].float()
            margin = logits[:, self.yes].max(-1).values - logits[:, self.no].max(-1).values
            for k, m in zip(chunk, margin.tolist()):
                out[k] = m
        return out

    def answer(self, prompts: Sequence[str]) -> list[str]:
        return [YES_ANSWER if m > 0 else NO_ANSWER for m in self.margins(prompts)]

    def close(self) -> None:
        pass


def make_judge(args, device: str):
    """The backend :class:`~.args.JudgeArgs` names."""
    if args.judge_endpoint:
        from .endpoint import EndpointJudge

        return EndpointJudge(args.judge, args.judge_endpoint, args.judge_batch_size, max_tokens=args.judge_max_tokens,
                             retries=args.judge_retries)
    return LocalJudge(args.judge, args.judge_revision, args.judge_dtype, device, args.judge_batch_size)

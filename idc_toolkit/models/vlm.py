"""Any transformers image-text-to-text model, zero-shot: ``idc-eval --model vlm --base-model ID``.

What change-captioning papers report for general multi-image vision-language models (Qwen2-VL /
Qwen2.5-VL, LLaVA-OneVision, Idefics3 / SmolVLM, ...), run the way such models are meant to be
run: ``AutoProcessor`` + ``AutoModelForImageTextToText``; the before and after images as two
images of one user turn, in that order, followed by the prompt, rendered with the model's own
chat template; greedy decoding of ``--max-new-tokens`` with left padding (the batch decodes what
one pair at a time decodes); bf16 on a GPU. A model that takes one image gets the stacked pair
(BLIP2IDC's layout: before above after) with ``--single-image``.

The prompt is a preset per dataset style (:data:`PROMPTS`: scene change, image edit, remote
sensing), chosen from the dataset card's facts (a dataset without them needs
``--prompt-preset`` or ``--prompt``), or ``--prompt`` / ``--prompt-file``. The answer is
cleaned to one caption by :func:`clean_answer` (its rule, :data:`ANSWER_RULE`, is stored in
``model.json`` with the prompt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from ..checks import positive_int
from ..errors import IDCError
from ..facts import DatasetFacts
from ..options import add_options, check_fields, option
from ..prompts import ANSWER_RULE, PROMPTS, STACKED_PROMPTS, clean_answer, preset_for
from ..devices import load_weights, resolve_dtype
from .base import Runner

MAX_NEW_TOKENS = 40


@dataclass
class Options:
    """The VLM runner's options besides the prompt (``--prompt`` / ``--prompt-file`` / ``--prompt-preset``)."""

    single_image: bool = option(False, "the model takes one image: show it the stacked pair (before above after)")
    max_new_tokens: int = option(MAX_NEW_TOKENS, "greedy decoding length", check=positive_int)

    def __post_init__(self) -> None:
        check_fields(self)


#: the image and video placeholders of the chat models' templates (Qwen2-VL's <|vision_start|>, <|image_pad|>,
#: LLaVA's <image>, Idefics3's <fake_token_around_image>, <global-img>, <row_1_col_1>, Gemma 3's <start_of_image>)
VISION_TOKENS = re.compile(r"<\|[A-Za-z0-9_]+\|>|</?(?:image|video|img|global-img|fake_token_around_image|image_soft_token|"
                           r"start_of_image|end_of_image)>|<row_\d+_col_\d+>", re.IGNORECASE)


def check_prompt(option: str, text: Any, special: Iterable[str] = ()) -> str:
    """A prompt the chat template can place after the two images: not empty, and free of vision
    placeholders and of the model's own special tokens (``special``), which would make the processor
    count more images than the pair has or read the text as markup."""
    if not isinstance(text, str) or not text.strip():
        raise IDCError(f"{option}: the prompt is empty; give an instruction, or leave {option} out for the dataset's preset")
    found = [t for t in special if t and t in text]
    match = VISION_TOKENS.search(text)
    token = found[0] if found else match.group(0) if match else None
    if token:
        raise IDCError(f"{option}: holds {token!r}, a vision or special token of the model (the chat template places "
                       "the two images itself); write the instruction as plain text")
    return text


def read_prompt_file(path: str) -> str:
    """``--prompt-file``: its text is the prompt (read when the options are parsed, so the run's
    fingerprint holds the prompt itself, not a path whose content may change)."""
    from ..files import read_text

    text = read_text(path, IDCError, "prompt file").strip()
    if not text:
        raise IDCError(f"{path}: the prompt file is empty")
    return check_prompt(f"--prompt-file {path}", text)


def special_tokens(processor) -> list[str]:
    """The processor's image / video tokens and its tokenizer's special tokens, which no prompt may hold."""
    tokenizer = getattr(processor, "tokenizer", None)
    named = [getattr(processor, name, None) for name in ("image_token", "video_token", "boi_token", "eoi_token",
                                                         "fake_image_token", "global_image_token")]
    added = [t.content for t in getattr(tokenizer, "added_tokens_decoder", {}).values() if getattr(t, "special", False)]
    return [t for t in dict.fromkeys([*named, *added, *getattr(tokenizer, "all_special_tokens", [])]) if isinstance(t, str) and t]


class VlmInputs:
    """The chat-formatted pair and greedy decoding of one processor."""

    def __init__(self, processor, prompt: str, single_image: bool, max_new_tokens: int = MAX_NEW_TOKENS):
        self.processor, self.prompt, self.single_image, self.max_new_tokens = processor, prompt, single_image, max_new_tokens
        tokenizer = processor.tokenizer
        tokenizer.padding_side = "left"  # decoder-only generation: the answer starts where every prompt ends
        if tokenizer.pad_token is None:  # Llama-family chat tokenizers ship without one; padding is masked anyway
            tokenizer.pad_token = tokenizer.eos_token

    def messages(self) -> list[dict[str, Any]]:
        images = [{"type": "image"}] * (1 if self.single_image else 2)
        return [{"role": "user", "content": [*images, {"type": "text", "text": self.prompt}]}]

    def text(self) -> str:
        return self.processor.apply_chat_template(self.messages(), add_generation_prompt=True, tokenize=False)

    def images(self, row: dict[str, Any]) -> list:
        before, after = row["before"].convert("RGB"), row["after"].convert("RGB")
        if self.single_image:
            from .pairs import stacked_pair

            return [stacked_pair(before, after)]
        return [before, after]

    def build(self, rows: list[dict[str, Any]]):
        """The processor's batch for ``rows`` (left-padded)."""
        text = self.text()
        return self.processor(text=[text] * len(rows), images=[self.images(r) for r in rows], padding=True, return_tensors="pt")

    def answers(self, model, rows: list[dict[str, Any]]) -> list[str]:
        """The model's raw answers (the generated tokens only, special tokens skipped)."""
        import torch

        batch = self.build(rows).to(model.device)
        floating = {k: v.to(model.dtype) for k, v in batch.items() if torch.is_tensor(v) and v.is_floating_point()}
        with torch.inference_mode():
            out = model.generate(**{**batch, **floating}, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        return self.processor.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)

    def decode(self, model, rows: list[dict[str, Any]]) -> list[str]:
        return [clean_answer(a) for a in self.answers(model, rows)]


class VlmRunner(Runner):
    name = "vlm"
    transformers_checkpoint = True
    summary = "any transformers image-text-to-text model, zero-shot (Qwen2-VL, LLaVA-OneVision, Idefics3, ...)"

    @classmethod
    def add_arguments(cls, group) -> None:
        from ..checks import arg_type

        prompt = group.add_mutually_exclusive_group()
        prompt.add_argument("--prompt", type=arg_type(check_prompt, "--prompt"),
                            help="vlm: the instruction after the two images (default: the dataset style's preset)")
        prompt.add_argument("--prompt-file", dest="prompt", type=_prompt_file_type, metavar="FILE",
                            help="vlm: read the instruction from FILE")
        prompt.add_argument("--prompt-preset", choices=sorted(PROMPTS),
                            help="vlm: a preset instead of the one the dataset card's facts call for")
        add_options(group, Options, ("single_image", "max_new_tokens"), "vlm: ")

    @classmethod
    def resolve_prompt(cls, facts: DatasetFacts, prompt: Optional[str], prompt_preset: Optional[str], single_image: bool,
                       where: str) -> str:
        if prompt is not None:
            return check_prompt("--prompt", prompt)
        preset = prompt_preset or preset_for(facts)
        if preset is None:
            raise IDCError(f"{where}: its card records no pair style, which decides the prompt; pass --prompt-preset "
                           f"{'|'.join(sorted(PROMPTS))} or --prompt")
        return (STACKED_PROMPTS if single_image else PROMPTS)[preset]

    @classmethod
    def check_dataset(cls, columns, facts, options, where) -> None:
        super().check_dataset(columns, facts, options, where)
        Options(**{k: options[k] for k in ("single_image", "max_new_tokens") if k in options})
        cls.resolve_prompt(facts, options.get("prompt"), options.get("prompt_preset"), bool(options.get("single_image")), where)

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                 revision: Optional[str] = None, prompt: Optional[str] = None, prompt_preset: Optional[str] = None,
                 single_image: bool = False, max_new_tokens: int = MAX_NEW_TOKENS, **_: Any):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        kwargs = {"revision": revision} if revision else {}
        self.dtype = resolve_dtype(dtype, device)
        processor = AutoProcessor.from_pretrained(base_model, **kwargs)
        if getattr(processor, "tokenizer", None) is None or getattr(processor, "chat_template", None) is None:
            raise IDCError(f"{base_model}: its processor has no tokenizer or no chat template; --model vlm runs chat models")
        text = self.resolve_prompt(facts, prompt, prompt_preset, single_image, base_model)
        check_prompt("--prompt", text, special_tokens(processor))  # before the weights load
        model = load_weights(AutoModelForImageTextToText, base_model, dtype=self.dtype, **kwargs)
        if adapter:
            from .adapters import apply_adapter

            model = apply_adapter(model, adapter, base_model)
        self.model = model.to(device).eval()
        self.inputs = VlmInputs(processor, text, single_image, max_new_tokens)

    @classmethod
    def description(cls, base_model, adapter, device, dtype, facts, revision=None, prompt: Optional[str] = None,
                    prompt_preset: Optional[str] = None, single_image: bool = False, max_new_tokens: int = MAX_NEW_TOKENS,
                    **_: Any) -> dict[str, Any]:
        return {**super().description(base_model, adapter, device, dtype, facts, revision),
                "preprocess": "stacked pair, one image (--single-image)" if single_image
                else "two images in one user turn: before, then after",
                "prompt": cls.resolve_prompt(facts, prompt, prompt_preset, single_image, base_model),
                "chat_template": "the model's own (apply_chat_template, generation prompt added)",
                "generation": f"greedy, max_new_tokens={max_new_tokens}, left padding",
                "answer_cleaning": ANSWER_RULE}

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        return self.inputs.decode(self.model, rows)


def _prompt_file_type(path: str) -> str:
    import argparse

    try:
        return read_prompt_file(path)
    except IDCError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RUNNER = VlmRunner

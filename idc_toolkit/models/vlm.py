"""Any transformers image-text-to-text model, zero-shot: ``idc-eval --model vlm --base-model ID``.

What change-captioning papers report for general multi-image vision-language models (Qwen2-VL /
Qwen2.5-VL, LLaVA-OneVision, Idefics3 / SmolVLM, ...), run the way such models are meant to be
run: ``AutoProcessor`` + ``AutoModelForImageTextToText``; the before and after images as two
images of one user turn, in that order, followed by the prompt, rendered with the model's own
chat template; greedy decoding of ``--max-new-tokens`` with left padding (the batch decodes what
one pair at a time decodes); bf16 on a GPU. ``--presentation`` shows the pair another way
(:mod:`idc_toolkit.presentation`: side by side, stacked, a labelled grid, an overlay, with the
difference image); a model that takes one image gets the stacked pair (BLIP2IDC's layout:
before above after) with ``--single-image``, as ``--presentation stacked``. The presentation is
recorded in ``model.json`` and the run's fingerprint.

The prompt is a preset per dataset style (:data:`PROMPTS`: scene change, image edit, remote
sensing; each presentation has its own, describing its layout), chosen from the dataset card's
facts (a dataset without them needs ``--prompt-preset`` or ``--prompt``), or ``--prompt`` / ``--prompt-file``. The answer is
cleaned to one caption by :func:`clean_answer` (its rule, :data:`ANSWER_RULE`, is stored in
``model.json`` with the prompt). A dataset whose items ask multiple-choice questions is asked
them instead, unless a prompt is given: each its question with its lettered choices
(:mod:`idc_toolkit.multiple_choice`), the raw answer kept for the scorer to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

from ..checks import positive_int
from ..errors import IDCError
from ..facts import DatasetFacts
from ..options import add_options, check_fields, option
from ..presentation import DEFAULT_PRESENTATION, PRESENTATIONS, get_presentation, presentation_help
from ..prompts import ANSWER_RULE, PROMPTS, STACKED_PROMPTS, clean_answer, preset_for  # noqa: F401 (the presets, as before)
from ..devices import load_weights, resolve_dtype
from ..multiple_choice import COLUMNS as QUESTION_COLUMNS, CHOICE_ORDER_RULE, QUESTION, asks, fingerprint_fields
from .base import Runner

MAX_NEW_TOKENS = 40


@dataclass
class Options:
    """The VLM runner's options, one object from the command line or Python to the runner
    (``--prompt-file`` fills ``prompt`` with its file's text)."""

    prompt: Optional[str] = option(None, "the instruction after the pair's images (default: the preset of the dataset's "
                                         "style for the presentation)", check=lambda flag, text: check_prompt(flag, text))
    prompt_preset: Optional[str] = option(None, "a preset instead of the one the dataset card's facts call for",
                                          choices=tuple(sorted(PROMPTS)))
    presentation: str = option(DEFAULT_PRESENTATION, presentation_help, choices=tuple(PRESENTATIONS))
    single_image: bool = option(False, "the model takes one image: show it the stacked pair (before above after), "
                                       "as --presentation stacked does")
    max_new_tokens: int = option(MAX_NEW_TOKENS, "greedy decoding length", check=positive_int)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.single_image and get_presentation(self.presentation).images > 1:
            self.presentation = "stacked"  # what --single-image has always shown
        self.single_image = get_presentation(self.presentation).images == 1  # what the model is shown, one or two images


#: the options the command line adds to ``--prompt``'s mutually exclusive group (with ``--prompt-file``), and after it
PROMPT_OPTIONS = ("prompt", "prompt_preset")
RUNNER_OPTIONS = ("presentation", "single_image", "max_new_tokens")


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

    #: ask a row that holds a multiple-choice question that question (:meth:`question`) and keep
    #: its raw answer, which the scorer reads (:mod:`idc_toolkit.multiple_choice`)
    questions = False

    def __init__(self, processor, prompt: str, single_image: bool = False, max_new_tokens: Optional[int] = None,
                 presentation: Optional[str] = None):
        #: how the pair is shown (``None``: the two images, or the stacked pair for ``single_image``)
        self.presentation = get_presentation(presentation or ("stacked" if single_image else DEFAULT_PRESENTATION))
        self.single_image = self.presentation.images == 1
        self.processor, self.prompt = processor, prompt
        self.max_new_tokens = Options.max_new_tokens if max_new_tokens is None else max_new_tokens
        tokenizer = processor.tokenizer
        tokenizer.padding_side = "left"  # decoder-only generation: the answer starts where every prompt ends
        if tokenizer.pad_token is None:  # Llama-family chat tokenizers ship without one; padding is masked anyway
            tokenizer.pad_token = tokenizer.eos_token

    def messages(self, prompt: Optional[str] = None) -> list[dict[str, Any]]:
        images = [{"type": "image"}] * (1 if self.single_image else 2)
        return [{"role": "user", "content": [*images, {"type": "text", "text": prompt or self.prompt}]}]

    def text(self, prompt: Optional[str] = None) -> str:
        return self.processor.apply_chat_template(self.messages(prompt), add_generation_prompt=True, tokenize=False)

    def asks(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` is asked its multiple-choice question rather than the prompt."""
        return self.questions and asks(row.get(QUESTION))

    def question(self, row: dict[str, Any]) -> str:
        """The row's question with its lettered choices (:func:`idc_toolkit.multiple_choice.prompt`)."""
        from ..multiple_choice import item_of_row, prompt

        try:
            it = item_of_row(row)
        except ValueError as exc:
            raise IDCError(str(exc)) from None
        return check_prompt(f"pair {it.pair_id!r}: its question", prompt(it, one_image=self.single_image))

    def images(self, row: dict[str, Any]) -> list:
        """The pair's images as its presentation shows them (:mod:`idc_toolkit.presentation`)."""
        return self.presentation(row["before"], row["after"])

    def build(self, rows: list[dict[str, Any]]):
        """The processor's batch for ``rows`` (left-padded)."""
        text = self.text()
        texts = [self.text(self.question(r)) if self.asks(r) else text for r in rows]
        return self.processor(text=texts, images=[self.images(r) for r in rows], padding=True, return_tensors="pt")

    def answers(self, model, rows: list[dict[str, Any]]) -> list[str]:
        """The model's raw answers (the generated tokens only, special tokens skipped)."""
        import torch

        batch = self.build(rows).to(model.device)
        floating = {k: v.to(model.dtype) for k, v in batch.items() if torch.is_tensor(v) and v.is_floating_point()}
        with torch.inference_mode():
            out = model.generate(**{**batch, **floating}, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        return self.processor.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)

    def decode(self, model, rows: list[dict[str, Any]]) -> list[str]:
        """One caption per row (:func:`clean_answer`); the raw answer where the row was asked its question."""
        return [a if self.asks(r) else clean_answer(a) for a, r in zip(self.answers(model, rows), rows)]


class VlmRunner(Runner):
    name = "vlm"
    transformers_checkpoint = True
    summary = "any transformers image-text-to-text model, zero-shot (Qwen2-VL, LLaVA-OneVision, Idefics3, ...)"
    Options = Options

    @classmethod
    def add_arguments(cls, group) -> None:
        prompt = group.add_mutually_exclusive_group()
        add_options(prompt, Options, PROMPT_OPTIONS[:1], "vlm: ")
        prompt.add_argument("--prompt-file", dest="prompt", type=_prompt_file_type, metavar="FILE",
                            help="vlm: read the instruction from FILE")
        add_options(prompt, Options, PROMPT_OPTIONS[1:], "vlm: ")
        add_options(group, Options, RUNNER_OPTIONS, "vlm: ")

    @classmethod
    def resolve_prompt(cls, facts: DatasetFacts, prompt: Optional[str], prompt_preset: Optional[str],
                       presentation: Union[str, bool], where: str) -> str:
        """The prompt: ``prompt`` as given, else the preset of the dataset's style for ``presentation``
        (a name; ``True`` / ``False``: ``--single-image``'s stacked pair / the two images)."""
        if prompt is not None:
            return check_prompt("--prompt", prompt)
        preset = prompt_preset or preset_for(facts)
        if preset is None:
            raise IDCError(f"{where}: its card records no pair style, which decides the prompt; pass --prompt-preset "
                           f"{'|'.join(sorted(PROMPTS))} or --prompt")
        if isinstance(presentation, bool):
            presentation = "stacked" if presentation else DEFAULT_PRESENTATION
        return get_presentation(presentation).prompts[preset]

    @classmethod
    def check_dataset(cls, facts, columns, options, where) -> None:
        super().check_dataset(facts, columns, options, where)
        o = cls.make_options(options)
        cls.resolve_prompt(facts, o.prompt, o.prompt_preset, o.presentation, where)

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                 revision: Optional[str] = None, options: Optional[Options] = None,
                 multiple_choice: Optional[dict[str, Any]] = None, **given: Any):
        """``options``: :class:`Options` (or ``given``, its fields as keywords); ``multiple_choice``:
        the questions' record, where :meth:`dataset_options` asks the dataset's questions."""
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.options = o = self.make_options(options, **given)
        kwargs = {"revision": revision} if revision else {}
        self.dtype = resolve_dtype(dtype, device)
        processor = AutoProcessor.from_pretrained(base_model, **kwargs)
        if getattr(processor, "tokenizer", None) is None or getattr(processor, "chat_template", None) is None:
            raise IDCError(f"{base_model}: its processor has no tokenizer or no chat template; --model vlm runs chat models")
        text = self.resolve_prompt(facts, o.prompt, o.prompt_preset, o.presentation, base_model)
        check_prompt("--prompt", text, special_tokens(processor))  # before the weights load
        model = load_weights(AutoModelForImageTextToText, base_model, dtype=self.dtype, **kwargs)
        if adapter:
            from .adapters import apply_adapter

            model = apply_adapter(model, adapter, base_model)
        self.model = model.to(device).eval()
        self.inputs = VlmInputs(processor, text, max_new_tokens=o.max_new_tokens, presentation=o.presentation)
        self.inputs.questions = bool(multiple_choice)  # dataset_options: the items ask questions

    @classmethod
    def description(cls, base_model, adapter, device, dtype, facts, revision=None, options: Optional[Options] = None,
                    multiple_choice: Optional[dict[str, Any]] = None, **given: Any) -> dict[str, Any]:
        o = cls.make_options(options, **given)
        return {**super().description(base_model, adapter, device, dtype, facts, revision),
                "presentation": o.presentation,
                "preprocess": get_presentation(o.presentation).description,
                "prompt": cls.resolve_prompt(facts, o.prompt, o.prompt_preset, o.presentation, base_model),
                "chat_template": "the model's own (apply_chat_template, generation prompt added)",
                "generation": f"greedy, max_new_tokens={o.max_new_tokens}, left padding",
                "answer_cleaning": ANSWER_RULE, **cls.questions_described(multiple_choice)}

    @classmethod
    def dataset_options(cls, columns: list[str], options: Options) -> dict[str, Any]:
        """A dataset whose items ask multiple-choice questions (the columns
        :data:`~idc_toolkit.multiple_choice.COLUMNS`) is asked them, unless ``--prompt``,
        ``--prompt-file`` or ``--prompt-preset`` names an instruction: the question's template and
        the choice order then join the run's options (its fingerprint, ``model.json``)."""
        if all(c in columns for c in QUESTION_COLUMNS) and options.prompt is None and options.prompt_preset is None:
            return {"multiple_choice": fingerprint_fields(with_prompt=True)}
        return {}

    @staticmethod
    def questions_described(multiple_choice: Optional[dict[str, Any]]) -> dict[str, Any]:
        """What ``model.json`` says of a run that asked questions (nothing for one that did not)."""
        if not multiple_choice:
            return {}
        return {"multiple_choice": {**multiple_choice, "choice_order_rule": CHOICE_ORDER_RULE},
                "answer_cleaning": f"a row asked its question: none, the raw answer is the prediction (idc-eval reads "
                                   f"its letter, docs/scoring.md); any other row: {ANSWER_RULE}"}

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        return self.inputs.decode(self.model, rows)


def _prompt_file_type(path: str) -> str:
    import argparse

    try:
        return read_prompt_file(path)
    except IDCError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RUNNER = VlmRunner

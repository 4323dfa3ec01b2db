"""Tiny bases that can learn the demo: ``idc-demo --with-model`` trains both recipes on them.

A random tiny BLIP-2 or InstructBLIP cannot learn captions through LoRA alone: its language
model knows no language. These bases are what a small pretrained checkpoint is to the real
recipes, at demo scale:

* a **word-level tokenizer** over the demo's vocabulary (every word of the train captions and of
  DAVIR's prompt), configured as the real checkpoints' are: OPT-style for BLIP-2 (``</s>``
  prepended as BOS, pad id 1, right padding), Vicuna-style for InstructBLIP (``<s>`` BOS, no
  EOS added, no pad token, left padding);
* a language model **pretrained on the train captions** as text (a few hundred steps, all its
  weights), so it writes the demo's sentences; the vision encoder and Q-Former stay random, and
  ``idc-train`` then learns, through LoRA, to condition the captions on the pair. The vision
  encoder is initialised with std 0.02 (the BLIP configs' default, 1e-10, is meant to be
  overwritten by pretrained weights and leaves a random encoder with no gradient to speak of).

Nothing here is downloaded; the same code paths load real checkpoints.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

IMAGE_SIZE = 64
SPECIALS_OPT = ["<s>", "<pad>", "</s>", "<unk>"]
SPECIALS_LLAMA = ["<unk>", "<s>", "</s>"]


def words_of(texts: Iterable[str]) -> list[str]:
    """Every word and punctuation mark, in first-seen order (the tokenizer's vocabulary)."""
    seen: dict[str, None] = {}
    for text in texts:
        for w in re.findall(r"\w+|[^\w\s]", text):
            seen.setdefault(w, None)
    return list(seen)


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


def _pretrain_language_model(model, tok, texts: list[str], steps: int, seed: int, qformer_tok=None,
                             qformer_text: str = "") -> None:
    """Teach the language model the captions: next-token prediction on ``texts``, with the
    query outputs of random-noise images in front (the layout of a real input: image slots,
    BOS, text), so the model learns the sentences without learning to expect no image. Only the
    language model's weights change; the vision encoder and Q-Former stay as initialised."""
    import random

    import torch

    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    n_query, image_token = model.config.num_query_tokens, model.config.image_token_index
    size = model.config.vision_config.image_size
    opt = torch.optim.AdamW(model.language_model.parameters(), lr=3e-3)
    # only the language model learns: no gradients through the vision encoder, Q-Former and
    # projection (the same weights come out, bit for bit, 25-35% sooner)
    frozen = [p for name, p in model.named_parameters() if not name.startswith("language_model.")]
    for p in frozen:
        p.requires_grad_(False)
    model.train()
    batch_size = 32
    encoded = {t: tok(t)["input_ids"] for t in set(texts)}  # once per text, not once per draw
    if qformer_tok is not None:
        q = qformer_tok([qformer_text] * batch_size, return_tensors="pt", padding=True)
    for _ in range(steps):
        batch = [rng.choice(texts) for _ in range(batch_size)]
        ids = [[image_token] * n_query + encoded[t] + [tok.eos_token_id] for t in batch]
        width = max(map(len, ids))
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.unk_token_id
        x = torch.full((len(ids), width), pad)
        labels = torch.full((len(ids), width), -100)
        for i, row in enumerate(ids):
            x[i, :len(row)] = torch.tensor(row)
            labels[i, n_query:len(row)] = torch.tensor(row[n_query:])
        inputs = {"input_ids": x, "attention_mask": (x != pad).long() | (labels != -100).long(),
                  "pixel_values": torch.randn(len(ids), 3, size, size, generator=gen), "labels": labels}
        if qformer_tok is not None:
            inputs.update(qformer_input_ids=q["input_ids"], qformer_attention_mask=q["attention_mask"])
        loss = model(**inputs).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p in frozen:
        p.requires_grad_(True)
    model.eval()


def _distinct_queries(model):
    """Query tokens drawn as LAVIS draws them (normal, std 0.02): transformers initialises them to
    zero, and identical queries stay identical under LoRA, so the LLM would read one image vector."""
    import torch

    with torch.no_grad():
        model.query_tokens.normal_(0.0, model.config.qformer_config.initializer_range)
    return model


def save_demo_blip2(folder: Path | str, captions: list[str], seed: int = 0, steps: int = 300) -> Path:
    """A tiny BLIP-2 OPT whose OPT writes the demo's captions (see the module docstring)."""
    import torch
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, Blip2QFormerConfig,
                              Blip2VisionConfig, BlipImageProcessor, OPTConfig)

    tok = word_tokenizer(words_of(captions), "opt")
    proc = Blip2Processor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                          tokenizer=tok, num_query_tokens=8)
    cfg = Blip2Config(
        vision_config=Blip2VisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                        image_size=IMAGE_SIZE, patch_size=8, initializer_range=0.02).to_dict(),
        qformer_config=Blip2QFormerConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                          encoder_hidden_size=64, cross_attention_frequency=1).to_dict(),
        text_config=OPTConfig(vocab_size=len(tok) + 2, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                              num_attention_heads=4, word_embed_proj_dim=64, max_position_embeddings=128, bos_token_id=2,
                              eos_token_id=2, pad_token_id=1).to_dict(),
        num_query_tokens=8, image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = _distinct_queries(Blip2ForConditionalGeneration(cfg))
    _pretrain_language_model(model, tok, captions, steps, seed)
    folder = Path(folder)
    model.eval().save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def save_demo_instructblip(folder: Path | str, captions: list[str], prompt_words: list[str], seed: int = 0,
                           steps: int = 300) -> Path:
    """A tiny InstructBLIP whose Llama writes the demo's captions (see the module docstring)."""
    import torch
    from transformers import (BertTokenizer, BlipImageProcessor, InstructBlipConfig, InstructBlipForConditionalGeneration,
                              InstructBlipProcessor, InstructBlipQFormerConfig, InstructBlipVisionConfig, LlamaConfig)

    import random

    from ..models.davir import PROMPT, build_prompt

    words = words_of([*captions, *prompt_words])
    tok = word_tokenizer(words, "llama")
    rng = random.Random(seed)
    nouns = [w for w in words_of(captions) if w.isalpha()]
    # DAVIR's LLM reads the entity prompt before the caption: it learns that layout as text too
    texts = [f"{build_prompt([rng.choice(nouns)], 1)} {c}" for c in captions]
    qtok = BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(w.lower() for w in words)]))})
    proc = InstructBlipProcessor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                                 tokenizer=tok, qformer_tokenizer=qtok, num_query_tokens=8)
    cfg = InstructBlipConfig(
        vision_config=InstructBlipVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                               num_attention_heads=4, image_size=IMAGE_SIZE, patch_size=8,
                                               initializer_range=0.02).to_dict(),
        qformer_config=InstructBlipQFormerConfig(vocab_size=len(qtok), hidden_size=64, num_hidden_layers=2,
                                                 num_attention_heads=4, intermediate_size=128, encoder_hidden_size=64,
                                                 max_position_embeddings=128, cross_attention_frequency=1).to_dict(),
        text_config=LlamaConfig(vocab_size=len(tok) + 2, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=None).to_dict(),
        num_query_tokens=8, image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = _distinct_queries(InstructBlipForConditionalGeneration(cfg))
    _pretrain_language_model(model, tok, texts, steps, seed, qtok, PROMPT.lower())
    folder = Path(folder)
    model.eval().save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder

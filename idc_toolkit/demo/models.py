"""The demo's base models: tiny BLIP-2 (OPT) and InstructBLIP (Vicuna) stand-ins, untrained,
with their processors (the tokenizers are :mod:`idc_toolkit.demo.tokenizers`'). BLIP-2's vision
encoder is told BLIP2IDC's stacked layout (:func:`tell_the_layout`). :mod:`idc_toolkit.demo.pretrain`
pretrains both into the shipped bases.
"""

from __future__ import annotations

import warnings
from typing import Any

from .tokenizers import demo_vocabulary

IMAGE_SIZE = 64
PATCH = 8
HIDDEN = 64
#: the names this module held before the tokenizers had a module of their own
_MOVED_TO_TOKENIZERS = ("SPECIALS_OPT", "SPECIALS_LLAMA", "words_of", "word_tokenizer")


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_TOKENIZERS:
        from . import tokenizers

        warnings.warn(f"idc_toolkit.demo.models.{name} moved to idc_toolkit.demo.tokenizers.{name}; the old path goes "
                      "in the next release", DeprecationWarning, stacklevel=2)
        return getattr(tokenizers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _half_positions(grid: int, dims: int):
    """Sine / cosine codes of (row within its half, column): the two halves of a stacked pair share them."""
    import torch

    rows = torch.arange(grid) % (grid // 2)
    r, c = torch.meshgrid(rows.float(), torch.arange(grid).float(), indexing="ij")
    q = dims // 4
    freq = 1.0 / (100 ** (torch.arange(q) / q))
    code = torch.cat([torch.sin(r.flatten()[:, None] * freq), torch.cos(r.flatten()[:, None] * freq),
                      torch.sin(c.flatten()[:, None] * freq), torch.cos(c.flatten()[:, None] * freq)], 1)
    return torch.cat([torch.zeros(1, dims), code])  # the CLS token has none


def tell_the_layout(vision_model, scale: float = 3.0) -> None:
    """BLIP-2's encoder told the stacked layout (module docstring): dims 0-15 hold the shared
    position code, 16-47 the patch content, and head 0 of the first layer, matching position codes,
    writes the mean content of a patch and its twin in the other half into dims 48-63."""
    import torch

    grid = vision_model.config.image_size // vision_model.config.patch_size
    emb = vision_model.embeddings
    attn = vision_model.encoder.layers[0].self_attn
    h = vision_model.config.hidden_size
    with torch.no_grad():
        pos = torch.zeros_like(emb.position_embedding)
        pos[0, :, :16] = 2 * _half_positions(grid, 16)
        emb.position_embedding.copy_(pos)
        for rows in (slice(0, 16), slice(48, h)):
            emb.patch_embedding.weight[rows] = 0
            emb.patch_embedding.bias[rows] = 0
        w = attn.qkv.weight
        w[0:16] = 0
        w[h:h + 16] = 0
        w[2 * h:2 * h + 16] = 0
        w[0:16, 0:16] = scale * torch.eye(16)
        w[h:h + 16, 0:16] = scale * torch.eye(16)
        w[2 * h:2 * h + 16, 16:32] = torch.eye(16)
        if attn.qkv.bias is not None:
            attn.qkv.bias[0:16] = 0
            attn.qkv.bias[2 * h:2 * h + 16] = 0
        p = attn.projection.weight
        p[:, 0:16] = 0
        p[48:h, :] = 0
        p[48:h, 0:16] = torch.eye(16)
        attn.projection.bias[48:h] = 0


def blip2_base(seed: int = 0):
    """The untrained BLIP-2 OPT stand-in and its processor."""
    import torch
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, Blip2QFormerConfig,
                              Blip2VisionConfig, BlipImageProcessor, OPTConfig)

    from .tokenizers import word_tokenizer

    tok = word_tokenizer(demo_vocabulary(), "opt")
    proc = Blip2Processor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                          tokenizer=tok, num_query_tokens=8)
    layer = dict(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2, num_attention_heads=4)
    cfg = Blip2Config(
        vision_config=Blip2VisionConfig(**layer, image_size=IMAGE_SIZE, patch_size=PATCH, initializer_range=0.02).to_dict(),
        qformer_config=Blip2QFormerConfig(**layer, encoder_hidden_size=HIDDEN, cross_attention_frequency=1).to_dict(),
        text_config=OPTConfig(vocab_size=len(tok) + 2, hidden_size=HIDDEN, ffn_dim=2 * HIDDEN, num_hidden_layers=2,
                              num_attention_heads=4, word_embed_proj_dim=HIDDEN, max_position_embeddings=128,
                              bos_token_id=2, eos_token_id=2, pad_token_id=1).to_dict(),
        num_query_tokens=8, image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = Blip2ForConditionalGeneration(cfg)
    with torch.no_grad():  # LAVIS draws the query tokens (transformers zeroes them: identical queries stay identical)
        model.query_tokens.normal_(0.0, cfg.qformer_config.initializer_range)
    tell_the_layout(model.vision_model)
    return model, proc


def instructblip_base(seed: int = 0):
    """The untrained InstructBLIP Vicuna stand-in and its processor."""
    import torch
    from transformers import (BertTokenizer, BlipImageProcessor, InstructBlipConfig, InstructBlipForConditionalGeneration,
                              InstructBlipProcessor, InstructBlipQFormerConfig, InstructBlipVisionConfig, LlamaConfig)

    from .tokenizers import word_tokenizer

    words = demo_vocabulary()
    tok = word_tokenizer(words, "llama")
    qtok = BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(w.lower() for w in words)]))})
    proc = InstructBlipProcessor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                                 tokenizer=tok, qformer_tokenizer=qtok, num_query_tokens=8)
    layer = dict(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2, num_attention_heads=4)
    cfg = InstructBlipConfig(
        vision_config=InstructBlipVisionConfig(**layer, image_size=IMAGE_SIZE, patch_size=PATCH,
                                               initializer_range=0.02).to_dict(),
        qformer_config=InstructBlipQFormerConfig(**layer, vocab_size=len(qtok), encoder_hidden_size=HIDDEN,
                                                 max_position_embeddings=128, cross_attention_frequency=1).to_dict(),
        text_config=LlamaConfig(vocab_size=len(tok) + 2, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                max_position_embeddings=256, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                pad_token_id=None).to_dict(),
        num_query_tokens=8, image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    model = InstructBlipForConditionalGeneration(cfg)
    with torch.no_grad():
        model.query_tokens.normal_(0.0, cfg.qformer_config.initializer_range)
    return model, proc

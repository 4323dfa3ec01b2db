"""Tiny randomly initialised checkpoints in the real formats, for tests, benchmarks and
``idc-demo --with-model``: no weights are downloaded; the code paths are the real ones."""

from __future__ import annotations

import json
from pathlib import Path

IMAGE_SIZE = 56  #: with the real patch of 14: a 4 x 4 grid (the real 224 px make 16 x 16)


def byte_level_tokenizer(specials: list[str], extra: tuple[str, ...] = (), **settings):
    """A byte-level GPT-2 tokenizer built from Python objects (every text encodes): ``specials``
    first in the vocabulary, then the 256 byte symbols; ``extra`` added as special tokens."""
    from tokenizers import pre_tokenizers
    from transformers import GPT2Tokenizer

    vocab = {t: i for i, t in enumerate(specials)}
    # sorted: ``alphabet()`` comes from a set, so its order (and every byte's id) changed with
    # each process's string hashing, and a test's tiny model decoded other text in another run
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    tok = GPT2Tokenizer(vocab=vocab, merges=[], **settings)
    if extra:
        tok.add_special_tokens({"additional_special_tokens": list(extra)})
    return tok


def tiny_tokenizer():
    """A byte-level GPT-2 tokenizer configured as OPT's ships: ``</s>`` (id 2) prepended as BOS
    and used as EOS, ``<pad>`` id 1, right padding."""
    return byte_level_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], bos_token="</s>", eos_token="</s>", pad_token="<pad>",
                                unk_token="<unk>", add_bos_token=True, padding_side="right")


def tiny_llama_tokenizer(padding_side: str = "left"):
    """A character-level Llama tokenizer configured as Vicuna's (InstructBLIP-vicuna) ships:
    ``<s>`` BOS added, no EOS added, no pad token, left padding unless told otherwise."""
    from transformers import LlamaTokenizer

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for ch in "\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?'-()":
        vocab.setdefault(ch, len(vocab))
    return LlamaTokenizer(vocab=vocab, merges=[], add_bos_token=True, add_eos_token=False, padding_side=padding_side)


def _save_seeded(model_class, config, processor, folder: Path | str, seed: int) -> Path:
    """Build ``model_class(config)`` with a fixed seed and save it with its processor."""
    import torch

    torch.manual_seed(seed)
    model = model_class(config).eval()
    folder = Path(folder)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def save_tiny_blip2(folder: Path | str, seed: int = 0, dropout: float = 0.1) -> Path:
    """A BLIP-2 with a tiny ViT, Q-Former and OPT, saved with its processor; OPT's dropout is
    the real configuration's (0.1, as the Q-Former's) unless a test needs a deterministic forward."""
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, Blip2QFormerConfig,
                              Blip2VisionConfig, BlipImageProcessor, OPTConfig)

    tok = tiny_tokenizer()
    proc = Blip2Processor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}), tokenizer=tok,
                          num_query_tokens=32)
    cfg = Blip2Config(
        vision_config=Blip2VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                        image_size=IMAGE_SIZE, patch_size=14).to_dict(),
        qformer_config=Blip2QFormerConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                          encoder_hidden_size=32, cross_attention_frequency=2, hidden_dropout_prob=dropout,
                                          attention_probs_dropout_prob=dropout).to_dict(),
        text_config=OPTConfig(vocab_size=len(tok) + 4, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                              word_embed_proj_dim=32, bos_token_id=2, eos_token_id=2, pad_token_id=1,
                              dropout=dropout).to_dict(),
        num_query_tokens=32, image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    return _save_seeded(Blip2ForConditionalGeneration, cfg, proc, folder, seed)


def blip2idc_targets(n_qformer_layers: int) -> list[str]:
    """BLIP2IDC's released target list (:func:`~.blip2idc.released_targets`)."""
    from ..models.blip2idc import released_targets

    return released_targets(n_qformer_layers)


def save_lora_adapter(model, folder: Path | str, targets: list[str], r: int = 8, old_format: bool = False,
                      base_name: str = "Salesforce/blip2-opt-2.7b", seed: int = 0) -> Path:
    """A LoRA adapter with non-zero B matrices (so it changes the model), in today's peft
    format or in the peft 0.5 format BLIP2IDC released (``adapter_model.bin``)."""
    import torch
    from peft import LoraConfig, get_peft_model_state_dict

    from ..models.adapters import wrap_lora

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.05, bias="none", target_modules=targets)
    peft_model = wrap_lora(model, config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    if not old_format:
        peft_model.save_pretrained(folder)
        cfg = json.loads((folder / "adapter_config.json").read_text())
        cfg["base_model_name_or_path"] = base_name
        (folder / "adapter_config.json").write_text(json.dumps(cfg, indent=2))
        return folder
    state = get_peft_model_state_dict(peft_model)  # keys without the adapter name, as peft 0.5 wrote them
    torch.save({k: v.clone() for k, v in state.items()}, folder / "adapter_model.bin")
    (folder / "adapter_config.json").write_text(json.dumps({
        "auto_mapping": {"base_model_class": "Blip2ForConditionalGeneration", "parent_library": "transformers.models.blip_2.modeling_blip_2"},
        "base_model_name_or_path": base_name, "bias": "none", "fan_in_fan_out": False, "inference_mode": True,
        "init_lora_weights": True, "layers_pattern": None, "layers_to_transform": None, "lora_alpha": 2 * r,
        "lora_dropout": 0.05, "modules_to_save": None, "peft_type": "LORA", "r": r, "revision": None,
        "target_modules": targets, "task_type": None}, indent=2))
    return folder


def save_tiny_instructblip(folder: Path | str, seed: int = 0, padding_side: str = "left") -> Path:
    """An InstructBLIP with a tiny ViT, Q-Former (BERT vocabulary) and Llama, with its processor;
    the LLM's tokenizer behaves as Vicuna's (:func:`tiny_llama_tokenizer`)."""
    from transformers import (BertTokenizer, BlipImageProcessor, InstructBlipConfig, InstructBlipForConditionalGeneration,
                              InstructBlipProcessor, InstructBlipQFormerConfig, InstructBlipVisionConfig, LlamaConfig)

    tok = tiny_llama_tokenizer(padding_side)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "describe", "the", "difference", "between", "two", "images",
             "entity", ":", ",", "."] + list("abcdefghijklmnopqrstuvwxyz")
    qtok = BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(words))})
    proc = InstructBlipProcessor(image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                                 tokenizer=tok, qformer_tokenizer=qtok, num_query_tokens=32)
    cfg = InstructBlipConfig(
        vision_config=InstructBlipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                               image_size=IMAGE_SIZE, patch_size=14).to_dict(),
        qformer_config=InstructBlipQFormerConfig(vocab_size=len(qtok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                 intermediate_size=64, encoder_hidden_size=32, max_position_embeddings=64,
                                                 cross_attention_frequency=2).to_dict(),
        text_config=LlamaConfig(vocab_size=len(tok) + 4, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, bos_token_id=tok.bos_token_id,
                                eos_token_id=tok.eos_token_id, pad_token_id=None).to_dict(),
        num_query_tokens=32, image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    return _save_seeded(InstructBlipForConditionalGeneration, cfg, proc, folder, seed)


def davir_targets() -> list[str]:
    """LoRA on the ViT and Q-Former QKV and the LLM's attention projections (DAVIR §3.4, as read)."""
    return ["qkv", "query", "key", "value", "q_proj", "k_proj", "v_proj"]


CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}<<SYS>> {{ m['content'] }} <</SYS>> "
    "{% elif m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]{% else %} {{ m['content'] }}</s>{% endif %}{% endfor %}"
)


def save_tiny_chat_lm(folder: Path | str, seed: int = 0) -> Path:
    """A tiny Llama chat model (byte-level tokenizer, Llama-2-style chat template)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tiny_tokenizer()
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    lm = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, bos_token_id=tok.bos_token_id,
                                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)).eval()
    folder = Path(folder)
    lm.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def save_tiny_instruct_pix2pix(folder: Path | str, seed: int = 0) -> Path:
    """A tiny InstructPix2Pix pipeline (UNet with 8 input channels, VAE, CLIP text encoder)."""
    import torch
    from diffusers import AutoencoderKL, EulerAncestralDiscreteScheduler, StableDiffusionInstructPix2PixPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = list(dict.fromkeys(["<|startoftext|>", "<|endoftext|>", "<unk>", *letters, *(c + "</w>" for c in letters)]))
    tok = CLIPTokenizer(vocab={w: i for i, w in enumerate(vocab)}, merges=[], unk_token="<unk>", pad_token="<|endoftext|>",
                        model_max_length=77)
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=1, pad_token_id=1, vocab_size=len(vocab) + 8,
                                                hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2))
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=8, out_channels=4,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32)
    vae = AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 2,
                        up_block_types=["UpDecoderBlock2D"] * 2, latent_channels=4)
    pipe = StableDiffusionInstructPix2PixPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tok, unet=unet,
                                                  scheduler=EulerAncestralDiscreteScheduler(), safety_checker=None,
                                                  feature_extractor=None, image_encoder=None, requires_safety_checker=False)
    folder = Path(folder)
    pipe.save_pretrained(folder)
    return folder


"""Tiny randomly initialised general vision-language models in their real formats, for tests,
benchmarks and ``idc-demo --with-model``: Qwen2-VL, LLaVA-OneVision and Idefics3 (SmolVLM's
architecture), each saved with a processor whose tokenizer carries the special tokens and a
chat template in the style the real checkpoint ships, so ``AutoProcessor`` /
``AutoModelForImageTextToText`` load them exactly as they load the real ones.

The tokenizers are byte-level (every text encodes), with the image tokens as special tokens;
the real models' templates are reproduced in their structure (roles, image placeholders in
content order, the generation prompt), not their full feature set (tools, videos).
"""

from __future__ import annotations

from pathlib import Path

#: the architectures :func:`save_tiny_vlm` writes
ARCHITECTURES = ("qwen2_vl", "llava_onevision", "idefics3")

QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LLAVA_ONEVISION_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{{ '<image>\n' }}{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{{ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")


def _text_config(tok, model_type: str) -> dict:
    return {"model_type": model_type, "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024,
            "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}


def save_tiny_vlm(architecture: str, folder: Path | str, seed: int = 0) -> Path:
    """Write a tiny random ``architecture`` (one of :data:`ARCHITECTURES`) with its processor."""
    import torch
    import transformers as tf

    from .tiny import byte_level_tokenizer

    if architecture == "qwen2_vl":
        tok = byte_level_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                              ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"],
                              eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>", add_bos_token=False)
        # images of 28-56 px a side: 1-4 merged tokens each, so pairs of other sizes pad differently
        processor = tf.Qwen2VLProcessor(image_processor=tf.Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=56 * 56),
                                        tokenizer=tok, video_processor=tf.Qwen2VLVideoProcessor(), chat_template=QWEN2_VL_TEMPLATE)
        ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")}
        config = tf.Qwen2VLConfig(
            text_config={**_text_config(tok, "qwen2_vl_text"), "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}},
            vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 4, "mlp_ratio": 2, "patch_size": 14,
                           "spatial_merge_size": 2, "temporal_patch_size": 2},
            image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
            vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
            tie_word_embeddings=True)  # as Qwen2-VL-2B (models.published_configs)
        model_class = tf.Qwen2VLForConditionalGeneration
    elif architecture == "llava_onevision":
        tok = byte_level_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], ["<image>", "<video>"],
                              eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>", add_bos_token=False)
        size = 56  # with the real patch of 14 (SigLIP): a 4 x 4 grid
        processor = tf.LlavaOnevisionProcessor(
            image_processor=tf.LlavaOnevisionImageProcessor(size={"height": size, "width": size}, crop_size={"height": size, "width": size},
                                                            image_grid_pinpoints=[[size, size], [size, 2 * size], [2 * size, size]]),
            tokenizer=tok, video_processor=tf.LlavaOnevisionVideoProcessor(), num_image_tokens=(size // 14) ** 2,
            vision_feature_select_strategy="full", chat_template=LLAVA_ONEVISION_TEMPLATE)
        config = tf.LlavaOnevisionConfig(
            vision_config={"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "image_size": size, "patch_size": 14},
            text_config=_text_config(tok, "qwen2"), image_token_index=tok.convert_tokens_to_ids("<image>"),
            video_token_index=tok.convert_tokens_to_ids("<video>"), vision_feature_select_strategy="full", vision_feature_layer=-1,
            image_grid_pinpoints=[[size, size], [size, 2 * size], [2 * size, size]])
        model_class = tf.LlavaOnevisionForConditionalGeneration
    elif architecture == "idefics3":
        tok = byte_level_tokenizer(["<unk>", "<|im_start|>", "<end_of_utterance>", "<|endoftext|>"],
                              ["<fake_token_around_image>", "<image>", "<global-img>"],
                              bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|endoftext|>", unk_token="<unk>",
                                   add_bos_token=False)
        processor = tf.Idefics3Processor(
            image_processor=tf.Idefics3ImageProcessor(size={"longest_edge": 56}, max_image_size={"longest_edge": 56},
                                                      do_image_splitting=False),
            tokenizer=tok, image_seq_len=4, chat_template=IDEFICS3_TEMPLATE)
        config = tf.Idefics3Config(
            vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
                           "image_size": 56, "patch_size": 14},  # the real patch (SigLIP): a 4 x 4 grid
            text_config=_text_config(tok, "llama"), scale_factor=2, image_token_id=tok.convert_tokens_to_ids("<image>"),
            pad_token_id=tok.pad_token_id)
        model_class = tf.Idefics3ForConditionalGeneration
    else:
        raise ValueError(f"unknown architecture {architecture!r}; one of {', '.join(ARCHITECTURES)}")
    torch.manual_seed(seed)
    model = model_class(config).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    folder = Path(folder)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder

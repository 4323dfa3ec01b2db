"""The published configurations of the checkpoints users bring, to test structure at no cost.

Each entry holds the values of the checkpoint's ``config.json`` that decide the structure the
runners and recipes depend on (depths, widths, heads, cross-attention frequency, query tokens,
image and patch sizes, vocabularies, tied embeddings). :func:`real_config` turns one into a
``transformers`` configuration; :func:`meta_model` builds the model on PyTorch's ``meta`` device
(shapes, no storage), so a test can resolve LoRA targets, hooks and memory on the real layout
without weights. The tiny test models shrink widths and depths, never these structural fields
(:data:`STRUCTURE`).
"""

from __future__ import annotations

from typing import Any

_VIT_G = {"hidden_size": 1408, "intermediate_size": 6144, "num_hidden_layers": 39, "num_attention_heads": 16,
          "image_size": 224, "patch_size": 14, "qkv_bias": True}
_QFORMER = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
            "cross_attention_frequency": 2, "encoder_hidden_size": 1408}


def _opt(hidden: int, ffn: int, layers: int, heads: int) -> dict[str, Any]:
    return {"model_type": "opt", "vocab_size": 50272, "hidden_size": hidden, "ffn_dim": ffn, "num_hidden_layers": layers,
            "num_attention_heads": heads, "word_embed_proj_dim": hidden, "max_position_embeddings": 2048,
            "bos_token_id": 2, "eos_token_id": 2, "pad_token_id": 1}


def _llama(hidden: int, inter: int, layers: int, heads: int) -> dict[str, Any]:
    return {"model_type": "llama", "vocab_size": 32001, "hidden_size": hidden, "intermediate_size": inter,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
            "max_position_embeddings": 2048, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}


def _qwen2_vl(hidden: int, inter: int, layers: int, heads: int, kv: int, vocab: int, tied: bool) -> dict[str, Any]:
    return {"text": {"hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
                     "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
                     "max_position_embeddings": 32768, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
                     "tie_word_embeddings": tied},
            "vision": {"depth": 32, "embed_dim": 1280, "hidden_size": hidden, "num_heads": 16, "mlp_ratio": 4,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3},
            "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652, "tie_word_embeddings": tied}


#: checkpoint -> (model class, published structural values)
LAYOUTS: dict[str, tuple[str, dict[str, Any]]] = {
    "Salesforce/blip2-opt-2.7b": ("Blip2ForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30522}, "text": _opt(2560, 10240, 32, 32),
        "num_query_tokens": 32, "image_token_index": 50265}),
    "Salesforce/blip2-opt-6.7b": ("Blip2ForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30522}, "text": _opt(4096, 16384, 32, 32),
        "num_query_tokens": 32, "image_token_index": 50265}),
    "Salesforce/instructblip-vicuna-7b": ("InstructBlipForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30523, "max_position_embeddings": 512},
        "text": _llama(4096, 11008, 32, 32), "num_query_tokens": 32, "image_token_index": 32000}),
    "Salesforce/instructblip-vicuna-13b": ("InstructBlipForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30523, "max_position_embeddings": 512},
        "text": _llama(5120, 13824, 40, 40), "num_query_tokens": 32, "image_token_index": 32000}),
    "Qwen/Qwen2-VL-2B-Instruct": ("Qwen2VLForConditionalGeneration", _qwen2_vl(1536, 8960, 28, 12, 2, 151936, True)),
    "Qwen/Qwen2-VL-7B-Instruct": ("Qwen2VLForConditionalGeneration", _qwen2_vl(3584, 18944, 28, 28, 4, 152064, False)),
}

#: the fields a tiny test model must keep from its real model (everything else may shrink)
STRUCTURE = {
    "Blip2ForConditionalGeneration": ("qformer_config.cross_attention_frequency", "vision_config.qkv_bias",
                                      "text_config.model_type"),
    "InstructBlipForConditionalGeneration": ("qformer_config.cross_attention_frequency", "vision_config.qkv_bias",
                                             "text_config.model_type"),
    "Qwen2VLForConditionalGeneration": ("vision_config.patch_size", "vision_config.spatial_merge_size",
                                        "vision_config.temporal_patch_size", "tie_word_embeddings"),
}


def real_config(name: str):
    """The ``transformers`` configuration of checkpoint ``name`` with its published structure."""
    import transformers

    if name not in LAYOUTS:
        from ..errors import IDCError

        raise IDCError(f"no published layout for {name!r}; known: {', '.join(LAYOUTS)}")
    model_class, v = LAYOUTS[name]
    if model_class == "Qwen2VLForConditionalGeneration":
        text = {**v["text"], "layer_types": ["full_attention"] * v["text"]["num_hidden_layers"]}
        return transformers.Qwen2VLConfig(text_config=text, vision_config=v["vision"], image_token_id=v["image_token_id"],
                                          video_token_id=v["video_token_id"], vision_start_token_id=v["vision_start_token_id"],
                                          tie_word_embeddings=v["tie_word_embeddings"])
    prefix = "Blip2" if model_class.startswith("Blip2") else "InstructBlip"
    text = dict(v["text"])
    text_config = transformers.CONFIG_MAPPING[text.pop("model_type")](**text)
    return getattr(transformers, f"{prefix}Config")(
        vision_config=getattr(transformers, f"{prefix}VisionConfig")(**v["vision"]).to_dict(),
        qformer_config=getattr(transformers, f"{prefix}QFormerConfig")(**v["qformer"]).to_dict(),
        text_config=text_config.to_dict(), num_query_tokens=v["num_query_tokens"], image_token_index=v["image_token_index"])


def meta_model(name: str):
    """Checkpoint ``name``'s model built on the ``meta`` device: its real module tree, no storage."""
    import torch
    import transformers

    config = real_config(name)
    with torch.device("meta"):
        return getattr(transformers, LAYOUTS[name][0])(config)


def structure_of(config) -> dict[str, Any]:
    """The :data:`STRUCTURE` fields of a model's configuration."""
    out = {}
    for path in STRUCTURE[config.architectures[0] if getattr(config, "architectures", None) else _class_of(config)]:
        value: Any = config
        for part in path.split("."):
            value = getattr(value, part)
        out[path] = value
    return out


def _class_of(config) -> str:
    return {"blip-2": "Blip2ForConditionalGeneration", "instructblip": "InstructBlipForConditionalGeneration",
            "qwen2_vl": "Qwen2VLForConditionalGeneration"}[config.model_type]

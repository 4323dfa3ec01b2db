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


def _t5_xl() -> dict[str, Any]:
    return {"model_type": "t5", "vocab_size": 32128, "d_model": 2048, "d_ff": 5120, "d_kv": 64, "num_layers": 24,
            "num_decoder_layers": 24, "num_heads": 32, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
            "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1}


def _qwen2_5_vl(hidden: int, inter: int, layers: int, heads: int, kv: int, vocab: int, tied: bool) -> dict[str, Any]:
    return {"config": "Qwen2_5_VLConfig",
            "text": {"hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
                     "num_key_value_heads": kv, "vocab_size": vocab, "max_position_embeddings": 128000,
                     "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
            "vision": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "out_hidden_size": hidden,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
                       "fullatt_block_indexes": [7, 15, 23, 31]},
            "top": {"image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
                    "tie_word_embeddings": tied}}


def _siglip_so400m(layers: int, size: int) -> dict[str, Any]:
    return {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": layers,
            "num_attention_heads": 16, "image_size": size, "patch_size": 14}


def _llava_onevision(hidden: int, inter: int, layers: int, heads: int, kv: int, vocab: int, tied: bool) -> dict[str, Any]:
    return {"config": "LlavaOnevisionConfig",
            "text": {"model_type": "qwen2", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
                     "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab, "tie_word_embeddings": tied},
            "vision": _siglip_so400m(26, 384),
            "top": {"image_token_index": 151646, "video_token_index": 151647, "vision_feature_layer": -1,
                    "vision_feature_select_strategy": "full", "tie_word_embeddings": tied}}


def _idefics3(config: str, hidden: int, inter: int, layers: int, kv: int, vocab: int, size: int, scale: int,
              image_token: int) -> dict[str, Any]:
    """Idefics3 and its SmolVLM descendants: a Llama text model, a SigLIP tower, pixel shuffle by ``scale``."""
    vision_type = "smolvlm_vision" if config == "SmolVLMConfig" else "idefics3_vision"
    return {"config": config,
            "text": {"model_type": "llama", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
                     "num_attention_heads": 32, "num_key_value_heads": kv, "vocab_size": vocab, "tie_word_embeddings": False},
            "vision": {**_siglip_so400m(27, size), "model_type": vision_type},
            "top": {"scale_factor": scale, "image_token_id": image_token, "tie_word_embeddings": False}}


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
    "Salesforce/blip2-flan-t5-xl": ("Blip2ForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30522}, "text": _t5_xl(),
        "num_query_tokens": 32, "image_token_index": 32100}),
    "Salesforce/instructblip-flan-t5-xl": ("InstructBlipForConditionalGeneration", {
        "vision": _VIT_G, "qformer": {**_QFORMER, "vocab_size": 30523, "max_position_embeddings": 512}, "text": _t5_xl(),
        "num_query_tokens": 32, "image_token_index": 32100}),
    "Qwen/Qwen2-VL-2B-Instruct": ("Qwen2VLForConditionalGeneration", _qwen2_vl(1536, 8960, 28, 12, 2, 151936, True)),
    "Qwen/Qwen2-VL-7B-Instruct": ("Qwen2VLForConditionalGeneration", _qwen2_vl(3584, 18944, 28, 28, 4, 152064, False)),
    "Qwen/Qwen2.5-VL-3B-Instruct": ("Qwen2_5_VLForConditionalGeneration",
                                    _qwen2_5_vl(2048, 11008, 36, 16, 2, 151936, True)),
    "Qwen/Qwen2.5-VL-7B-Instruct": ("Qwen2_5_VLForConditionalGeneration",
                                    _qwen2_5_vl(3584, 18944, 28, 28, 4, 152064, False)),
    "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": ("LlavaOnevisionForConditionalGeneration",
                                                  _llava_onevision(896, 4864, 24, 14, 2, 152000, True)),
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": ("LlavaOnevisionForConditionalGeneration",
                                                _llava_onevision(3584, 18944, 28, 28, 4, 152128, False)),
    "HuggingFaceM4/Idefics3-8B-Llama3": ("Idefics3ForConditionalGeneration",
                                         _idefics3("Idefics3Config", 4096, 14336, 32, 8, 128259, 364, 2, 128257)),
    "HuggingFaceTB/SmolVLM-Instruct": ("Idefics3ForConditionalGeneration",
                                       _idefics3("Idefics3Config", 2048, 8192, 24, 32, 49155, 384, 3, 49153)),
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct": ("SmolVLMForConditionalGeneration",
                                             _idefics3("SmolVLMConfig", 2048, 8192, 24, 32, 49280, 384, 4, 49190)),
}

#: the fields a tiny test model must keep from its real model (everything else may shrink)
STRUCTURE = {
    "Blip2ForConditionalGeneration": ("qformer_config.cross_attention_frequency", "num_query_tokens",
                                      "vision_config.patch_size", "vision_config.qkv_bias", "text_config.model_type"),
    "InstructBlipForConditionalGeneration": ("qformer_config.cross_attention_frequency", "num_query_tokens",
                                             "vision_config.patch_size", "vision_config.qkv_bias", "text_config.model_type"),
    "Qwen2VLForConditionalGeneration": ("vision_config.patch_size", "vision_config.spatial_merge_size",
                                        "vision_config.temporal_patch_size", "tie_word_embeddings"),
    "LlavaOnevisionForConditionalGeneration": ("vision_feature_layer", "vision_feature_select_strategy",
                                               "vision_config.patch_size"),
    "Idefics3ForConditionalGeneration": ("scale_factor", "vision_config.patch_size"),
    "SmolVLMForConditionalGeneration": ("scale_factor", "vision_config.patch_size"),
}


def real_config(name: str):
    """The ``transformers`` configuration of checkpoint ``name`` with its published structure."""
    import transformers

    if name not in LAYOUTS:
        from ..errors import IDCError

        raise IDCError(f"no published layout for {name!r}; known: {', '.join(LAYOUTS)}")
    model_class, v = LAYOUTS[name]
    if "config" in v:  # a VLM: its configuration class with text and vision parts
        layers = v["text"]["num_hidden_layers"]
        text = {**v["text"], "layer_types": ["full_attention"] * layers} if "model_type" not in v["text"] else v["text"]
        return getattr(transformers, v["config"])(text_config=text, vision_config=v["vision"], **v["top"])
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
            "qwen2_vl": "Qwen2VLForConditionalGeneration", "llava_onevision": "LlavaOnevisionForConditionalGeneration",
            "idefics3": "Idefics3ForConditionalGeneration"}[config.model_type]

"""``idc-eval --model vlm`` generation throughput and peak memory: the tiny random Qwen2-VL,
LLaVA-OneVision and Idefics3 checkpoints on CPU (each architecture in a fresh process, so peak
RSS is its own), batch 1 and 8, 32 pairs of 64x48 images, 12 new tokens.

On a GPU (``--device cuda``) pass ``--real-size`` to build a randomly initialised Qwen2-VL-2B
configuration instead (its published layout, ``idc_toolkit.models.published_configs``; bf16, batch 1/8/32;
peak from ``torch.cuda.max_memory_allocated``, beside an estimate: the weights plus the KV cache
of the longest sequence, 2 x layers x KV heads x head width x tokens x batch at the weights'
dtype; MFU: 2 x parameters x the tokens the model's forward passes took, over the time and the
GPU's bf16 dense peak, ``gpu_peaks.py``). Every run generates exactly its new tokens
(``min_new_tokens``), so throughput is defined on random weights too.

    python benchmarks/vlm_speed.py [--device cpu] [--real-size]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(arch: str, device: str, real_size: bool, batches: list[int], pairs: int) -> dict:
    import numpy as np
    import torch
    from PIL import Image

    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.vlm import VlmRunner

    folder = Path(tempfile.mkdtemp(prefix="idc-vlm-bench-"))
    if real_size:
        from transformers import AutoConfig, Qwen2VLForConditionalGeneration

        from idc_toolkit.models.published_configs import real_config
        from idc_toolkit.demo.tiny_vlm import save_tiny_vlm

        save_tiny_vlm("qwen2_vl", folder)  # the processor; the weights below replace the tiny ones
        tiny = AutoConfig.from_pretrained(folder)
        # Qwen2-VL-2B's published sizes (AutoConfig.for_model("qwen2_vl") is the 72B), our tokenizer's special ids
        config = real_config("Qwen/Qwen2-VL-2B-Instruct")
        for name in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"):
            setattr(config, name, getattr(tiny, name))
        for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
            setattr(config.text_config, name, getattr(tiny.text_config, name))
        Qwen2VLForConditionalGeneration(config).to(torch.bfloat16).save_pretrained(folder)
    else:
        from idc_toolkit.demo.tiny_vlm import save_tiny_vlm

        save_tiny_vlm(arch, folder)
    runner = VlmRunner(str(folder), None, device, "auto", DatasetFacts(pair_style="scene"), max_new_tokens=12)
    runner.model.generation_config.min_new_tokens = 12  # a fixed token count: random weights stop at once otherwise
    rng = np.random.default_rng(0)
    rows = [{"pair_id": str(k), "before": Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)),
             "after": Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))} for k in range(pairs)]
    from gpu_peaks import mfu, shown

    out = {"arch": arch, "device": device}
    tokens = {"through": 0, "longest": 0}

    def count(module, args, kwargs):  # prefill: the batch's prompt positions; then one position per row and step
        ids = kwargs.get("input_ids", args[0] if args else None)
        if isinstance(ids, torch.Tensor):
            tokens["through"] += ids.numel()
            past = kwargs.get("past_key_values")
            seen = past.get_seq_length() if past is not None and hasattr(past, "get_seq_length") else 0
            tokens["longest"] = max(tokens["longest"], int(seen) + ids.shape[-1])

    runner.model.register_forward_pre_hook(count, with_kwargs=True)
    parameters = sum(p.numel() for p in runner.model.parameters())
    weights = sum(p.numel() * p.element_size() for p in runner.model.parameters())
    text = runner.model.config.get_text_config()
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    kv_per_token = 2 * text.num_hidden_layers * getattr(text, "num_key_value_heads", text.num_attention_heads) * head
    runner.generate(rows[:2])  # warm-up
    for batch in batches:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        tokens.update(through=0, longest=0)
        start = time.perf_counter()
        for i in range(0, len(rows), batch):
            runner.generate(rows[i:i + batch])
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        out[f"batch {batch} pairs/s"] = round(len(rows) / seconds, 1)
        flops = 2 * parameters * tokens["through"] / seconds
        guess = weights + kv_per_token * tokens["longest"] * batch * next(runner.model.parameters()).element_size()
        if device.startswith("cuda"):
            out[f"batch {batch} peak GiB"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        out[f"batch {batch} estimate GiB"] = round(guess / 2**30, 4)
        out[f"batch {batch} MFU"] = shown(mfu(flops, torch.cuda.get_device_name()) if device.startswith("cuda") else None)
    out["parameters"] = parameters
    out["peak RSS MiB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
    return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_peaks.py
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--real-size", action="store_true")
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    batches = [1, 8, 32] if args.real_size else [1, 8]
    if args.child:
        print(json.dumps(child(args.child, args.device, args.real_size, batches, args.pairs)))
        return
    archs = ["qwen2_vl"] if args.real_size else ["qwen2_vl", "llava_onevision", "idefics3"]
    if args.device.startswith("cuda"):
        import torch
        import transformers

        from gpu_peaks import gpu_model

        name = torch.cuda.get_device_name()
        print(f"{name} ({gpu_model(name) or 'no peak in gpu_peaks.py'}), torch {torch.__version__}, "
              f"transformers {transformers.__version__}")
    for arch in archs:
        cmd = [sys.executable, __file__, "--child", arch, "--device", args.device, "--pairs", str(args.pairs)]
        cmd += ["--real-size"] if args.real_size else []
        line = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        print(json.loads(line))


if __name__ == "__main__":
    main()

"""``--judge`` throughput: questions per second of :class:`~idc_toolkit.judge.backends.LocalJudge`
at batch 1, 8 and 32, on the judge's real prompts (CLEVR-Change-like pairs: one difference, one
claim, a quarter no-change), and peak memory.

By default the tiny random chat LM on CPU (the mechanics only). On a GPU, ``--real-size`` builds
a randomly initialised model of Qwen2.5-7B-Instruct's published layout (28 layers, 3584 wide,
28 heads / 4 KV heads, vocabulary 152064; bf16) with the tiny tokenizer, so the figure is the
default judge's cost without downloading it; ``--model PATH`` measures any local judge.

    python benchmarks/judge_speed.py [--device cuda] [--real-size | --model PATH] [--questions 256]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

#: Qwen/Qwen2.5-7B-Instruct's config.json (the published values that set its cost)
QWEN25_7B = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
             "rms_norm_eps": 1e-6, "tie_word_embeddings": False}


def real_size_model(folder: Path, device: str):
    """Qwen2.5-7B-Instruct's layout, random bf16 weights, built on ``device`` (nothing written)."""
    import torch
    from transformers import AutoConfig, Qwen2Config, Qwen2ForCausalLM

    tiny = AutoConfig.from_pretrained(folder)
    config = Qwen2Config(**QWEN25_7B, bos_token_id=tiny.bos_token_id, eos_token_id=tiny.eos_token_id,
                         pad_token_id=tiny.pad_token_id)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).eval()
    torch.set_default_dtype(torch.float32)
    return model


def prompts(n: int) -> list[str]:
    from idc_toolkit.judge.questions import ask

    out: list[str] = []
    k = 0
    while len(out) < n:
        no_change = k % 4 == 3
        caption = "the scene is unchanged" if no_change else f"the small red cube number {k} has been moved to the left"
        refs = ["nothing has changed"] * 3 if no_change else [f"the tiny red cube {k} moved", f"a red cube {k} changed its place"]
        out += ask(str(k), caption, refs, refs[:1], no_change).prompts()
        k += 1
    return out[:n]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--real-size", action="store_true")
    p.add_argument("--model")
    p.add_argument("--questions", type=int, default=256)
    a = p.parse_args()
    import torch

    import transformers

    from idc_toolkit.demo.tiny import save_tiny_chat_lm
    from idc_toolkit.judge.backends import LocalJudge

    model = a.model or str(save_tiny_chat_lm(Path(tempfile.mkdtemp(prefix="idc-judge-bench-")) / "chat"))
    asked = prompts(a.questions)
    results = {"model": a.model or ("Qwen2.5-7B-Instruct layout, random bf16 weights, tiny tokenizer" if a.real_size
                                    else "tiny random chat LM"),
               "device": torch.cuda.get_device_name() if a.device.startswith("cuda") else a.device,
               "questions": len(asked), "mean prompt tokens": None, "torch": torch.__version__,
               "transformers": transformers.__version__}
    judge = LocalJudge(model, device=a.device, batch_size=1)
    if a.real_size:
        judge.model = real_size_model(Path(model), a.device)
    results["mean prompt tokens"] = round(sum(len(judge.tokenizer(judge.text(p))["input_ids"]) for p in asked) / len(asked))
    for batch in (1, 8, 32):
        judge.batch_size = batch
        judge.answer(asked[:batch])  # warm-up
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        judge.answer(asked)
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        peak = (torch.cuda.max_memory_allocated() / 2**30 if a.device.startswith("cuda")
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        results[f"batch {batch}"] = {"questions_per_s": round(len(asked) / seconds, 2),
                                     "prompt_tokens_per_s": round(len(asked) * results["mean prompt tokens"] / seconds),
                                     "peak_GiB": round(peak, 2)}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

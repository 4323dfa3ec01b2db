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


def build(folder: Path, real_size: bool) -> Path:
    from idc_toolkit.demo.tiny import save_tiny_chat_lm

    save_tiny_chat_lm(folder)
    if real_size:
        import torch
        from transformers import AutoConfig, Qwen2Config, Qwen2ForCausalLM

        tiny = AutoConfig.from_pretrained(folder)
        config = Qwen2Config(**QWEN25_7B, bos_token_id=tiny.bos_token_id, eos_token_id=tiny.eos_token_id,
                             pad_token_id=tiny.pad_token_id)
        with torch.device("cuda"):
            Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    return folder


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

    from idc_toolkit.judge.backends import LocalJudge

    model = a.model or str(build(Path(tempfile.mkdtemp(prefix="idc-judge-bench-")), a.real_size))
    asked = prompts(a.questions)
    results = {"model": a.model or ("Qwen2.5-7B layout, random weights" if a.real_size else "tiny random chat LM"),
               "device": a.device, "questions": len(asked), "torch": torch.__version__}
    for batch in (1, 8, 32):
        judge = LocalJudge(model, device=a.device, batch_size=batch)
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
        results[f"batch {batch}"] = {"questions_per_s": round(len(asked) / seconds, 2), "peak_GiB": round(peak, 2)}
        del judge
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Generation speed of the checkpoint runners (pairs/s), batched, through the real code path.

By default it builds tiny random BLIP-2 and InstructBLIP models (CPU-sized) and captions the
demo test pairs. On a GPU, ``--real-size`` builds BLIP-2 OPT-2.7B's layout with random bf16
weights (``train_speed.py``'s real-size base) for BLIP2IDC; or pass real weights:

    python benchmarks/generate_speed.py [--pairs 64] [--batch-size 8] [--device auto]
    python benchmarks/generate_speed.py --real-size --device cuda --batch-size 32 --pairs 96 --max-new-tokens 20
    python benchmarks/generate_speed.py --blip2-base Salesforce/blip2-opt-2.7b --blip2-adapter weights/spot_sota/... --device cuda
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.runs.rows import decode_image, open_split
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_runner_class
    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip
    from idc_toolkit.devices import resolve_device

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--device", default="auto")
    p.add_argument("--real-size", action="store_true", help="BLIP2IDC on BLIP-2 OPT-2.7B's layout, random bf16 weights")
    p.add_argument("--blip2-base")
    p.add_argument("--blip2-adapter")
    p.add_argument("--max-new-tokens", type=int, default=77)
    args = p.parse_args()
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        raw = generate_demo_release(tmp / "raw", n_per_type=max(2, args.pairs // 2), seed=5)
        build_dataset(make_builder("clevr_change", raw), tmp / "ds", progress=False)
        source = open_split(str(tmp / "ds"), "train")[0]
        rows = [{**r, "before": decode_image(r["before"]), "after": decode_image(r["after"]), "entities": ["cube"]}
                for r in source.read(0, min(args.pairs, len(source)))]
        if args.real_size:
            import sys

            sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_speed.py
            from train_speed import save_real_size

            args.blip2_base = str(save_real_size("blip2idc", tmp / "blip2_real_size", device))
        configs = [("blip2idc", args.blip2_base or str(save_tiny_blip2(tmp / "blip2")), args.blip2_adapter)]
        if not args.blip2_base:
            configs.append(("davir", str(save_tiny_instructblip(tmp / "iblip")), None))
        for name, base, adapter in configs:
            runner = get_runner_class(name)(base, adapter, device, "auto", DatasetFacts(builder="clevr_change", pair_style="scene"),
                                            options={"max_new_tokens": args.max_new_tokens})
            # every pair generates the same number of tokens: random weights would stop at once
            for model in (runner.model, runner.model.language_model):  # BLIP-2's LM generates under its own config
                model.generation_config.min_new_tokens = runner.inputs.max_new_tokens
            runner.generate(rows[: args.batch_size])  # warm-up
            t = time.perf_counter()
            for k in range(0, len(rows), args.batch_size):
                runner.generate(rows[k : k + args.batch_size])
            dt = time.perf_counter() - t
            kind = "real-size random" if args.real_size else "tiny random" if not args.blip2_base else "given"
            print(f"{name:9s} ({kind} model, {device}, batch {args.batch_size}, max_new_tokens {args.max_new_tokens}): "
                  f"{len(rows) / dt:6.1f} pairs/s")


if __name__ == "__main__":
    main()

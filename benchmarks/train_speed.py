"""Training speed and memory of ``idc-train``, both recipes, tiny random models on this machine.

Builds the demo dataset (with change masks and entities for DAVIR), then runs ``idc-train``
as a separate process per recipe for ``--steps`` optimizer steps at ``--batch-size`` and prints
steps/s, samples/s (model start-up excluded: measured from the Trainer's own runtime) and the
peak RSS of the process. The real BLIP-2 OPT-2.7B / InstructBLIP-Vicuna-7B configurations at
batch 16 in bf16 need a GPU, which this project's machines do not have: not measured here.

    python benchmarks/train_speed.py [--steps 40] [--batch-size 8]

It then prints ``idc-train --dry-run``'s figures for the real configurations, built from their
published sizes (BLIP-2 OPT-2.7B: EVA ViT-g 1408x39, Q-Former 768x12, OPT-2.7B 2560x32;
InstructBLIP-Vicuna-7B: the same ViT and Q-Former, Llama-7B 4096x32) on the meta device: exact
parameter counts and the memory estimate of one step at batch 16 in bf16, with and without
gradient checkpointing. Measuring those on a GPU is what the estimate is to be checked against.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def main() -> None:
    from processes import measure

    from idc_toolkit.builders import make_builder

    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.entities.column import add_change_entities
    from idc_toolkit.masks.column import add_change_masks
    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=8)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw = generate_demo_release(root / "raw", n_per_type=10, size=(112, 84), seed=1)
        build_dataset(make_builder("clevr_change", raw), root / "ds", progress=False)
        add_change_masks(root / "ds", root / "masks", device="cpu", progress=False)
        clip = root / "tiny-clip-bench.json"
        clip.write_text(json.dumps({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8,
                                                                    "head_width": 16},
                                    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}))
        ents = add_change_entities(root / "masks", root / "ents", clip_model="tiny-clip-bench", clip_config=str(clip),
                                   device="cpu", progress=False, random_weights=True)
        runs = {"blip2idc": (save_tiny_blip2(root / "blip2"), root / "ds"), "davir": (save_tiny_instructblip(root / "iblip"), ents.out_dir)}
        print(f"idc-train, tiny random models, CPU ({args.steps} steps, batch {args.batch_size}, no validation)")
        print("| recipe | steps/s | samples/s | wall (incl. start-up) | peak RSS |\n| --- | ---: | ---: | ---: | ---: |")
        for name, (base, data) in runs.items():
            out = root / f"run_{name}"
            cmd = [sys.executable, "-m", "idc_toolkit.cli.train", "--model", name, "--dataset", str(data), "--out", str(out),
                   "--base-model", str(base), "--max-steps", str(args.steps), "--batch-size", str(args.batch_size),
                   "--val-split", "", "--device", "cpu", "--no-progress", "--report-to", "none", "--lr", "1e-3"]
            wall, peak = measure(cmd)
            runtime = json.loads((out / "train_config.json").read_text())["trainer_metrics"]["train_runtime"]
            print(f"| {name} | {args.steps / runtime:.1f} | {args.steps * args.batch_size / runtime:.1f} | {wall:.1f} s | "
                  f"{peak / 2**20:.0f} MB |")


def real_size_configs() -> dict:
    """The two papers' base configurations, from their published sizes (no download)."""
    from transformers import Blip2Config, InstructBlipConfig, LlamaConfig, OPTConfig

    vision = dict(hidden_size=1408, intermediate_size=6144, num_hidden_layers=39, num_attention_heads=16, image_size=224,
                  patch_size=14)
    qformer = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                   encoder_hidden_size=1408, cross_attention_frequency=2)
    opt = OPTConfig(vocab_size=50272, hidden_size=2560, ffn_dim=10240, num_hidden_layers=32, num_attention_heads=32,
                    word_embed_proj_dim=2560, max_position_embeddings=2048)
    llama = LlamaConfig(vocab_size=32001, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                        num_attention_heads=32, max_position_embeddings=2048)
    return {"blip2idc": Blip2Config(vision_config=vision, qformer_config=qformer, text_config=opt.to_dict(), num_query_tokens=32),
            "davir": InstructBlipConfig(vision_config=vision, qformer_config={**qformer, "vocab_size": 30523},
                                        text_config=llama.to_dict(), num_query_tokens=32)}


def real_size_estimates() -> None:
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_settings
    from idc_toolkit.training.estimate import estimate

    names = {"blip2idc": "BLIP-2 OPT-2.7B", "davir": "InstructBLIP-Vicuna-7B"}
    print("\nidc-train --dry-run on the real configurations (meta device; batch 16, bf16)")
    print("| recipe (base) | parameters | trainable | weights | LoRA state | activations | total | total, checkpointing |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, config in real_size_configs().items():
            folder = Path(tmp) / name
            config.save_pretrained(folder)
            cls = get_recipe_class(name)
            facts = DatasetFacts(builder="clevr_change", pair_style="scene")
            rows = []
            for ckpt in (False, True):
                s = resolve_settings(cls, facts, TrainArgs(name, dataset="data", out="run", base_model=str(folder), batch_size=16,
                                                           dtype="bfloat16", val_split=None, gradient_checkpointing=ckpt))
                rows.append(estimate(cls, s, facts, "cpu"))
            e, c = rows
            gib = 2 ** 30
            print(f"| {name} ({names[name]}) | {sum(e.parameters.values()) / 1e9:.2f} B | {sum(e.trainable.values()) / 1e6:.2f} M "
                  f"| {e.weight_bytes / gib:.1f} GiB | {e.lora_state_bytes / gib:.2f} GiB | {e.activation_bytes / gib:.1f} GiB "
                  f"| {e.total_bytes / gib:.1f} GiB | {c.total_bytes / gib:.1f} GiB |")


if __name__ == "__main__":
    if "--estimates-only" in sys.argv:
        real_size_estimates()
    else:
        main()
        real_size_estimates()

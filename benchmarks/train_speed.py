"""Training speed and memory of ``idc-train``, both recipes, tiny random models on this machine.

Builds the demo dataset (with change masks and entities for DAVIR), then runs ``idc-train``
as a separate process per recipe for ``--steps`` optimizer steps at ``--batch-size`` and prints
steps/s, samples/s (model start-up excluded: measured from the Trainer's own runtime) and the
peak RSS of the process. The real BLIP-2 OPT-2.7B / InstructBLIP-Vicuna-7B configurations at
batch 16 in bf16 need a GPU, which this project's machines do not have: not measured here.

    python benchmarks/train_speed.py [--steps 40] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def main() -> None:
    from processes import measure

    from idc_toolkit.building.pipeline import build_dataset, make_builder
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.entities.column import add_change_entities
    from idc_toolkit.masks.column import add_change_masks
    from idc_toolkit.models.tiny import save_tiny_blip2, save_tiny_instructblip

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
        ents = add_change_entities(root / "masks", root / "ents", "tiny-clip-bench", None, str(clip), device="cpu",
                                   progress=False, random_weights=True)
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


if __name__ == "__main__":
    main()

"""Edits per second of idc-augment's editor (InstructPix2Pix), batched per source row.

Default: a tiny random pipeline on the CPU (the code path, not a quality figure). On a GPU
machine with a real pipeline:

    python benchmarks/augment_speed.py [--rows 8] [--edits 8] [--steps 4]
    python benchmarks/augment_speed.py --editor timbrooks/instruct-pix2pix --device cuda --steps 20 --resolution 512
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from PIL import Image

    from idc_toolkit.augment import AugmentConfig, Editor, edit_seed
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.demo.tiny import save_tiny_instruct_pix2pix
    from idc_toolkit.devices import resolve_device

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--editor")
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--edits", type=int, default=8)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--device", default="auto")
    args = p.parse_args()
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        raw = generate_demo_release(Path(tmp) / "raw", n_per_type=2, seed=1)
        images = [Image.open(f).convert("RGB") for f in sorted((raw / "images").iterdir())][: args.rows]
        editor = Editor(args.editor or str(save_tiny_instruct_pix2pix(Path(tmp) / "ip2p")), device)
        cfg = AugmentConfig(edits_per_image=args.edits, steps=args.steps, resolution=args.resolution)
        editor.edit(images[0], "add a red cube", [0], cfg)  # warm-up
        t = time.perf_counter()
        for k, img in enumerate(images):
            editor.edit(img, "add a red cube", [edit_seed(0, str(k), e) for e in range(args.edits)], cfg)
        dt = time.perf_counter() - t
    kind = "given" if args.editor else "tiny random"
    print(f"{kind} InstructPix2Pix on {device}, {args.steps} steps, long side {args.resolution}, {args.edits} edits per row: "
          f"{len(images) * args.edits / dt:.1f} edits/s")


if __name__ == "__main__":
    main()

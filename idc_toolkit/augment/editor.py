"""The image editor of the Syned recipe: a diffusers InstructPix2Pix pipeline with stored seeds.

The seed of edit k of a row is derived from ``--seed``, the row's pair id and k and stored
in the ``seed`` column; a row's edits are generated as one batch (one generator per edit),
so :func:`reproduce_edits` regenerates them bit for bit.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..errors import IDCError


def edit_seed(seed: int, pair_id: str, k: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{pair_id}/{k}".encode()).digest()[:4], "little")


def editor_input(image, resolution: int):
    """RGB, long side at most ``resolution``, both sides multiples of 8 (the VAE's stride)."""
    from PIL import Image

    rgb = image.convert("RGB")
    scale = min(1.0, resolution / max(rgb.size))
    w, h = (max(8, int(rgb.width * scale) // 8 * 8), max(8, int(rgb.height * scale) // 8 * 8))
    return rgb.resize((w, h), Image.BICUBIC) if (w, h) != rgb.size else rgb


class Editor:
    """``StableDiffusionInstructPix2PixPipeline`` from a name or folder, on ``device``."""

    def __init__(self, path: str, device: str = "cpu"):
        import torch
        from diffusers import StableDiffusionInstructPix2PixPipeline

        if not Path(path).exists() and "/" not in path:
            raise IDCError(f"editor {path!r} not found")
        self.pipe = StableDiffusionInstructPix2PixPipeline.from_pretrained(path, safety_checker=None, requires_safety_checker=False)
        self.pipe.set_progress_bar_config(disable=True)
        self.pipe = self.pipe.to(device)
        self.device, self.torch, self.name = device, torch, path

    def edit(self, image, instruction: str, seeds: list[int], cfg) -> list[Any]:
        """``len(seeds)`` edits of ``image`` in one batch, one seeded generator each."""
        src = editor_input(image, cfg.resolution)
        gens = [self.torch.Generator(device="cpu").manual_seed(s) for s in seeds]
        out = self.pipe(prompt=[instruction] * len(seeds), image=[src] * len(seeds), num_inference_steps=cfg.steps,
                        guidance_scale=cfg.guidance_scale, image_guidance_scale=cfg.image_guidance_scale, generator=gens)
        return list(out.images)


def reproduce_edits(editor: Editor, image, instruction: str, seeds: list[int], cfg) -> list[Any]:
    """The edits of one row again, bit for bit (same seeds, same batch)."""
    return editor.edit(image, instruction, seeds, cfg)

"""How the runners turn a before/after pair into model input images."""

from __future__ import annotations

import hashlib
from typing import Optional

from PIL import Image

def pair_seed(pair_id: str) -> int:
    return int.from_bytes(hashlib.sha256(pair_id.encode()).digest()[:4], "little")


def stacked_pair(before: Image.Image, after: Image.Image, resize_blur: bool = False,
                 pair_id: Optional[str] = "") -> Image.Image:
    """BLIP2IDC's input: the before image on top, the after image below, on one canvas.

    For edit-style pairs (``resize_blur``: IER, Emu Edit, Syned, MagicBrush; the dataset
    card's ``pair_style``) BLIP2IDC first resizes the before image to
    the after image's size (bicubic) and blurs the pair with torchvision's
    ``GaussianBlur(3, sigma=(0.1, 0.5))``, which draws sigma at random on every call; here
    sigma is drawn from the same range with a seed derived from the pair id, so a rerun
    gives the same image. ``pair_id=None`` draws it from torch's generator on every call, as
    torchvision's transform does (``idc-train --variant released``).
    """
    from ..presentation import stack

    b, a = before.convert("RGB"), after.convert("RGB")
    if resize_blur:
        b = b.resize(a.size, Image.BICUBIC)
    canvas = stack(b, a)  # the VLM runner's --presentation stacked
    if resize_blur:
        import random

        import torchvision.transforms.functional as TF

        if pair_id is None:
            import torch

            sigma = float(torch.empty(1).uniform_(0.1, 0.5))
        else:
            sigma = random.Random(pair_seed(pair_id)).uniform(0.1, 0.5)
        canvas = TF.gaussian_blur(canvas, kernel_size=[3, 3], sigma=[sigma, sigma])
    return canvas

"""Soft patch masks: a binary change mask on a vision encoder's patch grid (DAVIR eq. 6 as we
read it): average-pooled to the grid, then Gaussian-blurred so that patches next to the change
get some weight. DAVIR's attention loss and the entity retrieval's mask pooling read it."""

from __future__ import annotations

from typing import Union


def _gaussian_kernel(sigma: float, radius: int):
    import torch

    x = torch.arange(-radius, radius + 1, dtype=torch.float32)
    k = torch.exp(-(x**2) / (2 * sigma**2))
    return k / k.sum()


def soft_patch_mask(mask, grid: Union[int, tuple[int, int]], sigma: float = 1.0):
    """``(B, H, W)`` or ``(H, W)`` binary masks -> ``(B, gh, gw)`` soft masks in [0, 1]."""
    import torch
    import torch.nn.functional as F

    m = torch.as_tensor(mask, dtype=torch.float32)
    if m.dim() == 2:
        m = m[None]
    gh, gw = (grid, grid) if isinstance(grid, int) else grid
    pooled = F.adaptive_avg_pool2d(m[:, None], (gh, gw))
    if sigma > 0:
        radius = max(1, int(round(3 * sigma)))
        k = _gaussian_kernel(sigma, radius).to(pooled)
        pooled = F.pad(pooled, (radius, radius, radius, radius), mode="replicate")
        pooled = F.conv2d(pooled, k.view(1, 1, 1, -1))
        pooled = F.conv2d(pooled, k.view(1, 1, -1, 1))
    return pooled[:, 0].clamp(0, 1)

"""Soft patch masks and the focus-alignment (FAC) loss of DAVIR, for users who train.

``soft_patch_mask`` is DAVIR eq. 6 as we read it: the binary change mask average-pooled to the
vision encoder's patch grid, then Gaussian-blurred so that patches next to the change get
some weight. ``fac_kl_loss`` is eq. 7 as we read it: the KL divergence from the soft mask,
normalised into a distribution over patches, to the model's final-layer CLS-to-patch
attention (also normalised), averaged over the pairs whose mask is not empty (a pair with no
change carries no target). Both readings are interpretations: the paper's code is not public.
"""

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


def fac_kl_loss(attention, soft_mask, eps: float = 1e-8):
    """KL(soft mask || attention) over patches, mean over pairs with a non-empty mask.

    ``attention``: ``(B, N)`` or ``(B, gh, gw)`` non-negative CLS-to-patch weights;
    ``soft_mask``: the same shape, from :func:`soft_patch_mask`.
    """
    import torch

    a = attention.reshape(attention.shape[0], -1).float()
    m = soft_mask.reshape(soft_mask.shape[0], -1).float().to(a.device)
    mass = m.sum(dim=1)
    valid = mass > eps
    if not bool(valid.any()):
        return a.sum() * 0.0  # keeps the graph, contributes nothing
    p = m[valid] / mass[valid, None]
    q = a[valid] / a[valid].sum(dim=1, keepdim=True).clamp_min(eps)
    kl = (p * (torch.log(p.clamp_min(eps)) - torch.log(q.clamp_min(eps)))).sum(dim=1)
    return kl.mean()

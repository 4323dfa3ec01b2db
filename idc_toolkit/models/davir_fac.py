"""DAVIR's focus-alignment (FAC) loss (``idc-train --model davir``), eq. 7 on the final-layer
attention against eq. 6's soft mask (:func:`idc_toolkit.masks.patch_masks.soft_patch_mask`).

Eq. 7 has two readings here (``fac_loss(..., reading=...)``):

* ``paper`` (the default of ``idc-train``) — as the paper writes it:
  ``KL(σ(A_bef) ‖ σ(M̂)) + KL(σ(A_aft) ‖ σ(M̂))`` with σ a softmax over the patches, A the
  final-layer CLS-to-patch attention of each image and M̂ the soft mask; every pair counts
  (a pair without a change has a uniform σ(M̂)). Note that σ flattens both arguments: the
  attention weights already sum to one and M̂ lies in [0, 1], so their softmaxes stay close to
  uniform and the loss is small.
* ``normalised`` — our earlier reading (:func:`fac_kl_loss`): the mask and the attention each
  divided by their sum, ``KL(M̂ ‖ A)`` (the mask as the target distribution), pairs without a
  change skipped (no target). It gives a stronger gradient towards the change.
"""

from __future__ import annotations


def fac_kl_loss(attention, soft_mask, eps: float = 1e-8):
    """KL(soft mask || attention) over patches, mean over pairs with a non-empty mask.

    ``attention``: ``(B, N)`` or ``(B, gh, gw)`` non-negative CLS-to-patch weights;
    ``soft_mask``: the same shape, from :func:`~idc_toolkit.masks.patch_masks.soft_patch_mask`.
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


FAC_READINGS = ("paper", "normalised")


def fac_paper_kl(attention, soft_mask):
    """``KL(softmax(A) ‖ softmax(M̂))`` per pair (eq. 7's term as written), ``(B,)``."""
    import torch

    a = attention.reshape(attention.shape[0], -1).float()
    m = soft_mask.reshape(soft_mask.shape[0], -1).float().to(a.device)
    log_p = torch.log_softmax(a, dim=1)
    log_q = torch.log_softmax(m, dim=1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=1)


def fac_loss(attention_before, attention_after, soft_mask, reading: str = "paper"):
    """DAVIR's L_attn for a batch: the before and after terms summed, mean over the batch
    (``paper``) or over the pairs with a change (``normalised``); see the module docstring."""
    if reading == "paper":
        return (fac_paper_kl(attention_before, soft_mask) + fac_paper_kl(attention_after, soft_mask)).mean()
    if reading == "normalised":
        return fac_kl_loss(attention_before, soft_mask) + fac_kl_loss(attention_after, soft_mask)
    from ..errors import IDCError

    raise IDCError(f"unknown FAC reading {reading!r}; choose {', '.join(FAC_READINGS)}")


def attention_on_mask(attention, soft_mask):
    """How much of each image's attention lies on the change: ``sum_i a_i m_i / sum_i a_i`` for
    attention ``(B, 2, N)`` over N = g*g patches and eq. 6's soft mask ``(B, g, g)`` (the mask
    value the attention expects; uniform attention gives the mask's mean). Pairs without a
    change give NaN. What FAC aims to raise (DAVIR Fig. 4)."""
    import torch

    m = torch.as_tensor(soft_mask).float().flatten(1)  # (B, N)
    att = attention.float()
    share = (att * m[:, None, :]).sum(-1) / att.sum(-1).clamp_min(1e-12)  # (B, 2)
    share[m.sum(1) == 0] = float("nan")
    return share

"""What the training callbacks exchange between ``torchrun`` / ``accelerate launch`` ranks.

One process: every function is the identity. Several: ``torch.distributed``'s object
collectives over the process group the Trainer (accelerate) set up.
"""

from __future__ import annotations

from typing import Any


def _world() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_to_first(obj: Any) -> list[Any]:
    """``[obj of rank 0, obj of rank 1, ...]`` on rank 0 (``[]`` elsewhere); ``[obj]`` alone."""
    if _world() == 1:
        return [obj]
    import torch.distributed as dist

    out = [None] * _world() if dist.get_rank() == 0 else None
    dist.gather_object(obj, out, dst=0)
    return out or []


def share_from_first(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if _world() == 1:
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def sum_over_ranks(values: dict[str, float]) -> dict[str, float]:
    """``values`` summed key by key over the ranks (every rank gets the sums)."""
    if _world() == 1:
        return values
    import torch.distributed as dist

    parts = [None] * _world()
    dist.all_gather_object(parts, values)
    total: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            total[k] = total.get(k, 0.0) + v
    return total

"""Which rank this process is under torchrun / accelerate launch, and the barrier between ranks."""

from __future__ import annotations

import os


def dist_info() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the torchrun / accelerate environment."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def init_distributed() -> None:
    """Join the torchrun / accelerate process group (once). The engine only needs barriers
    (ranks exchange nothing but "done"), so gloo serves CPU and GPU jobs alike."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")


def barrier() -> None:
    if dist_info()[1] > 1:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.barrier()

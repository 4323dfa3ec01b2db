"""Which rank this process is under torchrun / accelerate launch, the barrier between ranks, and
leaving the process group before the interpreter exits."""

from __future__ import annotations

import atexit
import os
import sys


def dist_info() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the torchrun / accelerate environment."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def init_distributed() -> None:
    """Join the torchrun / accelerate process group (once). The engine only needs barriers
    (ranks exchange nothing but "done"), so gloo serves CPU and GPU jobs alike."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")
        atexit.register(leave_distributed)  # a Python caller's process too, not only the console scripts'


def in_group() -> bool:
    """Whether this process has joined a process group (torch is never imported to ask)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def leave_distributed() -> None:
    """Destroy this process's process group, if it has one, while the interpreter is whole. Left to
    the interpreter's exit, gloo's threads abort a process whose work is done (``terminate called
    without an active exception``: 2 of 12 torchrun jobs of a two-rank all_gather_object and barrier
    on the project's machines)."""
    if in_group():
        sys.modules["torch.distributed"].destroy_process_group()


def barrier() -> None:
    if dist_info()[1] > 1 and in_group():
        sys.modules["torch.distributed"].barrier()

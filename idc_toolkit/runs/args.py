"""How a run-engine job is split and where it runs: one dataclass, the same options on
``idc-build``'s API, ``idc-precompute``, ``idc-augment`` and ``idc-eval --model``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from .. import checks
from ..options import check_fields, option


def shard_check(flag: str, value: Any) -> tuple[int, int]:
    """``"i/n"`` or ``(i, n)`` -> ``(i, n)``, checked."""
    from .rows import parse_shard

    return parse_shard(value if isinstance(value, str) else "/".join(str(v) for v in value))


@dataclass
class EngineArgs:
    """Which rows this job writes and which engine writes them; checked when made."""

    shard: Union[str, tuple[int, int]] = option("0/1", "i/n: this job writes block i of n contiguous blocks of rows",
                                                 check=shard_check)
    engine: str = option("local", "local: this process (or torchrun ranks); ray: Ray Data actors", choices=("local", "ray"))
    ray_address: Optional[str] = option(None, "with --engine ray: the cluster address (default: a local Ray instance)")
    ray_actors: Optional[int] = option(None, "with --engine ray: actors (default: one per CPU, or per GPU for GPU work; at "
                                             "most one per part)", check=checks.positive_int)
    ray_gpus_per_actor: float = option(0.0, "with --engine ray: GPUs per actor (default: 1 with --device cuda, else none)",
                                       check=checks.non_negative_float)

    def __post_init__(self) -> None:
        check_fields(self)  # the shard, the ranges and the engine's choices

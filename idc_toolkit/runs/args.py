"""How a run-engine job is split and where it runs: one dataclass, the same options on
``idc-build``'s API, ``idc-precompute``, ``idc-augment`` and ``idc-eval --model``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from .. import checks
from ..options import check_fields, option, required
from ..stores import STORE_DATASET, STORE_OUT


def shard_check(flag: str, value: Any) -> tuple[int, int]:
    """``"i/n"`` or ``(i, n)`` -> ``(i, n)``, checked."""
    from .rows import parse_shard

    return parse_shard(value if isinstance(value, str) else "/".join(str(v) for v in value))


@dataclass
class EngineArgs:
    """Which rows this job writes and which engine writes them; checked when made."""

    # where and how the rows are written, never what they hold: none of these enters a fingerprint
    shard: Union[str, tuple[int, int]] = option("0/1", "i/n: this job writes block i of n contiguous blocks of rows",
                                                 check=shard_check, record=False)
    engine: str = option("local", "local: this process (or torchrun ranks); ray: Ray Data actors", choices=("local", "ray"),
                         record=False)
    ray_address: Optional[str] = option(None, "with --engine ray: the cluster address (default: a local Ray instance)",
                                        record=False)
    ray_actors: Optional[int] = option(None, "with --engine ray: actors (default: one per CPU, or per GPU for GPU work; at "
                                             "most one per part)", check=checks.positive_int, record=False)
    ray_gpus_per_actor: float = option(0.0, "with --engine ray: GPUs per actor (default: 1 with --device cuda, else none)",
                                       check=checks.non_negative_float, record=False)

    def __post_init__(self) -> None:
        check_fields(self)  # the shard, the ranges and the engine's choices


def rows_per_part_option(default: Optional[int], unit: str = "rows", aliases: tuple[str, ...] = ()) -> Any:
    """``--rows-per-part``: one help and check; each command's default suits its work (a build's
    records are cheap, an augmented row costs seconds of diffusion); ``aliases``: its old names."""
    return option(default, f"{unit} per part (the resume and sharding unit)", check=checks.positive_int, aliases=aliases)


@dataclass(kw_only=True)
class RunArgs(EngineArgs):
    """The options every command that turns a dataset into an output folder repeats (idc-precompute,
    idc-augment, idc-caption): a command's options class derives from it and adds its own."""

    dataset: str = required("a folder written by idc-build, or a Hub dataset id" + STORE_DATASET, record=False)
    out: str = required("output folder (resumable; shared by --shard jobs)" + STORE_OUT, record=False)
    overwrite: bool = option(False, "replace --out when it holds a run with other settings", record=False)
    device: str = option("auto", "auto (CUDA when present) | cpu | cuda[:N]", record=False)
    rows_per_part: Optional[int] = rows_per_part_option(500)
    progress: bool = option(True, "hide progress bars", record=False)

"""The diff pipeline's parameters: one dataclass whose fields carry each parameter's default, range
check and help (the command line, the card and the docs' table are derived from it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from .. import checks
from ..options import check_fields, option
from ..runs.args import RunArgs


#: the pipeline's revision, bumped whenever the same :class:`MaskParams` give other masks: a masks run
#: records it, so a folder begun by another revision is refused on resume instead of mixing two
#: revisions' masks
PIPELINE_REVISION = 9


@dataclass(frozen=True)
class MaskParams:
    """Parameters of the diff pipeline; all are recorded in the dataset card. The command line
    takes :data:`CLI_PARAMS`; the rest are set from Python."""

    #: why this value: benchmarks/mask_quality.md, `resize`
    resize: int = option(512, 'working resolution (long side, pixels)', check=checks.positive_int)
    #: floor of the threshold on the envelope distance (0-255 levels, aligned)
    delta: float = option(10.0, 'floor of the difference threshold (0-255 levels, after alignment)', check=checks.non_negative_float)
    #: the threshold is max(delta, noise_k * the pair's noise level)
    noise_k: float = option(10.0, "threshold = max(delta, noise_k x the pair's noise level)", check=checks.non_negative_float)
    #: DBSCAN neighbourhood radius (working-resolution pixels)
    eps: float = option(2.0, 'DBSCAN radius (pixels)', check=checks.positive_float)
    #: DBSCAN core-point count, the point itself included
    min_samples: int = option(6, 'DBSCAN core-point neighbours', check=checks.positive_int)
    #: largest camera shift searched (working-resolution pixels)
    max_shift: int = option(4, 'largest camera shift compensated (pixels)', check=checks.non_negative_int)
    #: also estimate the sub-pixel remainder of the shift (SAM prompts and clean pairs use it)
    subpixel: bool = option(True, 'estimate the sub-pixel part of the camera shift (it maps SAM prompts and tells a clean pair)')
    #: IoU a SAM mask needs with its cluster's region to be kept
    tau: float = option(0.5, 'SAM mask kept when its IoU with the cluster reaches this', check=checks.unit_interval)
    #: why this value: benchmarks/mask_quality.md, `keep_unmatched`
    keep_unmatched: bool = option(False, "with SAM, keep a cluster's diff region when no SAM mask reaches --tau (default: drop it, as DAVIR)")
    #: why this value: benchmarks/mask_quality.md, `clean_min_samples`
    clean_min_samples: int = option(3, 'DBSCAN core-point neighbours on a clean pair', check=checks.positive_int)
    clean_min_region: int = option(4, '... and its smallest cluster', check=checks.non_negative_int)
    #: why this value: benchmarks/mask_quality.md, `grow`
    grow: int = option(2, 'hysteresis steps into the partly covered edge pixels, on a pair that is not clean (0: none)', check=checks.non_negative_int)
    clean_subpixel: float = option(0.1, 'a pair is clean when its sub-pixel shift is under this (pixels, both axes) ...', check=checks.non_negative_float)
    clean_noise: float = option(0.3, "... and its noise level under this (0-255 levels; its plain difference's median also at most delta / noise-k)", check=checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `texture_grow_k`
    texture_grow_k: float = option(4.0, 'on a pair that is not clean, the growth also follows the plain difference above this x the median of pixels of like texture (0: off)', check=checks.non_negative_float)
    #: why this value: benchmarks/mask_quality.md, `prune_k`
    prune_k: float = option(3.0, 'on a pair that is not clean, a small cluster whose median plain difference is under this x that of pixels of like texture is dropped (0: off) ...', check=checks.non_negative_float)
    prune_pixels: int = option(200, '... when it has fewer pixels than this', check=checks.non_negative_int)
    #: why this value: benchmarks/mask_quality.md, `fill_holes`
    fill_holes: bool = option(True, 'per-pixel change masks, not hole-filled, closed 3x3 only where the pair is not clean (default: whole objects)')

    def __post_init__(self) -> None:
        check_fields(self)  # refused where set, in one line naming it

    def to_dict(self) -> dict:
        return asdict(self)


#: what the command line takes: DAVIR's knobs (resize, delta, eps, min_samples, tau) and four more
CLI_PARAMS = ("resize", "delta", "eps", "min_samples", "tau", "noise_k", "max_shift", "keep_unmatched", "fill_holes")


def file_name(path: Optional[str]) -> Optional[str]:
    """How a model file is recorded beside its content hash: by its name, never the user's path."""
    return Path(path).name if path else None


@dataclass(kw_only=True)
class MasksArgs(RunArgs):
    """``idc-precompute masks``' run options: the shared ones and the Segment Anything model (the
    diff pipeline's are :class:`MaskParams`)."""

    # recorded by name; the run records the checkpoint's content hash beside it
    sam_checkpoint: Optional[str] = option(None, "Segment Anything checkpoint; without it, the diff clusters' regions",
                                           record=file_name)
    sam_type: str = option("vit_h", "vit_h | vit_l | vit_b | tiny")

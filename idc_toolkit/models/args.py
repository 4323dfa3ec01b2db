"""What ``idc-eval --model`` is given besides the scoring options: the checkpoint to run and how
to run it. One dataclass: the command line's "checkpoint runs" group is derived from its fields,
and :func:`~idc_toolkit.models.generation.generate_predictions` takes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import checks
from ..options import check_fields, option


@dataclass
class GenerateArgs:
    """The checkpoint (base, revision, adapter) and the generation run's settings."""

    base_model: Optional[str] = option(None, "base model name or local path")
    revision: Optional[str] = option(None, "base model revision (Hub)")
    adapter: Optional[str] = option(None, "LoRA adapter: a folder or a Hub model id (peft; adapter_model.safetensors or the "
                                          "old adapter_model.bin)")
    adapter_revision: Optional[str] = option(None, "the adapter's revision, when --adapter is a Hub id")
    batch_size: int = option(8, "pairs per generation batch", check=checks.positive_int)
    device: str = option("auto", "auto | cpu | cuda[:N]")
    dtype: str = option("auto", "model dtype", choices=("auto", "float32", "bfloat16", "float16"))
    limit: Optional[int] = option(None, "only the first N pairs of the split", check=checks.positive_int)
    predict_only: bool = option(False, "write predictions.jsonl, do not score")
    reverse: bool = option(False, "also caption every pair with before and after swapped (into OUT/reversed/) and score "
                                  "reversibility (docs/scoring.md)")
    rows_per_part: Optional[int] = option(None, "pairs per part, the resume and sharding unit (default: --batch-size)",
                                          check=checks.positive_int)

    def __post_init__(self) -> None:
        check_fields(self)

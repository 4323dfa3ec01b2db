"""``idc-build``'s options: one dataclass; the command line, :func:`idc_toolkit.build_dataset`
and the build's fingerprint are derived from its fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from .. import checks
from ..errors import IDCError
from ..options import check_fields, option, python_only
from ..runs.args import rows_per_part_option, shard_check
from ..stores import STORE_OUT

DEFAULT_ROWS_PER_PART = 2000


def shard_size(flag: str, value: Any) -> int:
    """``500MB`` / ``2GB`` / ``1GiB`` / ``1048576`` -> bytes, in ``datasets``' convention
    (``convert_file_size_to_int``: MB = 10**6, MiB = 2**20), the one ``push_to_hub``'s
    ``max_shard_size`` uses; an int is bytes already."""
    if isinstance(value, int) and not isinstance(value, bool):
        return checks.non_negative_int(flag, value)
    from datasets.utils.py_utils import convert_file_size_to_int

    text = str(value).strip()
    try:
        return int(text) if text.isdigit() else convert_file_size_to_int(text)
    except ValueError:
        raise IDCError(f"{flag}: not a size: {text!r} (use e.g. 500MB, 1GiB or a number of bytes)") from None


def builder_config(flag: str, value: Any) -> Any:
    """``KEY=VALUE`` (one, as the command line gives it) or their list or a dict -> a dict."""
    if isinstance(value, str):
        if "=" not in value:
            raise IDCError(f"{flag} takes KEY=VALUE, not {value!r}")
        return value
    if isinstance(value, Mapping):
        return dict(value)
    return dict(builder_config(flag, kv).split("=", 1) for kv in value)


@dataclass
class BuildArgs:
    """How a raw release is built; the builder's own options are ``config``."""

    # the builder, its resolved config and the raw files' listing are recorded by build_fields
    raw: Optional[str] = option(None, "folder of the raw release", record=False)
    out: Optional[str] = option(None, "output folder (parquet shards, README.md card, croissant.json, build_report.json)"
                                      + STORE_OUT, record=False)
    config: Union[dict[str, str], list[str]] = option((), "builder option (repeatable)", check=builder_config,
                                                      metavar="KEY=VALUE", repeat=True, record=False)
    strict: bool = option(False, "fail on the first skipped or repaired record", record=False)
    overwrite: bool = option(False, "replace an output folder that holds another build", record=False)
    max_shard_bytes: Union[int, str] = option("500MB", "split the data as push_to_hub does: int(Arrow bytes / this) + 1 "
                                                       "shards of even rows (500MB = 500*10**6 bytes)",
                                              check=shard_size, flag="--max-shard-size", metavar="SIZE")
    rows_per_part: int = rows_per_part_option(DEFAULT_ROWS_PER_PART, "records")
    verify_images: str = option("fast", "fast: structural checks without decoding; full: decode every image",
                                choices=("fast", "full"))
    progress: bool = option(True, "hide progress bars", record=False)
    # set, it is the build's rows_per_part and its max_shard_bytes is 0: each part one shard
    max_shard_rows: Optional[int] = python_only("records per output shard (each part becomes one shard)", lambda: None,
                                                check=checks.positive_int, record=False)
    shard: Any = python_only("i/n: this job writes block i of n contiguous blocks of records", lambda: (0, 1),
                             check=shard_check, record=False)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.max_shard_rows is not None:
            self.rows_per_part, self.max_shard_bytes = self.max_shard_rows, 0

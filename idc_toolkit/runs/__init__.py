"""The run engine: every long job's output folder, resume, sharding, ranks and Ray.

* :mod:`.fingerprint` — what an output depends on, and which fields changed;
* :mod:`.folder` — the folder: fingerprint check, locks, parts, atomic finalisation;
* :mod:`.rows` — row sources addressable by range, the part grid, ``--shard i/n``;
* :mod:`.engine` — one process, torch.distributed ranks, or Ray actors over the parts;
* :mod:`.ranks` — which torchrun rank this is, the barrier, leaving the group before exit;
* :mod:`.parquet` — parquet options and the assembly of parts into Hub-layout shards;
* :mod:`.columns` — the column pass (a dataset in, the same dataset with new columns out).
"""

from typing import TYPE_CHECKING

#: each public name and the module holding it, imported at first use: scoring a predictions file
#: needs the fingerprints and the folder, not pyarrow's and tqdm's imports (0.12 s)
_WHERE = {"EngineArgs": "args", "RunArgs": "args", "ColumnPass": "columns", "PassResult": "columns",
          "run_column_pass": "columns", "PartOutput": "engine", "RowTask": "engine", "run_job": "engine",
          "dist_info": "ranks", "digest": "fingerprint", "listing_fingerprint": "fingerprint",
          "path_content": "fingerprint", "RunFolder": "folder", "assemble": "parquet", "open_split": "rows",
          "parse_shard": "rows"}

__all__ = list(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    from .args import EngineArgs, RunArgs
    from .columns import ColumnPass, PassResult, run_column_pass
    from .engine import PartOutput, RowTask, run_job
    from .fingerprint import digest, listing_fingerprint, path_content
    from .folder import RunFolder
    from .parquet import assemble
    from .ranks import dist_info
    from .rows import open_split, parse_shard

"""The run engine: every long job's output folder, resume, sharding, ranks and Ray.

* :mod:`.fingerprint` — what an output depends on, and which fields changed;
* :mod:`.folder` — the folder: fingerprint check, locks, parts, atomic finalisation;
* :mod:`.rows` — row sources addressable by range, the part grid, ``--shard i/n``;
* :mod:`.engine` — one process, torch.distributed ranks, or Ray actors over the parts;
* :mod:`.ranks` — which torchrun rank this is, and the barrier;
* :mod:`.parquet` — parquet options and the assembly of parts into Hub-layout shards;
* :mod:`.columns` — the column pass (a dataset in, the same dataset with new columns out).
"""

from .args import EngineArgs
from .columns import ColumnPass, PassResult, run_column_pass
from .engine import PartOutput, RowTask, run_job
from .ranks import dist_info
from .fingerprint import digest, listing_fingerprint, path_content
from .folder import RunFolder
from .parquet import assemble
from .rows import open_split, parse_shard

__all__ = ["ColumnPass", "EngineArgs", "PassResult", "run_column_pass", "PartOutput", "RowTask", "dist_info", "run_job", "digest",
           "listing_fingerprint", "path_content", "RunFolder", "assemble", "open_split", "parse_shard"]

"""Masks pass on the three engines: rows/s and peak memory, side by side in one run.

    python benchmarks/engines.py [--pairs 400] [--size 224]

The same job (diff-only change masks of real-photo pairs) runs as one process, as two
``torchrun`` ranks (gloo, CPU) and on Ray Data with two actors (a local Ray instance with
2 CPUs). Peak memory is the largest sum of RSS over the job's process tree (sampled every
0.1 s), so it counts every rank or Ray process. The three folders are checked to be
byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from processes import measure  # noqa: E402


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + p.read_bytes())
    return h.hexdigest()[:12]


RAY = """
import sys, ray
from idc_toolkit.masks import add_change_masks
from idc_toolkit.runs import EngineArgs
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
add_change_masks(sys.argv[1], sys.argv[2], device="cpu", progress=False, engine=EngineArgs(engine="ray", ray_actors=2),
                 rows_per_part=int(sys.argv[3]))
"""
ONE = """
import sys
from idc_toolkit.masks import add_change_masks
add_change_masks(sys.argv[1], sys.argv[2], device="cpu", progress=False, rows_per_part=int(sys.argv[3]))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=400)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--rows-per-part", type=int, default=50)
    args = p.parse_args()
    from photo_pairs import pasted_pairs, write_pairs_dataset

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds = write_pairs_dataset(tmp / "ds", pasted_pairs(args.pairs, args.size))
        rpp = str(args.rows_per_part)
        runs = {
            "1 process": [sys.executable, "-c", ONE, str(ds), str(tmp / "one"), rpp],
            "2 torchrun ranks (gloo)": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                                        "-m", "idc_toolkit.cli.precompute", "-q", "masks", "--dataset", str(ds), "--out",
                                        str(tmp / "ranks"), "--device", "cpu", "--rows-per-part", rpp, "--no-progress"],
            "Ray Data, 2 actors (2 CPUs)": [sys.executable, "-c", RAY, str(ds), str(tmp / "ray"), rpp],
        }
        outs = {"1 process": "one", "2 torchrun ranks (gloo)": "ranks", "Ray Data, 2 actors (2 CPUs)": "ray"}
        print(f"masks pass, {args.pairs} real-photo pairs at {args.size}x{args.size}, diff-only, {args.rows_per_part} rows per part")
        print("| engine | wall s | rows/s | peak RSS (process tree) | folder digest |\n| --- | ---: | ---: | ---: | --- |")
        for name, cmd in runs.items():
            seconds, peak = measure(cmd)
            print(f"| {name} | {seconds:.1f} | {args.pairs / seconds:.1f} | {peak / 2**20:.0f} MB | {digest(tmp / outs[name])} |")
        print("(wall time includes start-up: Python imports, the process group, the Ray instance)")


if __name__ == "__main__":
    main()

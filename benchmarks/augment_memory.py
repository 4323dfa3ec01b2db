"""idc-augment's peak memory against the number of source rows: it streams, so it stays flat.

    python benchmarks/augment_memory.py [--rows 50 400] [--size 448]

Each run augments a source split of N real-photo pairs (``--size`` PNGs, one parquet file with
100-row row groups, as the toolkit writes datasets)
with a tiny random InstructPix2Pix pipeline and a tiny random chat model (1 edit, 1 step,
32 px: the models are not what is measured), in a fresh process; peak RSS is sampled over
that process (:mod:`processes`). The source's own size on disk is printed beside it: a pipeline that loaded the
split would grow with it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from processes import measure  # noqa: E402

CHILD = """
import sys
from idc_toolkit.augment import AugmentConfig, Models, augment_dataset
cfg = AugmentConfig(edits_per_image=1, paraphrases=1, steps=1, resolution=32, rows_per_part=25, paraphrase_tries=1)
augment_dataset(sys.argv[1], sys.argv[2], Models(sys.argv[3], sys.argv[4]), cfg, split="train", progress=False)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[50, 400])
    p.add_argument("--size", type=int, default=448)
    args = p.parse_args()
    from photo_pairs import pasted_pairs, write_pairs_dataset

    from idc_toolkit.demo.tiny import save_tiny_chat_lm, save_tiny_instruct_pix2pix

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        editor, lm = save_tiny_instruct_pix2pix(tmp / "ip2p"), save_tiny_chat_lm(tmp / "lm")
        print("| source rows | source parquet | peak RSS | wall |\n| ---: | ---: | ---: | ---: |")
        for n in args.rows:
            ds = write_pairs_dataset(tmp / f"src{n}", pasted_pairs(n, args.size))
            size = sum(f.stat().st_size for f in (ds / "data").glob("*.parquet"))
            seconds, peak = measure([sys.executable, "-c", CHILD, str(ds), str(tmp / f"aug{n}"), str(editor), str(lm)])
            print(f"| {n} | {size / 2**20:.0f} MB | {peak / 2**20:.0f} MB | {seconds:.0f} s |")


if __name__ == "__main__":
    main()

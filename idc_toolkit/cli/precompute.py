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


def make_parser():
    from ..masks.params import CLI_PARAMS, MaskParams
    from ..options import add_options, cli_fields

    p = common.parser("idc-precompute", "Add change masks or change entities to a dataset in the idc-toolkit schema.")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("masks", help="change_mask, change_boxes, mask_source", formatter_class=common.HelpFormatter,
                       description="Change masks: diff clusters, optionally refined by Segment Anything.")
    _add_run_options(m)
    m.add_argument("--sam-checkpoint", help="Segment Anything checkpoint; without it, the diff clusters' regions")
    m.add_argument("--sam-type", default="vit_h", help="vit_h | vit_l | vit_b | tiny")
    add_options(m, MaskParams, CLI_PARAMS)  # flag, default, check and help from each field

    e = sub.add_parser("entities", help="entities, entity_scores, gt_entities", formatter_class=common.HelpFormatter,
                       description="Change entities: spaCy phrases retrieved from the images with open_clip.")
    _add_run_options(e)
    from ..entities.params import EntityParams

    add_options(e, EntityParams, cli_fields(EntityParams))
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        run = {"progress": not args.no_progress, "overwrite": args.overwrite, "device": args.device,
               "rows_per_part": args.rows_per_part, "engine": common.engine_args(args)}
        from ..options import from_namespace

        if args.what == "masks":
            from ..masks import MaskParams, add_change_masks
            from ..masks.params import CLI_PARAMS

            params = from_namespace(MaskParams, args, CLI_PARAMS)
            result = add_change_masks(args.dataset, args.out, params, args.sam_checkpoint, args.sam_type, **run)
        else:
            from ..entities import EntityParams, add_change_entities

            params = from_namespace(EntityParams, args)
            result = add_change_entities(args.dataset, args.out, params, **run)
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

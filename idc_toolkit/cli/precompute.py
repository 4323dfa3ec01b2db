"""``idc-precompute masks|entities --dataset D --out O``: add precomputed columns to a dataset.

Both passes run on the run engine: resumable, fingerprinted (a rerun with other settings is
refused unless ``--overwrite``), ``--shard i/n`` for job arrays, ``torchrun`` ranks, or
``--engine ray`` for a Ray cluster.
"""

from __future__ import annotations

import sys

from . import common


def make_parser():
    from ..entities.params import EntitiesArgs, EntityParams
    from ..masks.params import CLI_PARAMS, MaskParams, MasksArgs
    from ..options import add_options, cli_fields

    p = common.parser("idc-precompute", "Add change masks or change entities to a dataset in the idc-toolkit schema.")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("masks", help="change_mask, change_boxes, mask_source", formatter_class=common.HelpFormatter,
                       description="Change masks: diff clusters, optionally refined by Segment Anything.")
    common.add_run_options(m, MasksArgs)  # flag, default, check and help from each field
    add_options(m, MaskParams, CLI_PARAMS)

    e = sub.add_parser("entities", help="entities, entity_scores, gt_entities", formatter_class=common.HelpFormatter,
                       description="Change entities: spaCy phrases retrieved from the images with open_clip.")
    common.add_run_options(e, EntitiesArgs)
    add_options(e, EntityParams, cli_fields(EntityParams))
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        from ..options import from_namespace

        if args.what == "masks":
            from ..masks import add_change_masks
            from ..masks.params import CLI_PARAMS, MaskParams, MasksArgs

            result = add_change_masks(params=from_namespace(MaskParams, args, CLI_PARAMS), args=from_namespace(MasksArgs, args))
        else:
            from ..entities import add_change_entities
            from ..entities.params import EntitiesArgs, EntityParams

            result = add_change_entities(params=from_namespace(EntityParams, args), args=from_namespace(EntitiesArgs, args))
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

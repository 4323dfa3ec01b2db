"""``idc-augment``: Syned-style edited pairs with paraphrased references (see idc_toolkit.augment)."""

from __future__ import annotations

import json
import sys

from ..checks import arg_type, positive_int
from ..errors import IDCError
from . import common


def make_parser():
    from ..augment import AugmentConfig

    d = AugmentConfig()
    p = common.parser("idc-augment", "InstructPix2Pix edits + LLM paraphrased references, as a dataset (BLIP2IDC's Syned recipe).")
    p.add_argument("--dataset", "--source", dest="source", required=True,
                   help="an idc-build folder or Hub dataset id with before images and instructions" + common.STORE_DATASET)
    p.add_argument("--split", default="train", help="source split to augment")
    p.add_argument("--limit", type=arg_type(positive_int, "--limit"), help="only the first N rows of the split (a trial run)")
    p.add_argument("--instruction-column", help="column holding the instruction (default: the first of captions)")
    p.add_argument("--editor", help="diffusers InstructPix2Pix pipeline: name or local folder (not with --paraphrase-only)")
    p.add_argument("--paraphrase-only", action="store_true",
                   help="no editing: the source pairs with instruction + paraphrases as references (Syned's test references)")
    p.add_argument("--paraphraser", required=True, help="transformers chat model with a chat template: name or folder")
    p.add_argument("--out", required=True, help="output folder (resumable; shared by --shard jobs)" + common.STORE_OUT)
    p.add_argument("--overwrite", action="store_true", help="replace --out when it holds a run with other settings")
    p.add_argument("--edits-per-image", type=int, default=d.edits_per_image, help="edits per source row")
    p.add_argument("--paraphrases", type=int, default=d.paraphrases, help="paraphrases per instruction")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of every edit and paraphrase (stored per edit)")
    p.add_argument("--steps", type=int, default=d.steps, help="InstructPix2Pix denoising steps (our choice)")
    p.add_argument("--guidance-scale", type=float, default=d.guidance_scale, help="text guidance (our choice)")
    p.add_argument("--image-guidance-scale", type=float, default=d.image_guidance_scale, help="image guidance (our choice)")
    p.add_argument("--resolution", type=int, default=d.resolution, help="long side of the images given to the editor")
    p.add_argument("--rows-per-part", "--rows-per-shard", dest="rows_per_part", type=int, default=d.rows_per_part,
                   help="source rows per part (the resume unit; --rows-per-shard is its old name)")
    p.add_argument("--paraphrase-tries", type=int, default=d.paraphrase_tries, help="LLM calls per row to reach --paraphrases")
    p.add_argument("--clip-filter", type=float, help="drop edits whose CLIP directional similarity is below this")
    p.add_argument("--clip-model", help="open_clip model for --clip-filter")
    p.add_argument("--clip-checkpoint", help="open_clip weights for --clip-model (random without)")
    p.add_argument("--clip-config", help="an open_clip model config JSON to register")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N]")
    common.add_engine_options(p)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        from ..augment import AugmentConfig, Models, augment_dataset
        from ..devices import resolve_device

        cfg = AugmentConfig(edits_per_image=args.edits_per_image, paraphrases=args.paraphrases, seed=args.seed, steps=args.steps,
                            guidance_scale=args.guidance_scale, image_guidance_scale=args.image_guidance_scale,
                            resolution=args.resolution, rows_per_part=args.rows_per_part,
                            paraphrase_tries=args.paraphrase_tries, clip_filter=args.clip_filter,
                            paraphrase_only=args.paraphrase_only)
        models = Models(args.editor, args.paraphraser, args.clip_model, args.clip_checkpoint, args.clip_config)
        report = augment_dataset(args.source, args.out, models, cfg, args.split, args.instruction_column,
                                 device=resolve_device(args.device) if args.engine == "local" else args.device,
                                 overwrite=args.overwrite, progress=not args.no_progress, limit=args.limit,
                                 engine=common.engine_args(args))
        print(json.dumps(report, indent=1, default=str))
        if report["complete"] and report.get("edits") == 0 and not args.paraphrase_only:
            raise IDCError(f"no edited pair was kept (CLIP filter rejections: {report.get('rejected_by_clip')}); "
                           f"see {args.out}/augment_report.json")
        if not report["complete"]:
            print("the folder is incomplete until the other --shard jobs finish (the job that completes it writes the card)")
        return 0

    return common.run("idc-augment", work)


if __name__ == "__main__":
    sys.exit(main())

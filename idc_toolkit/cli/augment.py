"""``idc-augment``: Syned-style edited pairs with paraphrased references (see idc_toolkit.augment)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import IDCError


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="idc-augment", description="InstructPix2Pix edits + LLM paraphrased references, as a dataset.")
    p.add_argument("--source", required=True, help="an idc-build folder (or load_dataset name) with before images and instructions")
    p.add_argument("--split", default="train")
    p.add_argument("--instruction-column", help="column holding the instruction (default: the first of captions)")
    p.add_argument("--editor", required=True, help="diffusers InstructPix2Pix pipeline: name or local folder")
    p.add_argument("--paraphraser", required=True, help="transformers chat model with a chat template: name or folder")
    p.add_argument("--edits-per-image", type=int, default=8)
    p.add_argument("--paraphrases", type=int, default=4)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--guidance-scale", type=float, default=7.5)
    p.add_argument("--image-guidance-scale", type=float, default=1.5)
    p.add_argument("--resolution", type=int, default=512, help="long side of the images given to the editor")
    p.add_argument("--rows-per-shard", type=int, default=16, help="source rows per output shard (the resume unit)")
    p.add_argument("--paraphrase-tries", type=int, default=3)
    p.add_argument("--clip-filter", type=float, help="drop edits whose CLIP directional similarity is below this")
    p.add_argument("--clip-model", help="open_clip model for --clip-filter")
    p.add_argument("--clip-checkpoint")
    p.add_argument("--clip-config", help="an open_clip model config JSON to register")
    p.add_argument("--device", default="auto")
    p.add_argument("--shard", default="0/1", help="i/n: only every n-th chunk of source rows")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        from ..augment import AugmentConfig, ClipDirectional, Editor, augment_dataset
        from ..paraphrase import Paraphraser
        from ..precompute import parse_shard
        from ..sam_refine import resolve_device

        if args.clip_filter is not None and not args.clip_model:
            raise IDCError("--clip-filter needs --clip-model (and --clip-checkpoint for real weights)")
        shard = parse_shard(args.shard)
        device = resolve_device(args.device)
        cfg = AugmentConfig(edits_per_image=args.edits_per_image, paraphrases=args.paraphrases, seed=args.seed, steps=args.steps,
                            guidance_scale=args.guidance_scale, image_guidance_scale=args.image_guidance_scale,
                            resolution=args.resolution, rows_per_shard=args.rows_per_shard,
                            paraphrase_tries=args.paraphrase_tries, clip_filter=args.clip_filter)
        clip = ClipDirectional(args.clip_model, args.clip_checkpoint, device, args.clip_config) if args.clip_model else None
        report = augment_dataset(args.source, args.out, Editor(args.editor, device), Paraphraser(args.paraphraser, device), cfg,
                                 args.split, args.instruction_column, clip, shard, progress=not args.no_progress)
    except IDCError as exc:
        print(f"idc-augment: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1, default=str))
    if report["complete"] and report.get("edits") == 0:
        print(f"idc-augment: error: no edited pair was kept (CLIP filter rejections: {report.get('rejected_by_clip')}); "
              f"see {args.out}/augment_report.json", file=sys.stderr)
        return 1
    if not report["complete"]:
        print("run the remaining --shard values into the same --out; the run that completes it writes the card")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``idc-train``: fine-tune BLIP2IDC or DAVIR with LoRA (see :mod:`idc_toolkit.training`)."""

from __future__ import annotations

from . import common


def make_parser():
    from ..training.recipes import RECIPES

    p = common.parser("idc-train", "Fine-tune the checkpoints idc-eval --model runs: BLIP2IDC or DAVIR, LoRA, "
                                   "transformers.Trainer; resumable; the best adapter by validation CIDEr is kept.")
    p.add_argument("--model", required=True, choices=list(RECIPES), help="the recipe")
    p.add_argument("--dataset", required=True, help="an idc-build folder (DAVIR: after idc-precompute masks and entities)")
    p.add_argument("--split", default="train", help="training split")
    p.add_argument("--val-split", default="validation", help="validation split ('' for none: the last adapter is kept)")
    p.add_argument("--val-limit", type=int, default=0, help="caption only the first N validation pairs (0: all)")
    p.add_argument("--out", required=True, help="run folder (adapter/, checkpoints/, train_config.json, epochs.md)")
    p.add_argument("--overwrite", action="store_true", help="replace --out when it holds a run with other settings")
    p.add_argument("--base-model", help="name or folder (default: the recipe's: blip2-opt-2.7b / instructblip-vicuna-7b)")
    p.add_argument("--revision", help="base model revision (Hub)")
    p.add_argument("--epochs", type=float, help="default: the recipe's (BLIP2IDC 10, DAVIR 20)")
    p.add_argument("--batch-size", type=int, help="per device (default: 16, both papers)")
    p.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    p.add_argument("--lr", type=float, help="default: the recipe's (BLIP2IDC 1e-4, 5e-5 on CLEVR-DC; DAVIR 1e-5)")
    p.add_argument("--lora-rank", type=int, help="default: BLIP2IDC 8 (16 on CLEVR-Change); DAVIR 4 (8 on the LLM)")
    p.add_argument("--fac-weight", type=float, help="DAVIR: lambda of the attention loss (default: 0.1, eq. 12)")
    p.add_argument("--fac-reading", default="paper", choices=["paper", "normalised"],
                   help="DAVIR eq. 7: as the paper writes it, or our normalised reading (README)")
    p.add_argument("--max-steps", type=int, default=-1, help="stop after N optimizer steps (overrides --epochs)")
    p.add_argument("--save-steps", type=int, help="checkpoint every N steps (default: every epoch)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (ranks: torchrun / accelerate launch)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                   help="auto: bf16 (fp16 without bf16) mixed precision on GPU, float32 on CPU")
    p.add_argument("--pair-style", choices=["scene", "edit"], help="BLIP2IDC: override the card's pair style")
    p.add_argument("--num-entities", type=int, default=1, help="DAVIR: entities in the prompt")
    p.add_argument("--attention-every", type=int, default=0, metavar="N",
                   help="DAVIR: every N steps, Fig. 4-style attention pictures in OUT/attention/")
    p.add_argument("--report-to", default="auto", help="auto (TensorBoard when installed) | none | tensorboard,wandb")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        from ..training import train

        result = train(args.model, args.dataset, args.out, split=args.split, val_split=args.val_split or None,
                       base_model=args.base_model, revision=args.revision, epochs=args.epochs, batch_size=args.batch_size,
                       grad_accum=args.grad_accum, lr=args.lr, lora_rank=args.lora_rank, fac_weight=args.fac_weight,
                       fac_reading=args.fac_reading, max_steps=args.max_steps, save_steps=args.save_steps,
                       seed=args.seed, device=args.device, dtype=args.dtype, pair_style=args.pair_style,
                       num_entities=args.num_entities, val_limit=args.val_limit, attention_every=args.attention_every,
                       report_to=args.report_to, overwrite=args.overwrite, progress=not args.no_progress)
        if result.already_done:
            print(f"{result.out}: complete with these settings; nothing to do (adapter: {result.adapter})")
        else:
            print(f"{result.out}: adapter {result.adapter}" + (f"; per-epoch table {result.out / 'epochs.md'}" if result.epochs else ""))
        return 0

    return common.run("idc-train", work)


if __name__ == "__main__":
    raise SystemExit(main())

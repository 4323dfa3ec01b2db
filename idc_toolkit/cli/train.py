"""``idc-train``: fine-tune a registered model with LoRA (see :mod:`idc_toolkit.training`).

``idc-train --model NAME --help`` shows that recipe's own options, as ``idc-eval --model``
shows a runner's."""

from __future__ import annotations

from . import common


def _trainer_arg(text: str) -> tuple[str, object]:
    import argparse

    import yaml

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=value")
    name, value = text.split("=", 1)
    return name.strip(), yaml.safe_load(value) if value else ""


def make_parser(model: str | None = None):
    from ..checks import arg_type, non_negative_int, positive_float, positive_int, unit_interval
    from ..models.registry import trainable_models

    trainable = trainable_models()
    p = common.parser("idc-train", "Fine-tune the checkpoints idc-eval --model runs (BLIP2IDC, DAVIR) with LoRA on "
                                   "transformers.Trainer; resumable; the best adapter on validation is kept.")
    p.add_argument("--model", required=True, choices=trainable, help="the model (`--model NAME --help`: its options)")
    p.add_argument("--variant", help="the recipe's variant (blip2idc: ours | released; default: the first)")
    p.add_argument("--dataset", required=True, help="an idc-build folder (DAVIR: after idc-precompute masks and entities)" + common.STORE_DATASET)
    p.add_argument("--split", default="train", help="training split")
    p.add_argument("--val-split", default="validation", help="validation split ('' for none: the last adapter is kept)")
    p.add_argument("--val-limit", type=arg_type(non_negative_int, "--val-limit"), default=0,
                   help="validate on the first N pairs only (0: all)")
    p.add_argument("--out", required=True, help="run folder (adapter/, checkpoints/, train_config.json, epochs.md, steps.jsonl)" + common.STORE_OUT)
    p.add_argument("--overwrite", action="store_true", help="replace --out when it holds a training run with other settings")
    p.add_argument("--base-model", help="name or folder (default: the recipe's: blip2-opt-2.7b / instructblip-vicuna-7b)")
    p.add_argument("--revision", help="base model revision (Hub)")
    p.add_argument("--epochs", type=arg_type(positive_float, "--epochs"), help="default: the variant's")
    p.add_argument("--batch-size", type=arg_type(positive_int, "--batch-size"), help="per device (default: 16, both papers)")
    p.add_argument("--grad-accum", type=arg_type(positive_int, "--grad-accum"), default=1,
                   help="gradient accumulation steps (the loss is exact: the same as one batch N times larger)")
    p.add_argument("--lr", type=arg_type(positive_float, "--lr"), help="default: the dataset's (docs/training.md, its table)")
    p.add_argument("--lora-rank", type=arg_type(positive_int, "--lora-rank"), help="default: the dataset's (docs/training.md)")
    p.add_argument("--lora-dropout", type=arg_type(unit_interval, "--lora-dropout"), default=0.05,
                   help="dropout on the LoRA input (both papers: 0.05)")
    p.add_argument("--max-steps", type=arg_type(positive_int, "--max-steps"), default=-1,
                   help="stop after N optimizer steps (overrides --epochs; default: none)")
    p.add_argument("--save-steps", type=arg_type(positive_int, "--save-steps"), help="checkpoint every N steps (default: every epoch)")
    p.add_argument("--seed", type=arg_type(non_negative_int, "--seed"), default=0, help="seed of weights, order and reference draws")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (ranks: torchrun / accelerate launch)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                   help="the frozen base's dtype; auto: bf16 on a GPU with bf16 (fp16 otherwise), float32 on CPU")
    p.add_argument("--gradient-checkpointing", action="store_true", help="trade compute for memory (7B bases)")
    p.add_argument("--trainer-arg", action="append", type=_trainer_arg, default=[], metavar="NAME=VALUE",
                   help="any other TrainingArguments field (repeatable), e.g. warmup_steps=100")
    p.add_argument("--report-to", default="auto", help="auto (TensorBoard when installed) | none | tensorboard,wandb")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--push-to-hub", metavar="REPO", help="upload the kept adapter with its model card to this Hub model repo")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything, print parameters (total and trainable per module group) and an estimate of a "
                        "step's memory from the base's config; load no weights, write nothing")
    if model in trainable:
        from ..models.registry import get_recipe_class

        recipe = get_recipe_class(model)
        recipe.add_arguments(p.add_argument_group(f"{model} options"))
    return p


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)

    def work() -> int:
        from ..training import train

        args = make_parser(common.model_name(argv)).parse_args(argv)
        common.setup_logging(args)
        from ..models.registry import get_recipe_class

        own = list(get_recipe_class(args.model).option_defaults())
        result = train(args.model, args.dataset, args.out, split=args.split, val_split=args.val_split or None,
                       variant=args.variant, base_model=args.base_model, revision=args.revision, epochs=args.epochs,
                       batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr, lora_rank=args.lora_rank,
                       lora_dropout=args.lora_dropout,
                       max_steps=args.max_steps, save_steps=args.save_steps, seed=args.seed, device=args.device,
                       dtype=args.dtype, val_limit=args.val_limit, gradient_checkpointing=args.gradient_checkpointing,
                       options={k: getattr(args, k) for k in own}, trainer_args=dict(args.trainer_arg),
                       report_to=args.report_to, overwrite=args.overwrite, progress=not args.no_progress,
                       dry_run=args.dry_run, push_to_hub=args.push_to_hub)
        if result.estimate is not None:
            print(f"{args.model} ({result.settings.variant}) on {args.dataset}, batch {result.settings.batch_size}, "
                  f"base {result.settings.base_model}\n")
            print(result.estimate.render())
            return 0
        if result.already_done:
            print(f"{common.shown_out(args.out, result.out)}: complete with these settings; nothing to do (adapter: {result.adapter})")
        else:
            print(f"{common.shown_out(args.out, result.out)}: adapter {result.adapter}" + (f"; per-epoch table {result.out / 'epochs.md'}" if result.epochs else ""))
        return 0

    return common.run("idc-train", work)


if __name__ == "__main__":
    raise SystemExit(main())

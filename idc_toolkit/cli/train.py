"""``idc-train``: fine-tune a registered model with LoRA (see :mod:`idc_toolkit.training`).

``idc-train --model NAME --help`` shows that recipe's own options, as ``idc-eval --model``
shows a runner's."""

from __future__ import annotations

from . import common


def make_parser(model: str | None = None):
    from ..models.registry import trainable_models
    from ..options import add_options, cli_fields
    from ..training.args import TrainArgs

    p = common.parser("idc-train", "Fine-tune the checkpoints idc-eval --model runs (BLIP2IDC, DAVIR) with LoRA on "
                                   "transformers.Trainer; resumable; the best adapter on validation is kept.")
    add_options(p, TrainArgs, cli_fields(TrainArgs))
    if model in trainable_models():
        from ..models.registry import get_recipe_class

        recipe = get_recipe_class(model)
        recipe.add_arguments(p.add_argument_group(f"{model} options"))
    return p


def main(argv: list[str] | None = None) -> int:
    import dataclasses
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)

    def work() -> int:
        from ..options import from_namespace
        from ..training import TrainArgs, train, train_seeds

        args = make_parser(common.model_name(argv)).parse_args(argv)
        common.setup_logging(args)
        from ..models.registry import get_recipe_class

        targs = from_namespace(TrainArgs, args, options=from_namespace(get_recipe_class(args.model).Options, args))
        if targs.seeds and not targs.dry_run:
            for seed, result in zip(targs.seeds, train_seeds(targs)):
                print(f"seed {seed}: {common.shown_out(str(result.out), result.out)}: adapter {result.adapter}")
            print("score each with idc-eval --model ... --adapter OUT/seed_<N>/adapter, then compare them with "
                  "idc-eval leaderboard PREDICTIONS... --names (one label per system: mean and sd across seeds)")
            return 0
        result = train(targs if not targs.seeds else dataclasses.replace(targs, seeds=None))
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

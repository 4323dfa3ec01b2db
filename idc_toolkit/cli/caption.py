"""``idc-caption BEFORE AFTER --model NAME --base-model M [--adapter A] [--mask OUT.png] [--entities E]``: caption
one pair as ``idc-eval --model`` would (``--model NAME --help`` shows that model's options)."""

from __future__ import annotations

import sys

from . import common

#: the checkpoint options one pair needs (the batch, limit and parts are a dataset's)
CHECKPOINT_FIELDS = ("base_model", "revision", "adapter", "adapter_revision", "device", "dtype")


def make_parser(model: str | None = None):
    from ..caption import CaptionArgs
    from ..models.args import GenerateArgs
    from ..models.registry import MODELS
    from ..options import add_options, cli_fields

    p = common.parser("idc-caption", "Caption one pair of images with a model, as idc-eval --model captions a dataset.")
    p.add_argument("before", help="the before image")
    p.add_argument("after", help="the after image")
    add_options(p, CaptionArgs, cli_fields(CaptionArgs)[:1])
    add_options(p, GenerateArgs, CHECKPOINT_FIELDS, required=("base_model",))
    add_options(p, CaptionArgs, cli_fields(CaptionArgs)[1:])
    if model in MODELS:
        from ..models.registry import get_runner_class

        cls = get_runner_class(model)
        cls.add_arguments(p.add_argument_group(f"{model} options", cls.summary))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def work() -> int:
        from ..caption import CaptionArgs, caption
        from ..models.args import GenerateArgs
        from ..models.registry import get_runner_class
        from ..options import from_namespace

        args = make_parser(common.model_name(argv)).parse_args(argv)
        common.setup_logging(args)
        from ..devices import quiet_model_loading

        quiet_model_loading()
        run = from_namespace(GenerateArgs, args, CHECKPOINT_FIELDS, batch_size=1)
        options = get_runner_class(args.model).options(args)
        what = from_namespace(CaptionArgs, args, pair_style=getattr(options, "pair_style", None) or "scene")
        text = caption(args.before, args.after, what, run, options)
        print(text)  # stdout holds the caption line, empty or not
        if not text.strip():  # a blank line alone would read as a caption lost
            print(f"idc-caption: note: {args.model} wrote an empty caption for this pair", file=sys.stderr)
        if args.mask:
            print(f"change mask: {args.mask}", file=sys.stderr)
        return 0

    return common.run("idc-caption", work)


if __name__ == "__main__":
    raise SystemExit(main())

"""``idc-augment``: Syned-style edited pairs with paraphrased references (see idc_toolkit.augment)."""

from __future__ import annotations

import json
import sys

from ..errors import IDCError
from . import common


def make_parser():
    from ..augment import AugmentArgs

    p = common.parser("idc-augment", "InstructPix2Pix edits + LLM paraphrased references, as a dataset (BLIP2IDC's Syned recipe).")
    common.add_run_options(p, AugmentArgs, required=("paraphraser",))
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    common.setup_logging(args)

    def work() -> int:
        from ..augment import AugmentArgs, augment_dataset
        from ..options import from_namespace

        a = from_namespace(AugmentArgs, args)
        report = augment_dataset(args=a)
        print(json.dumps(report, indent=1, default=str))
        if report["complete"] and report.get("edits") == 0 and not a.paraphrase_only:
            raise IDCError(f"no edited pair was kept (CLIP filter rejections: {report.get('rejected_by_clip')}); "
                           f"see {a.out}/augment_report.json")
        if not report["complete"]:
            print("the folder is incomplete until the other --shard jobs finish (the job that completes it writes the card)")
        return 0

    return common.run("idc-augment", work)


if __name__ == "__main__":
    sys.exit(main())

"""The docs' reference tables, generated from the code that defines them.

``python docs/tables.py`` rewrites every block between ``<!-- table:NAME -->`` and
``<!-- /table:NAME -->`` in ``docs/*.md`` and the README; ``tests/test_docs_tables.py`` fails when one differs
from what the code says (a parameter added, a default changed, a plug-in registered), so no
table is typed twice.
"""

from __future__ import annotations

import re
import sys
from dataclasses import fields
from pathlib import Path

DOCS = Path(__file__).resolve().parent


def _row(*cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def mask_params() -> str:
    from idc_toolkit.masks.params import CLI_PARAMS, MaskParams
    from idc_toolkit.options import flag_of

    lines = [_row("field", "flag (— : Python only)", "default", "what it does"), _row("---", "---", "---:", "---")]
    for f in fields(MaskParams):
        flag = f"`{flag_of(f)}`" if f.name in CLI_PARAMS else "—"
        lines.append(_row(f"`{f.name}`", flag, f.default, f.metadata["help"]))
    return "\n".join(lines)


def protocols() -> str:
    from idc_toolkit.evaluators.protocols import PROTOCOLS

    lines = [_row("`--protocol`", "reproduces", "comparable with `rcc`"), _row("---", "---", "---")]
    for name in PROTOCOLS:
        cls = PROTOCOLS.get(name)
        lines.append(_row(f"`{name}`", PROTOCOLS.describe(name), "yes" if cls.comparable_with_rcc else "no"))
    return "\n".join(lines)


def metrics() -> str:
    from idc_toolkit.metrics.registry import METRICS, metric_class

    lines = [_row("`--metrics`", "aliases", "columns", "papers' short names", "also needs"), _row("---", "---", "---", "---", "---")]
    for family in METRICS:
        cls = metric_class(family)
        lines.append(_row(f"`{family}`", ", ".join(cls.aliases) or "", ", ".join(cls.columns),
                          ", ".join(f"{c}: {s}" for c, s in cls.paper_columns.items()),
                          "Stanford CoreNLP jars (`--spice-jars`); optional" if cls.optional
                          else "its own JVM" if cls.background else ""))
    return "\n".join(lines)


def datasets() -> str:
    """From the builder classes alone (a builder's categories may come from its release's files)."""
    from idc_toolkit.builders import BUILDERS

    lines = [_row("builder", "release", "pair style", "licence", "homepage"), _row("---", "---", "---", "---", "---")]
    for name in BUILDERS:
        cls = BUILDERS.get(name)
        lines.append(_row(f"`{name}`", BUILDERS.describe(name), cls.pair_style, cls.card.license, cls.card.homepage))
    return "\n".join(lines)


def raw_layouts() -> str:
    """Per builder: where to get the release, the layout it reads, its ``--config`` options."""
    import inspect

    from idc_toolkit.builders import BUILDERS

    parts = []
    for name in BUILDERS:
        cls = BUILDERS.get(name)
        card, config = cls.card, cls.config_class
        options = [f"`{f.name}={getattr(config(), f.name)!s}`".replace("=`", "=''`") for f in fields(config)]
        doc = " ".join(inspect.getdoc(config).split()) if options else ""
        parts.append("\n".join([
            f"### `{name}`: {card.pretty_name}", "",
            f"Download: {card.download}.", "",
            "```text", card.raw_layout.rstrip("\n"), "```",
            *(["", f"`--config` {', '.join(options)}: {doc}"] if options else [])]))
    return "\n\n".join(parts)


def extra_columns() -> str:
    """Every builder's columns beyond the schema's, from its ``extra_docs``."""
    from idc_toolkit.builders import BUILDERS

    lines = [_row("builder", "column", "what it holds"), _row("---", "---", "---")]
    for name in BUILDERS:
        for column, text in BUILDERS.get(name).extra_docs.items():
            lines.append(_row(f"`{name}`", f"`{column}`", text))
    return "\n".join(lines)


def readme_datasets() -> str:
    """The README's table: sizes as released, licence, where the images come from."""
    from idc_toolkit.builders import BUILDERS

    lines = [_row("`idc-build`", "release", "pairs (train / val / test)", "licence", "images from"), _row("---", "---", "---", "---", "---")]
    for name in BUILDERS:
        card = BUILDERS.get(name).card
        lines.append(_row(f"`{name}`", f"[{card.pretty_name}]({card.homepage})" if card.homepage.startswith("http")
                          else card.pretty_name, card.size, card.license, card.images_from))
    return "\n".join(lines)


def models() -> str:
    from idc_toolkit.models.registry import MODELS, get_runner_class, trainable_models

    lines = [_row("`--model`", "what it runs", "`idc-train`"), _row("---", "---", "---")]
    for name in MODELS:
        lines.append(_row(f"`{name}`", get_runner_class(name).summary, "yes" if name in trainable_models() else "no"))
    return "\n".join(lines)


def training_defaults() -> str:
    from idc_toolkit.models.registry import get_recipe_class, trainable_models

    lines = [_row("model", "dataset (builder)", "LoRA rank", "lr", "where from"), _row("---", "---", "---:", "---:", "---")]
    for model in trainable_models():
        for builder, d in get_recipe_class(model).dataset_defaults.items():
            lines.append(_row(f"`{model}`", f"`{builder}`" if builder else "any other", d.lora_rank, f"{d.lr:g}", d.source))
    return "\n".join(lines)


def judge_prompts() -> str:
    from idc_toolkit.judge.prompts import PROMPT_SHA, PROMPTS

    blocks = [f"`{name}`:\n\n```text\n{text}\n```" for name, text in PROMPTS.items()]
    return "\n\n".join(blocks) + f"\n\nTheir hash, in every judged run's fingerprint: `{PROMPT_SHA}`."


def multiple_choice() -> str:
    from idc_toolkit.multiple_choice import CHOICE_ORDER, CHOICE_ORDER_RULE, ONE_IMAGE_NOTE, PARSE_RULE, PARSE_STEPS, PROMPT

    steps = "\n".join(f"{k}. {step}." for k, step in enumerate(PARSE_STEPS, 1))
    return (f"The question (`{{question}}`: the item's; `{{options}}`: one `A. text` line per choice):\n\n```text\n{PROMPT}\n"
            f"```\n\nBefore it, where the model is shown the pair as one image:\n\n```text\n{ONE_IMAGE_NOTE.strip()}\n```\n\n"
            f"The choice order, `{CHOICE_ORDER}`: {CHOICE_ORDER_RULE}.\n\n"
            f"Reading an answer, `{PARSE_RULE}`: the steps in order, the first that gives a letter or calls the answer "
            f"unparsed decides.\n\n{steps}")


TABLES = {"mask-params": mask_params, "protocols": protocols, "metrics": metrics, "datasets": datasets,
          "readme-datasets": readme_datasets, "raw-layouts": raw_layouts, "extra-columns": extra_columns,
          "models": models, "training-defaults": training_defaults, "judge-prompts": judge_prompts,
          "multiple-choice": multiple_choice}
_BLOCK = re.compile(r"(<!-- table:([\w-]+) -->\n)(.*?)(<!-- /table:\2 -->)", re.S)


def render(text: str) -> str:
    """``text`` with every table block regenerated."""
    return _BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + "\n" + m.group(4), text)


def pages() -> list[Path]:
    """Every page with generated tables: the docs and the README."""
    return [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]


def main() -> int:
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"{page}: tables regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dataset cards: the template in ``templates/`` filled with what a build knows.

The YAML header is what the Hub and ``load_dataset`` read: ``configs`` (which files form
which split) and ``dataset_info`` (features, split sizes). The body documents the source,
the schema, category counts, what was skipped, the licence and the citations.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

import yaml

from . import citations

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Features

    from ..builder import PairBuilder
    from ..report import BuildReport

CORE_DOCS = {
    "pair_id": "the release's own id of the pair, unique within the dataset",
    "before": "the image before the change, the release's own encoded bytes",
    "after": "the image after the change",
    "captions": "every reference as released, in release order (empty strings kept)",
    "category": "the change category (ClassLabel)",
}


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` examples."""
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "1M<n<10M"


def card_yaml(builder: "PairBuilder", features: "Features", split_sizes: dict[str, dict[str, int]]) -> dict[str, Any]:
    total = sum(s["num_examples"] for s in split_sizes.values())
    nbytes = sum(s["num_bytes"] for s in split_sizes.values())
    return {
        "pretty_name": builder.card.pretty_name,
        "license": builder.card.license,
        "language": ["en"],
        "task_categories": list(builder.card.task_categories),
        "tags": ["image-difference-captioning", "change-captioning", "idc-toolkit"],
        "size_categories": [size_category(total)],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": split, "path": f"data/{split}-*"} for split in split_sizes],
            }
        ],
        "dataset_info": {
            "features": features._to_yaml_list(),
            "splits": [{"name": split, **sizes} for split, sizes in split_sizes.items()],
            "download_size": nbytes,
            "dataset_size": nbytes,
        },
    }


def _feature_type(feature: Any) -> str:
    name = type(feature).__name__
    if name == "ClassLabel":
        return f"ClassLabel({', '.join(feature.names)})"
    if name == "Value":
        return feature.dtype
    if name == "List":
        return f"list of {_feature_type(feature.feature)}"
    return name


def render_card(
    builder: "PairBuilder",
    features: "Features",
    split_sizes: dict[str, dict[str, int]],
    report: "BuildReport",
) -> str:
    from .. import __version__

    docs = {**CORE_DOCS, **builder.extra_docs}
    schema_table = "\n".join(
        f"| `{name}` | {_feature_type(feat)} | {docs.get(name, '')} |" for name, feat in features.items()
    )
    split_table = "\n".join(
        f"| {split} | {sizes['num_examples']} | {report.empty_captions.get(split, 0)} |"
        for split, sizes in split_sizes.items()
    )
    names = features["category"].names if "category" in features else None
    if names:
        header = "| category | " + " | ".join(split_sizes) + " |"
        rule = "| --- |" + " --- |" * len(split_sizes)
        rows = [
            f"| {n} | " + " | ".join(str(report.category_counts.get(s, {}).get(n, 0)) for s in split_sizes) + " |"
            for n in names
        ]
        category_section = "## Categories\n\n" + builder.card.category_note + "\n\n" + "\n".join([header, rule, *rows])
    else:
        category_section = "## Categories\n\nThe release has no change category, so the `category` column is absent."
    counts = report.to_dict()["counts"]
    problems_section = (
        f"Skipped {counts['skipped']} pairs, repaired {counts['repaired']} values, {counts['notes']} notes."
    )
    notes = [p for p in report.problems if p.action != "skipped"][:20]
    if notes:
        problems_section += "\n\n" + "\n".join(f"- {p.describe()}" for p in notes)
        if len(report.problems) > len(notes):
            problems_section += "\n- ..."
    for key, n in sorted(report.counters.items()):
        problems_section += f"\n- {key.replace('_', ' ')}: {n}"

    header_yaml = yaml.safe_dump(card_yaml(builder, features, split_sizes), sort_keys=False, allow_unicode=True)
    template = Template(resources.files(__package__).joinpath("templates/dataset_card.md").read_text(encoding="utf-8"))
    return template.substitute(
        yaml=header_yaml.rstrip("\n"),
        pretty_name=builder.card.pretty_name,
        description=builder.card.description,
        version=__version__,
        builder=builder.name,
        homepage=builder.card.homepage,
        download=builder.card.download,
        raw_files=", ".join(f"`{f}`" for f in builder.raw_files()),
        config=builder.config.to_dict(),
        raw_layout=builder.card.raw_layout.strip("\n"),
        schema_table=schema_table,
        split_table=split_table,
        category_section=category_section,
        problems_section=problems_section,
        license_note=builder.card.license_note,
        citation=builder.card.citation,
        toolkit_citation=citations.TOOLKIT,
    )


def write_card(
    out_dir: Path,
    builder: "PairBuilder",
    features: "Features",
    split_sizes: dict[str, dict[str, int]],
    report: "BuildReport",
) -> Path:
    path = Path(out_dir) / "README.md"
    path.write_text(render_card(builder, features, split_sizes, report), encoding="utf-8")
    return path

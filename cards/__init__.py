"""Dataset cards: the template in ``templates/`` filled with what a build knows.

The YAML header is what the Hub and ``load_dataset`` read: ``configs`` (which files form
which split) and ``dataset_info`` (features, split sizes). The body documents the source,
the schema, category counts, what was skipped, the licence and the citations.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any, Optional

from ..card_data import FACTS_KEY, RUN_KEY, files_description, source_label
from . import citations

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Features

    from ..facts import DatasetFacts

    from ..building.builder import PairBuilder
    from ..building.report import BuildReport
    from ..runs.parquet import SplitSummary


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


def dataset_card_data(*, pretty_name: str, license: str, features: "Features", summaries: dict[str, "SplitSummary"],
                      task_categories: list[str], task_ids: list[str], source_datasets: list[str], tags: list[str],
                      facts: "DatasetFacts", run_record: dict[str, Any], base: Optional[dict[str, Any]] = None):
    """The card's YAML as ``huggingface_hub``'s ``DatasetCardData``, with ``configs`` and
    ``dataset_info`` written by ``datasets``' own ``MetadataConfigs`` / ``DatasetInfosDict``:
    ``num_bytes`` is ``push_to_hub``'s estimate of each split (the run engine's
    ``hub_num_bytes``), ``dataset_size`` their sum and ``download_size`` parquet bytes. ``facts`` (pair style, categories, ...) are what consumers
    read back (:func:`~idc_toolkit.card_data.dataset_facts`); ``run_record`` is the run engine's fingerprint."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    kept = {k: v for k, v in (base or {}).items() if k not in ("configs", "dataset_info", FACTS_KEY, RUN_KEY)}
    total = sum(s.num_examples for s in summaries.values())
    data = DatasetCardData(**{
        **kept,
        "pretty_name": pretty_name, "license": license, "language": kept.get("language", ["en"]),
        "task_categories": task_categories, "task_ids": task_ids, "source_datasets": source_datasets,
        "tags": tags, "size_categories": [size_category(total)],
    })
    splits = SplitDict()
    for split, s in summaries.items():
        splits.add(SplitInfo(name=split, num_bytes=s.num_bytes, num_examples=s.num_examples))
    info = DatasetInfo(features=features, splits=splits, download_size=sum(s.download_bytes for s in summaries.values()),
                       dataset_size=sum(s.num_bytes for s in summaries.values()))
    MetadataConfigs({"default": {"data_files": [{"split": split, "path": f"data/{split}-*"} for split in summaries],
                                 "description": files_description(
                                     {split: s.fingerprint for split, s in summaries.items() if s.files})}}
                    ).to_dataset_card_data(data)
    DatasetInfosDict({"default": info}).to_dataset_card_data(data)
    data[FACTS_KEY] = facts.to_card()
    data[RUN_KEY] = run_record
    return data


def save_card(folder: Path, data, body: str) -> Path:
    """Write ``README.md`` with ``huggingface_hub``'s ``DatasetCard``."""
    from huggingface_hub import DatasetCard

    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body.strip()}\n")
    path = Path(folder) / "README.md"
    card.save(path)
    return path


def _feature_type(feature: Any) -> str:
    name = type(feature).__name__
    if name == "ClassLabel":
        return f"ClassLabel({', '.join(feature.names)})"
    if name == "Value":
        return feature.dtype
    if name == "List":
        return f"list of {_feature_type(feature.feature)}"
    return name


def render_build_body(builder: "PairBuilder", features: "Features", summaries: dict[str, "SplitSummary"],
                      report: "BuildReport") -> str:
    """The card's markdown body for a build (the template filled in)."""
    from .. import __version__

    docs = {**CORE_DOCS, **builder.extra_docs}
    schema_table = "\n".join(
        f"| `{name}` | {_feature_type(feat)} | {docs.get(name, '')} |" for name, feat in features.items()
    )
    split_table = "\n".join(
        f"| {split} | {s.num_examples} | {report.empty_captions.get(split, 0)} |" for split, s in summaries.items()
    )
    names = features["category"].names if "category" in features else None
    if names:
        from idc_toolkit.escape import markdown_table

        rows = [[n, *(report.category_counts.get(s, {}).get(n, 0) for s in summaries)] for n in names]
        lines = markdown_table(["category", *summaries], rows, ["---"] * (len(summaries) + 1))
        category_section = "## Categories\n\n" + builder.card.category_note + "\n\n" + "\n".join(lines)
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
    personal = builder.card.personal_info or (
        "The images come from the original release; idc-toolkit adds no personal information.")
    template = Template(resources.files(__package__).joinpath("templates/dataset_card.md").read_text(encoding="utf-8"))
    return template.substitute(
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
        personal_info=personal,
        license_note=builder.card.license_note,
        citation=builder.card.citation,
        toolkit_citation=citations.TOOLKIT,
    )


def task_use(task_categories: list[str], task_ids: list[str]) -> str:
    """What a dataset is for, as ``croissant.json``'s ``rai:dataUseCases`` says it."""
    return ("Image difference captioning (change captioning): training and evaluating models that describe what "
            f"changed between the before and the after image (the card's tasks: {', '.join(task_categories)} / "
            f"{', '.join(task_ids)}).")


def write_build_card(folder: Path, builder: "PairBuilder", features: "Features", summaries: dict[str, "SplitSummary"],
                     report: "BuildReport", run_record: dict[str, Any]) -> Path:
    """README.md of a build: YAML through the ecosystem's objects, the template as body; and
    ``croissant.json`` beside it (:mod:`.croissant`)."""
    from .croissant import build_meta, write_croissant

    kept = {k: v for k, v in summaries.items() if v.num_examples}
    tags = ["image-difference-captioning", "change-captioning", "idc-toolkit"]
    data = dataset_card_data(
        pretty_name=builder.card.pretty_name, license=builder.card.license, features=features, summaries=kept,
        task_categories=list(builder.card.task_categories), task_ids=list(builder.card.task_ids),
        source_datasets=list(builder.card.source_datasets), tags=tags,
        facts=builder.facts(), run_record=run_record)
    path = save_card(folder, data, render_build_body(builder, features, kept, report))
    use = task_use(list(builder.card.task_categories), list(builder.card.task_ids))
    write_croissant(folder, features, kept, build_meta(builder, report, {**CORE_DOCS, **builder.extra_docs}, tags, use))
    return path


def write_pass_card(folder: Path, source_folder: Optional[Path], source_name: str, features: "Features",
                    summaries: dict[str, "SplitSummary"], section: str, run_record: dict[str, Any],
                    step: str, new_facts: Optional[dict[str, Any]] = None, new_columns: tuple[str, ...] = ()) -> Path:
    """README.md of a column pass: the source's card with the new features, sizes and run
    record in its YAML and the pass documented as a section of the body (a rerun replaces
    its own section). The facts are the source's, with ``step`` appended to ``derived_by``
    and ``new_facts`` set. ``croissant.json`` beside it: the source's, with the new columns'
    fields, the new shards and the pass in its RAI fields (``new_columns``: the columns it computes)."""
    from ..facts import DatasetFacts
    from .croissant import derived_meta, read_croissant, write_croissant

    base: dict[str, Any] = {}
    body = f"# {Path(str(source_name)).name}\n"
    if source_folder is not None and (source_folder / "README.md").is_file():
        from huggingface_hub import DatasetCard

        card = DatasetCard.load(source_folder / "README.md")
        base, body = card.data.to_dict(), card.text
    facts = DatasetFacts.from_card(base.get(FACTS_KEY), f"the card of {source_name}").derived(step, **(new_facts or {}))
    data = dataset_card_data(
        pretty_name=base.get("pretty_name") or Path(str(source_name)).name, license=base.get("license") or "other",
        features=features, summaries=summaries, task_categories=base.get("task_categories") or ["image-to-text"],
        task_ids=base.get("task_ids") or ["image-captioning"],
        source_datasets=base.get("source_datasets") or [source_label(source_name, run_record.get("fields", {}).get("input"))],
        tags=base.get("tags") or ["idc-toolkit"],
        facts=facts, run_record=run_record, base=base)
    marker = section.splitlines()[0]
    if marker in body:
        body = body[: body.index(marker)].rstrip() + "\n"
    path = save_card(folder, data, f"{body.rstrip()}\n\n{section.strip()}\n")
    title = marker.lstrip("# ").strip()
    columns = ", ".join(f"`{c}`" for c in new_columns)
    source = read_croissant(source_folder) if source_folder is not None else None
    meta = derived_meta(
        source, name=data.pretty_name, license=data.license, step=title,
        step_text=f"adds {columns or 'no column'}; how, and with which parameters: the card's section of that name.",
        column_docs={c: f"computed by the pass \"{title}\" (see the card's section)" for c in new_columns},
        keywords=data.tags, machine_tools=[f"{title}: {columns}"] if new_columns else [],
        rai={} if source else {"dataUseCases": [task_use(data.task_categories, data.task_ids)]})
    write_croissant(folder, features, summaries, meta)
    return path


def pass_section(title: str, lines: list[str], params: Optional[dict[str, Any]] = None) -> str:
    """A card section recording a pass and its parameters."""
    import json

    text = [f"## {title}", "", *lines]
    if params:
        text += ["", "Parameters:", "", "```json", json.dumps(params, indent=2, sort_keys=True, default=str), "```"]
    return "\n".join(text)

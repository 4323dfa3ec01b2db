"""The toolkit's datasets as lmms-eval tasks, scored by the toolkit's scorer (``[lmms]`` extra).

lmms-eval's own captioning tasks score Spot-the-Diff-style data with ROUGE-L or a whole-corpus
coco run and no breakdown. The tasks written here (``idc_spot_the_diff``, ``idc_clevr_change``,
``idc_clevr_dc``, ``idc_ier``, ``idc_levir_cc``, ``idc_emu_edit``) read a dataset of the toolkit
(a local folder or a Hub id), show the model the before and after images with the prompt
``idc-eval --model vlm`` uses for that dataset's style, and report coco-caption BLEU-1..4,
METEOR, ROUGE-L and CIDEr-D overall, per category and over the change pairs, each group scored
as its own evaluation (the rcc protocol), so the numbers equal ``idc-eval --predictions`` on the
same captions (0-1 scale, as ``metrics.json``).

The pack is written, not shipped as fixed YAML, because a task names its dataset's path and its
categories: ``idc-eval lmms-tasks [--dataset TASK=PATH ...]`` writes it and prints the
``--include_path`` to give lmms-eval. Its functions live here and are referenced from the YAML by
absolute import path (lmms-eval's ``!function`` falls back to ``importlib``); aggregations are
resolved by name (``aggregate__<metric>``, :func:`__getattr__`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from idc_toolkit import checks
from idc_toolkit.errors import IDCError
from idc_toolkit.metrics.registry import columns, required_families
from idc_toolkit.options import check_fields, option
from idc_toolkit.stores import output_folder

#: task name -> builder (the dataset's Hub id is ``idc_toolkit/<builder>`` once pushed)
TASKS = {"idc_spot_the_diff": "spot_the_diff", "idc_clevr_change": "clevr_change", "idc_clevr_dc": "clevr_dc",
         "idc_ier": "ier", "idc_levir_cc": "levir_cc", "idc_emu_edit": "emu_edit"}
#: the metrics reported: every registered one a machine computes without extra requirements (SPICE's jars)
FAMILIES = required_families()
#: their score columns, each one lmms-eval metric per group
COLUMNS = columns(FAMILIES)
MODULE = "idc_toolkit.evaluators.lmms_tasks"
OVERALL, CHANGE_ONLY = "overall", "change_only"


def metric_name(metric: str, group: str) -> str:
    """The lmms-eval metric of ``metric`` over ``group`` (``idc_CIDEr``, ``idc_CIDEr__move``)."""
    return f"idc_{metric}" if group == OVERALL else f"idc_{metric}__{group}"


# -- the functions the task YAML names --------------------------------------------------------
#: the column process_docs adds: the category's name (the ``category`` column holds ClassLabel ids)
CATEGORY_NAME = "idc_category"


def process_docs(dataset):
    """Add each doc's category name (:data:`CATEGORY_NAME`), as the card names it."""
    from datasets import ClassLabel

    feature = dataset.features.get("category")
    if isinstance(feature, ClassLabel):
        names = feature.names
        dataset = dataset.map(lambda doc: {CATEGORY_NAME: names[doc["category"]] if doc["category"] is not None else ""})
    elif feature is not None:
        dataset = dataset.map(lambda doc: {CATEGORY_NAME: str(doc["category"] or "")})
    return dataset


def doc_to_visual(doc: dict[str, Any]) -> list:
    """The before and after images, in that order (as ``idc-eval --model vlm`` shows them)."""
    return [doc["before"].convert("RGB"), doc["after"].convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Optional[dict[str, Any]] = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return kwargs.get("pre_prompt", "") + kwargs["prompt"] + kwargs.get("post_prompt", "")


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, dict[str, Any]]:
    """One record per group the pair belongs to (overall, its category, change_only), under every
    metric's name; lmms-eval aggregates the names its task lists."""
    from idc_toolkit.schema import NO_CHANGE_CATEGORIES

    from idc_toolkit.prompts import clean_answer

    record = {"pair_id": str(doc["pair_id"]), "prediction": clean_answer(results[0] if results else ""),
              "references": list(doc["captions"])}
    groups = [OVERALL]
    category = doc.get(CATEGORY_NAME)
    if category not in (None, ""):
        groups.append(str(category))
        if category not in NO_CHANGE_CATEGORIES:
            groups.append(CHANGE_ONLY)
    return {metric_name(m, g): record for g in groups for m in COLUMNS}


def score_group(items: list[dict[str, Any]]) -> dict[str, float]:
    """Every metric of one group, scored as its own coco-caption evaluation (cached: lmms-eval
    asks once per metric)."""
    key = json.dumps(sorted((i["pair_id"], i["prediction"], i["references"]) for i in items))
    return dict(_score(key))


@functools.lru_cache(maxsize=64)
def _score(key: str) -> tuple[tuple[str, float], ...]:
    from idc_toolkit.metrics import score_groups

    rows = json.loads(key)
    result = score_groups({pid: pred for pid, pred, _ in rows}, {pid: refs for pid, _, refs in rows}, metrics=list(FAMILIES))
    return tuple((m, float(v)) for m, v in result.groups[OVERALL].scores.items() if v is not None)


def aggregator(metric: str) -> Callable[[list[dict[str, Any]]], float]:
    def aggregate(items: list[dict[str, Any]]) -> float:
        return score_group(items)[metric]

    aggregate.__name__ = f"aggregate__{metric}"
    return aggregate


def __getattr__(name: str):
    """``aggregate__<metric>``: the YAML's aggregation functions (the items lmms-eval hands over are
    already one group's; a pack written before names ``aggregate__<metric>__<group>``)."""
    if name == "METRICS":  # the old name of COLUMNS (METRICS is the metric registry)
        import warnings

        warnings.warn("idc_toolkit.evaluators.lmms_tasks.METRICS is renamed COLUMNS", DeprecationWarning, stacklevel=2)
        return COLUMNS
    parts = name.split("__")
    if len(parts) >= 2 and parts[0] == "aggregate" and parts[1] in COLUMNS:
        return aggregator(parts[1])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- writing the pack -------------------------------------------------------------------------
class Function(str):
    """A dotted import path lmms-eval resolves: written as its ``!function`` tag."""


def _dumper():
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
    return Dumper


def task_yaml(task: str, dataset: str, split: str, categories: Optional[tuple[str, ...]], prompt: str,
              max_new_tokens: int) -> str:
    """The YAML of one task, written by PyYAML's serializer: category names, paths and prompts are
    data (a card's category cannot add a key or a tag); only the functions named here, all of this
    module, carry lmms-eval's ``!function`` tag."""
    import yaml

    from idc_toolkit import __version__
    from idc_toolkit.schema import NO_CHANGE_CATEGORIES

    groups = [OVERALL]
    if categories:
        groups += list(categories)
        if any(c not in NO_CHANGE_CATEGORIES for c in categories):
            groups.append(CHANGE_ONLY)
    doc = {
        "task": task, "dataset_path": dataset, "test_split": split, "output_type": "generate_until",
        "process_docs": Function(f"{MODULE}.process_docs"), "doc_to_visual": Function(f"{MODULE}.doc_to_visual"),
        "doc_to_text": Function(f"{MODULE}.doc_to_text"), "doc_to_target": "captions",
        "generation_kwargs": {"max_new_tokens": max_new_tokens, "temperature": 0, "do_sample": False, "num_beams": 1},
        "process_results": Function(f"{MODULE}.process_results"),
        "lmms_eval_specific_kwargs": {"default": {"prompt": prompt}},
        # the items lmms-eval hands an aggregation are already one group's: the function needs only the metric
        "metric_list": [{"metric": metric_name(metric, group), "aggregation": Function(f"{MODULE}.aggregate__{metric}"),
                         "higher_is_better": True} for group in groups for metric in COLUMNS],
        "metadata": {"version": 0.1},
    }
    header = (f"# written by idc-toolkit {__version__} (idc-eval lmms-tasks): scored by idc-toolkit's coco-caption "
              "scorer, rcc protocol\n")
    return header + yaml.dump(doc, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=1000)


def task_facts(builder: str, dataset: str) -> tuple[Optional[tuple[str, ...]], str]:
    """``(categories, prompt preset)`` of a task's dataset: a local folder's card facts, else its
    builder's own declaration (no network while writing the pack; a builder whose categories
    come from the release, as Emu Edit's tasks, lists them only from a local folder's card)."""
    from idc_toolkit.builders import BUILDERS
    from idc_toolkit.card_data import dataset_facts
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.prompts import preset_for

    if Path(dataset).is_dir():
        facts = dataset_facts(dataset)
    else:
        cls = BUILDERS[builder]
        facts = DatasetFacts(builder=builder, pair_style=cls.pair_style, categories=cls.categories,
                             prompt_preset=cls.prompt_preset)
    return facts.categories, preset_for(facts) or "scene"


@dataclass
class LmmsTasksArgs:
    """``idc-eval lmms-tasks``: where the pack goes and what its tasks read."""

    out: Optional[str] = option(None, "folder for the task YAML files (default: the toolkit's cache, IDC_CACHE)")
    dataset: list[str] = option((), "a task's dataset: a local folder or Hub id (repeatable; default: idc_toolkit/<name>)",
                                repeat=True, metavar="TASK=PATH")
    split: str = option("test", "the split every task evaluates")
    max_new_tokens: int = option(40, "generation length the tasks ask for", check=checks.positive_int)
    overwrite: bool = option(False, "replace a task pack of ours written with other settings")

    def __post_init__(self) -> None:
        check_fields(self)

    def datasets(self) -> dict[str, str]:
        """``--dataset TASK=PATH`` as ``{task: path}``."""
        out = {}
        for item in self.dataset:
            if "=" not in item:
                raise IDCError(f"--dataset {item!r}: expected TASK=PATH (e.g. clevr_change=data/clevr_change)")
            key, path = item.split("=", 1)
            out[key] = path
        return out


def write_task_pack(out: Path | str, datasets: Optional[dict[str, str]] = None, split: str = "test",
                    max_new_tokens: int = 40, overwrite: bool = False) -> dict[str, Path]:
    """Write every task's YAML into ``out`` (the folder rule of the run engine: only our YAML
    files, refused beside anyone else's). ``datasets`` maps a task (or builder) name to a local
    folder or Hub id; the others read ``idc_toolkit/<builder>``."""
    from idc_toolkit import __version__
    from idc_toolkit.prompts import PROMPTS
    from idc_toolkit.runs import RunFolder

    chosen = {}
    for key, path in (datasets or {}).items():
        task = key if key in TASKS else f"idc_{key}"
        if task not in TASKS:
            raise IDCError(f"--dataset {key}=...: no such task; tasks: {', '.join(TASKS)}")
        chosen[task] = str(Path(path).resolve()) if Path(path).is_dir() else path
    from idc_toolkit.runs.rows import check_against_card, local_split_files

    for dataset in chosen.values():  # a local folder is checked against its card before a pack names it
        files = local_split_files(dataset, split)
        if Path(dataset).is_dir() and not files:
            raise IDCError(f"{dataset}: no {split!r} split (data/{split}-*.parquet) for the task to read")
        if files:
            check_against_card(dataset, split, files)
    texts = {}
    for task, builder in TASKS.items():
        dataset = chosen.get(task, f"idc_toolkit/{builder}")
        categories, preset = task_facts(builder, dataset)
        texts[task] = task_yaml(task, dataset, split, categories, PROMPTS[preset], max_new_tokens)
    names = tuple(f"{task}.yaml" for task in TASKS)
    fields = {"tasks": texts, "toolkit": __version__}
    out = output_folder(out, IDCError)
    folder = RunFolder(out, "lmms tasks", fields, owned=names, card_record=False, record_file="lmms_tasks.json").open(overwrite)
    if not folder.complete:
        def stage(final: Path) -> None:
            for task, text in texts.items():
                (final / f"{task}.yaml").write_text(text, encoding="utf-8")

        folder.finalise(stage, order=names)
    return {task: out / f"{task}.yaml" for task in TASKS}

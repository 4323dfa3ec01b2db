"""Syned-style augmentation (BLIP2IDC, WACV 2025): edited pairs with paraphrased references.

For every source row (a before image and an instruction-like caption), an InstructPix2Pix
pipeline (diffusers ``StableDiffusionInstructPix2PixPipeline``; the paper used one fine-tuned
on MagicBrush) generates ``edits_per_image`` edits, and a chat LLM writes ``paraphrases``
variations of the instruction (:mod:`.paraphrase`), so every new pair has the instruction plus
its paraphrases as references; the category is the source's.

Reproducibility: the seed of edit k of a row is derived from ``--seed``, the row's pair id
and k, and is stored in the ``seed`` column. A row's edits are generated as one batch (one
generator per edit); :func:`reproduce_edits` reruns that batch and returns identical images.

Optional filter the paper did not have: CLIP directional similarity (as InstructPix2Pix
filtered its training data), cos(E(edit) - E(source), E(instruction)); edits below
``--clip-filter`` are dropped and counted in the report.

The run engine (:mod:`idc_toolkit.runs`) owns the output: source rows are streamed in parts
of ``rows_per_part`` rows (memory stays flat in the number of source rows), each part is
written atomically with its counts, a rerun skips finished parts and refuses other settings,
``--shard i/n`` takes a contiguous block of parts, ``--engine ray`` maps parts on Ray actors.
"""

from __future__ import annotations

import io
import json
from dataclasses import fields
from pathlib import Path
from typing import Any, Optional

from datasets import ClassLabel, Value

from .. import __version__
from ..cards.croissant import CROISSANT_FILE
from ..errors import IDCError
from ..stores import input_folder, output_folder
from ..runs import PartOutput, RunFolder, assemble, open_split, path_content, run_job
from ..runs.columns import inputs, run_args
from ..runs.fingerprint import recorded
from ..runs.rows import ListRows, decode_image
from ..schema import CATEGORY, pair_features
from .args import AugmentArgs, AugmentConfig, Models
from .editor import edit_seed, editor_input
from .paraphrase import TEMPERATURE, TOP_P

EXTRA = {
    "seed": Value("int64"),
    "editor": Value("string"),
    "paraphraser": Value("string"),
    "source_pair_id": Value("string"),
    "edit_index": Value("int32"),
    "clip_directional_similarity": Value("float32"),
}
#: what the EXTRA columns hold (croissant.json's field descriptions)
EXTRA_DOCS = {
    "seed": "the seed that reproduces this edit (from --seed, the source pair id and the edit index)",
    "editor": "the InstructPix2Pix model that made `after`",
    "paraphraser": "the chat model that wrote the paraphrased references",
    "source_pair_id": "the pair_id of the source row",
    "edit_index": "which of the source row's edits this is",
    "clip_directional_similarity": "CLIP directional similarity of the edit to the instruction (null without --clip-model)",
}
REPORT_FILE = "augment_report.json"


def _png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


class AugmentTask:
    """The engine's per-batch function: edits + paraphrases of each source row."""

    batch_size = 1

    def __init__(self, models: Models, cfg: AugmentConfig, column: str, features, categories: bool, progress: bool = True):
        self.models, self.cfg, self.column, self.features, self.categories = models, cfg, column, features, categories
        self.progress = progress
        self.editor = self.paraphraser = self.clip = None

    def setup(self, device: str) -> None:
        if self.paraphraser is not None:
            return
        if not self.progress:
            from ..devices import quiet_model_loading

            quiet_model_loading("transformers", *(() if self.cfg.paraphrase_only else ("diffusers",)))
        from .clip_filter import ClipDirectional
        from .editor import Editor
        from .paraphrase import Paraphraser

        m = self.models
        self.editor = Editor(m.editor, device) if not self.cfg.paraphrase_only else None
        self.paraphraser = Paraphraser(m.paraphraser, device)
        self.clip = ClipDirectional(m.clip_model, m.clip_checkpoint, device, m.clip_config) if m.clip_model else None

    def _count(self, stats: dict[str, Any], pid: str, refs: list[str], rejected) -> None:
        for reason, n in rejected.items():
            stats["paraphrase_rejections"][reason] = stats["paraphrase_rejections"].get(reason, 0) + n
        if len(refs) < self.cfg.paraphrases:
            stats["shortfalls"][pid] = f"{len(refs)} of {self.cfg.paraphrases} paraphrases after {self.cfg.paraphrase_tries} tries"

    def __call__(self, split: str, rows: list[dict[str, Any]], start: int) -> PartOutput:
        cfg = self.cfg
        out: list[dict[str, Any]] = []
        stats: dict[str, Any] = {"rows": 0, "edits": 0, "rejected_by_clip": 0, "shortfalls": {}, "paraphrase_rejections": {}}
        for row in rows:
            pid = str(row["pair_id"])
            value = row[self.column]
            instruction = (value[0] if isinstance(value, list) and value else value) or ""
            if not isinstance(instruction, str) or not instruction.strip():
                stats["shortfalls"][pid] = "no instruction"
                continue
            instruction = instruction.strip()
            if cfg.paraphrase_only:
                refs, rejected = self.paraphraser.paraphrase(instruction, cfg.paraphrases, edit_seed(cfg.seed, pid, -1),
                                                             cfg.paraphrase_tries)
                self._count(stats, pid, refs, rejected)
                out.append({**row, "captions": [instruction, *refs]})
                stats["rows"] += 1
                continue
            before = decode_image(row["before"])
            seeds = [edit_seed(cfg.seed, pid, e) for e in range(cfg.edits_per_image)]
            edits = self.editor.edit(before, instruction, seeds, cfg)
            refs, rejected = self.paraphraser.paraphrase(instruction, cfg.paraphrases, edit_seed(cfg.seed, pid, -1),
                                                         cfg.paraphrase_tries)
            self._count(stats, pid, refs, rejected)
            src = editor_input(before, cfg.resolution)  # the before image as the editor saw it
            before_png = _png(src)
            sims = self.clip.directional(src, edits, instruction) if self.clip is not None else [None] * len(edits)
            for e, (img, s, sim) in enumerate(zip(edits, seeds, sims)):
                if cfg.clip_filter is not None and sim is not None and sim < cfg.clip_filter:
                    stats["rejected_by_clip"] += 1
                    continue
                cell = {"pair_id": f"{pid}_e{e}", "before": {"bytes": before_png, "path": None},
                        "after": {"bytes": _png(img), "path": None}, "captions": [instruction, *refs], "seed": s,
                        "editor": self.models.editor, "paraphraser": self.models.paraphraser, "source_pair_id": pid,
                        "edit_index": e, "clip_directional_similarity": sim}
                if self.categories:
                    cell[CATEGORY] = row.get(CATEGORY)
                out.append(cell)
                stats["edits"] += 1
            stats["rows"] += 1
        return PartOutput(out, stats)


def values(args: Any, options_cls: type) -> dict[str, Any]:
    """The fields of ``options_cls`` (a part of :class:`AugmentArgs`) as ``args`` holds them, in their order."""
    return {f.name: getattr(args, f.name) for f in fields(options_cls)}


def augment_dataset(source: Optional[str] = None, out_dir: Optional[Path | str] = None, args: Optional[AugmentArgs] = None,
                    **fields_: Any) -> dict[str, Any]:
    """Write the augmented dataset (see module docstring); returns the report. ``args`` is an
    :class:`~.args.AugmentArgs` (or ``fields_`` make one: ``paraphraser=``, ``editor=``,
    ``steps=``, ``limit=``, ``shard=``, ...); ``source`` and ``out_dir`` are its ``dataset`` and
    ``out``. ``models=`` (a :class:`~.args.Models`), ``cfg=`` (an :class:`~.args.AugmentConfig`)
    and ``engine=`` (an :class:`~idc_toolkit.runs.EngineArgs`) give their fields, as before."""
    from ..devices import resolve_device

    parts = [values(part, type(part)) for part in (fields_.pop("cfg", None), fields_.pop("models", None)) if part is not None]
    a = run_args(AugmentArgs, args, **{k: v for part in parts for k, v in part.items()}, **fields_,
                 **inputs(source, out_dir))
    if not a.paraphraser:
        raise IDCError("--paraphraser is needed: the chat model that writes the references")
    out = output_folder(a.out, IDCError)
    progress, split = a.progress, a.split
    source = input_folder(a.dataset, IDCError, progress)  # a store's dataset: its local copy
    rows, src_features, src_fp = open_split(source, split, progress)
    if a.limit is not None:
        rows = ListRows(rows.read(0, min(a.limit, len(rows))))
    column = a.instruction_column or "captions"
    for needed in ("pair_id", "before", column):
        if needed not in src_features:
            raise IDCError(f"{source} [{split}] has no {needed!r} column")
    if a.clip_filter is not None and not a.clip_model:
        raise IDCError("--clip-filter needs --clip-model (and --clip-checkpoint for real weights)")
    if not a.paraphrase_only and not a.editor:
        raise IDCError("--editor is needed (or --paraphrase-only to write paraphrased references without editing)")
    categories = src_features[CATEGORY].names if isinstance(src_features.get(CATEGORY), ClassLabel) else None
    features = src_features if a.paraphrase_only else pair_features(categories, EXTRA)
    options = recorded(a)
    if a.limit is None:  # runs without one keep their fingerprint
        del options["limit"]
    run_fields = {"input": src_fp, **options, "editor_sha256": path_content(a.editor),
                  "paraphraser_sha256": path_content(a.paraphraser),
                  "clip_checkpoint_sha256": path_content(a.clip_checkpoint), "toolkit": __version__}
    folder = RunFolder(out, "augment", run_fields, owned=("data", "README.md", CROISSANT_FILE, REPORT_FILE),
                       progress=progress).open(a.overwrite)
    if folder.complete:
        return {**json.loads((out / REPORT_FILE).read_text()), "complete": True, "already_done": True}
    task = AugmentTask(a, a, column, features, categories is not None, progress)
    out_split = split if a.paraphrase_only else "train"  # paraphrased references keep their split
    device = resolve_device(a.device) if a.engine == "local" else a.device
    outcome = run_job(folder, {out_split: rows}, task, rows_per_part=a.rows_per_part, engine=a, device=device,
                      progress=progress, desc="idc-augment")
    report: dict[str, Any] = {"complete": outcome.complete, "parts_done": outcome.parts_written, "parts": outcome.parts_total}
    if outcome.complete and outcome.is_main:
        def stage(final: Path) -> None:
            summary = assemble(folder, [out_split], features, final)[out_split]
            params = {**values(a, AugmentConfig), "source": str(source), "source_split": split, **values(a, Models)}
            totals = summary.stats
            (final / REPORT_FILE).write_text(json.dumps({"parameters": params, **totals}, indent=2) + "\n")
            _write_card(final, source, features, out_split, summary, a, a, params, folder.record())
            _write_croissant(final, source, features, out_split, summary, a, a, column)

        folder.finalise(stage)
        totals = json.loads((out / REPORT_FILE).read_text())
        report.update({k: v for k, v in totals.items() if k not in ("shortfalls", "parameters")},
                      shortfall_rows=len(totals.get("shortfalls", {})))
    return report


TAGS = ["image-difference-captioning", "synthetic", "idc-toolkit"]


def _pretty_name(source: str, cfg: AugmentConfig) -> str:
    return f"{'Paraphrased references' if cfg.paraphrase_only else 'Syned-style augmentation'} of {Path(str(source)).name}"


def _write_croissant(final: Path, source: str, features, split: str, summary, cfg: AugmentConfig, models: Models,
                     column: str) -> None:
    """``croissant.json``: the source's (where it has one), with this dataset's files, fields and
    the recipe in its RAI fields."""
    from ..cards import CORE_DOCS, citations, task_use
    from ..cards.croissant import UNKNOWN, derived_meta, read_croissant, write_croissant

    def shown(model: Optional[str]) -> str:  # a local folder by its name: the card's JSON never holds the user's paths
        return Path(model).name if model and Path(model).exists() else str(model)

    totals = summary.stats
    pretty_name = _pretty_name(source, cfg)
    shortfalls = len(totals.get("shortfalls", {}))
    source_croissant = read_croissant(source) if Path(str(source)).is_dir() else None
    paraphrases = (f"{cfg.paraphrases} paraphrases of each instruction by the chat model `{shown(models.paraphraser)}`, "
                   "cleaned (quotes, numbering, preambles, empties, duplicates, copies of the instruction and "
                   "out-of-range lengths removed)")
    missing = (f"{shortfalls} of {totals.get('rows', 0)} source rows got fewer paraphrases than asked (or had no "
               f"instruction); every one is in {REPORT_FILE}.")
    if cfg.paraphrase_only:
        step = "idc-augment --paraphrase-only"
        text = f"the source's `{split}` pairs unchanged; references = each pair's instruction + {paraphrases}."
        tools = [f"{shown(models.paraphraser)} (paraphrased references)"]
        rai: dict[str, Any] = {
            "dataCollectionMissingData": missing,
            "dataManipulationProtocol": ("The source's rows unchanged (its images' bytes as they were), but for the "
                                         "references, replaced by the instruction and its paraphrases.")}
    else:
        step = "idc-augment"
        text = (f"for each source row of `{split}`, {cfg.edits_per_image} InstructPix2Pix edits of the before image "
                f"with the row's instruction (editor `{shown(models.editor)}`, {cfg.steps} steps, guidance "
                f"{cfg.guidance_scale}, image guidance {cfg.image_guidance_scale}, long side <= {cfg.resolution}); "
                f"references = the instruction + {paraphrases}; `category` = the source's.")
        tools = [f"{shown(models.editor)} (the edited `after` images)", f"{shown(models.paraphraser)} (paraphrased references)",
                 *([f"{shown(models.clip_model)} (CLIP directional filter, threshold {cfg.clip_filter})"] if models.clip_model else [])]
        rai = {"dataCollection": f"Synthetic pairs made by idc-augment from {Path(str(source)).name}: {text}",
               "dataCollectionMissingData": (f"{missing} {totals.get('rejected_by_clip', 0)} edits rejected by the CLIP "
                                             "directional filter."),
               "dataManipulationProtocol": (f"`before`: the source's before image as the editor saw it (long side <= "
                                            f"{cfg.resolution}), saved as PNG; `after`: the editor's output, saved as "
                                            "PNG; the source's references replaced by the instruction and its "
                                            "paraphrases."),
               "dataUseCases": ["Training image difference captioning models on synthetic edit pairs (the Syned "
                                "recipe of BLIP2IDC, Evennou et al., WACV 2025)."]}
    rai["dataAnnotationProtocol"] = [f"References: each pair's instruction (the source's `{column}`) + {paraphrases}."]
    rai["annotatorDemographics"] = [f"The paraphrases are machine-written; the writers of the source's instructions: {UNKNOWN}."]
    if source_croissant is None:
        rai.setdefault("dataUseCases", [task_use(["image-to-text"], ["image-captioning"])])
    meta = derived_meta(source_croissant, name=pretty_name, license="other", step=step, step_text=text,
                        description=f"{pretty_name}: written by {step} (idc-toolkit); {text}",
                        column_docs={**CORE_DOCS, **EXTRA_DOCS}, keywords=TAGS, machine_tools=tools, rai=rai,
                        same_rows=False)
    source_licence = meta.license
    meta.license = "other"
    meta.cite_as = "\n\n".join(c for c in (meta.cite_as, citations.SYNED) if c)  # the source, and the recipe
    meta.license_note = (f"The licence follows the source dataset ({source_licence}) and the terms of the models "
                         "used (rai:machineAnnotationTools).")
    write_croissant(final, features, {split: summary} if summary.num_examples else {}, meta)


def _write_card(final: Path, source: str, features, split: str, summary, cfg: AugmentConfig, models: Models,
                params: dict[str, Any], record: dict[str, Any]) -> None:
    from ..card_data import dataset_facts, source_label
    from ..cards import dataset_card_data, save_card

    totals = summary.stats
    source_facts = dataset_facts(source)
    facts = source_facts.derived(
        "augment", pair_style=source_facts.pair_style if cfg.paraphrase_only else "edit",
        categories=source_facts.categories or (tuple(features[CATEGORY].names) if CATEGORY in features else None))
    data = dataset_card_data(
        pretty_name=_pretty_name(source, cfg), license="other", features=features,
        summaries={split: summary} if summary.num_examples else {}, task_categories=["image-to-text"],
        task_ids=["image-captioning"], source_datasets=[source_label(source, record.get("fields", {}).get("input"))], tags=TAGS,
        facts=facts, run_record=record)
    if cfg.paraphrase_only:
        body = f"""# Paraphrased references of {Path(str(source)).name}

Written by `idc-augment --paraphrase-only` (idc-toolkit), as Syned's test references were made
(BLIP2IDC, Evennou et al., WACV 2025): the source's pairs unchanged, each pair's references =
its instruction + {cfg.paraphrases} paraphrases by the chat model `{models.paraphraser}`, cleaned
(quotes, numbering, preambles, empties, duplicates, copies of the instruction and out-of-range
lengths removed). {len(totals.get('shortfalls', {}))} of {totals.get('rows', 0)} rows got fewer
paraphrases than asked; every shortfall is in `{REPORT_FILE}`.

Parameters:

```json
{json.dumps(params, indent=2, sort_keys=True, default=str)}
```
"""
        save_card(final, data, body)
        return
    body = f"""# Syned-style augmentation of {Path(str(source)).name}

Written by `idc-augment` (idc-toolkit) with the Syned recipe of BLIP2IDC (Evennou et al., WACV 2025):
for each source row, {cfg.edits_per_image} InstructPix2Pix edits of the before image with the row's
instruction (editor `{models.editor}`, {cfg.steps} steps, guidance {cfg.guidance_scale}, image guidance
{cfg.image_guidance_scale}, long side <= {cfg.resolution}), and {cfg.paraphrases} paraphrases of the instruction
by the chat model `{models.paraphraser}`, cleaned (quotes, numbering, preambles, empties, duplicates, copies
of the instruction and out-of-range lengths removed). References = the instruction + its paraphrases;
`category` = the source's; `seed` reproduces each edit. The licence follows the source dataset and the
models used. Steps, guidance scales, resolution, paraphrase sampling (top-p {TOP_P}, temperature {TEMPERATURE})
and paraphrase tries are idc-toolkit's choices: the paper does not give them.

| | |
| --- | --- |
| source rows | {totals.get('rows', 0)} |
| edited pairs | {totals.get('edits', 0)} |
| edits rejected by the CLIP directional filter (threshold {cfg.clip_filter}) | {totals.get('rejected_by_clip', 0)} |
| rows with fewer paraphrases than asked | {len(totals.get('shortfalls', {}))} |

Parameters:

```json
{json.dumps(params, indent=2, sort_keys=True, default=str)}
```

Every shortfall and every rejection count is in `{REPORT_FILE}`.
"""
    save_card(final, data, body)

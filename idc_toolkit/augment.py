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

Resumable by shard: source rows are processed in chunks of ``rows_per_shard``; each finished
chunk is a shard plus a small JSON of its counts; a rerun skips finished chunks.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pyarrow.parquet as pq
import yaml
from datasets import ClassLabel, Features, Value
from tqdm.auto import tqdm

from .errors import IDCError
from .schema import CATEGORY, pair_features
from .writer import ShardWriter, split_shards

EXTRA = {
    "seed": Value("int64"),
    "editor": Value("string"),
    "paraphraser": Value("string"),
    "source_pair_id": Value("string"),
    "edit_index": Value("int32"),
    "clip_directional_similarity": Value("float32"),
}


@dataclass
class AugmentConfig:
    edits_per_image: int = 8
    paraphrases: int = 4
    seed: int = 0
    steps: int = 20
    guidance_scale: float = 7.5
    image_guidance_scale: float = 1.5
    resolution: int = 512
    rows_per_shard: int = 16
    paraphrase_tries: int = 3
    clip_filter: Optional[float] = None


def edit_seed(seed: int, pair_id: str, k: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{pair_id}/{k}".encode()).digest()[:4], "little")


def editor_input(image, resolution: int):
    """RGB, long side at most ``resolution``, both sides multiples of 8 (the VAE's stride)."""
    from PIL import Image

    rgb = image.convert("RGB")
    scale = min(1.0, resolution / max(rgb.size))
    w, h = (max(8, int(rgb.width * scale) // 8 * 8), max(8, int(rgb.height * scale) // 8 * 8))
    return rgb.resize((w, h), Image.BICUBIC) if (w, h) != rgb.size else rgb


class Editor:
    def __init__(self, path: str, device: str = "cpu"):
        import torch
        from diffusers import StableDiffusionInstructPix2PixPipeline

        if not Path(path).exists() and "/" not in path:
            raise IDCError(f"editor {path!r} not found")
        self.pipe = StableDiffusionInstructPix2PixPipeline.from_pretrained(path, safety_checker=None, requires_safety_checker=False)
        self.pipe.set_progress_bar_config(disable=True)
        self.pipe = self.pipe.to(device)
        self.device, self.torch, self.name = device, torch, path

    def edit(self, image, instruction: str, seeds: list[int], cfg: AugmentConfig) -> list[Any]:
        src = editor_input(image, cfg.resolution)
        gens = [self.torch.Generator(device="cpu").manual_seed(s) for s in seeds]
        out = self.pipe(prompt=[instruction] * len(seeds), image=[src] * len(seeds), num_inference_steps=cfg.steps,
                        guidance_scale=cfg.guidance_scale, image_guidance_scale=cfg.image_guidance_scale, generator=gens)
        return list(out.images)


def reproduce_edits(editor: Editor, image, instruction: str, seeds: list[int], cfg: AugmentConfig) -> list[Any]:
    """The edits of one row again, bit for bit (same seeds, same batch)."""
    return editor.edit(image, instruction, seeds, cfg)


class ClipDirectional:
    """cos(E(edit) - E(source), E(instruction)) with open_clip (InstructPix2Pix's filter)."""

    def __init__(self, model_name: str, checkpoint: Optional[str], device: str = "cpu", model_config: Optional[str] = None):
        import open_clip
        import torch

        if model_config:
            open_clip.add_model_config(model_config)
        if checkpoint and not Path(checkpoint).is_file():
            raise IDCError(f"CLIP checkpoint not found: {checkpoint}")
        torch.manual_seed(0)
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(model_name, pretrained=checkpoint or None)
        self.model = self.model.to(device).eval()
        self.tokenizer = open_clip.get_tokenizer(model_name)
        self.device, self.torch = device, torch
        self.name = f"{model_name}" + (f" ({Path(checkpoint).name})" if checkpoint else " (random weights)")

    def directional(self, source, edits: list, instruction: str) -> list[float]:
        torch = self.torch
        with torch.no_grad():
            imgs = torch.stack([self.preprocess(im.convert("RGB")) for im in [source, *edits]]).to(self.device)
            emb = self.model.encode_image(imgs, normalize=True)
            text = self.model.encode_text(self.tokenizer([instruction]).to(self.device), normalize=True)[0]
            delta = emb[1:] - emb[:1]
            sims = torch.nn.functional.cosine_similarity(delta, text[None].expand_as(delta), dim=1)
        return [float(v) for v in sims]


def _png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def augment_dataset(source: str, out_dir: Path | str, editor: Editor, paraphraser, cfg: AugmentConfig, split: str = "train",
                    instruction_column: Optional[str] = None, clip_scorer=None, shard: tuple[int, int] = (0, 1),
                    progress: bool = True) -> dict[str, Any]:
    """Write the augmented dataset (see module docstring); returns the report."""
    from PIL import Image

    from .evaluators.generation import dataset_rows

    out = Path(out_dir)
    names, rows_iter = dataset_rows(source, split)
    column = instruction_column or "captions"
    for needed in ("pair_id", "before", column):
        if needed not in names:
            raise IDCError(f"{source} [{split}] has no {needed!r} column")
    src_features = None
    local = split_shards(source, split)
    if local:
        src_features = Features.from_arrow_schema(pq.read_schema(local[0]))
    categories = src_features[CATEGORY].names if src_features is not None and isinstance(src_features.get(CATEGORY), ClassLabel) else None
    features = pair_features(categories, EXTRA)
    tmp = out / "data" / ".partial"
    tmp.mkdir(parents=True, exist_ok=True)
    rows = list(rows_iter)
    chunks = [rows[k : k + cfg.rows_per_shard] for k in range(0, len(rows), cfg.rows_per_shard)]
    mine = [k for k in range(len(chunks)) if k % shard[1] == shard[0]]
    todo = [k for k in mine if not (tmp / f"train-{k:05d}.json").is_file()]
    bar = tqdm(total=sum(len(chunks[k]) for k in todo), unit="row", disable=not progress, desc="idc-augment")
    for k in todo:
        stats: dict[str, Any] = {"rows": 0, "edits": 0, "rejected_by_clip": 0, "shortfalls": {}, "paraphrase_rejections": Counter()}
        writer = ShardWriter(tmp, "train", features, max_shard_bytes=1 << 62, first_shard=k)
        try:
            for row in chunks[k]:
                pid = str(row["pair_id"])
                value = row[column]
                instruction = (value[0] if isinstance(value, list) and value else value) or ""
                if not isinstance(instruction, str) or not instruction.strip():
                    stats["shortfalls"][pid] = "no instruction"
                    continue
                instruction = instruction.strip()
                before = Image.open(io.BytesIO(row["before"]["bytes"]))
                seeds = [edit_seed(cfg.seed, pid, e) for e in range(cfg.edits_per_image)]
                edits = editor.edit(before, instruction, seeds, cfg)
                refs, rejected = paraphraser.paraphrase(instruction, cfg.paraphrases, edit_seed(cfg.seed, pid, -1), cfg.paraphrase_tries)
                stats["paraphrase_rejections"].update(rejected)
                if len(refs) < cfg.paraphrases:
                    stats["shortfalls"][pid] = f"{len(refs)} of {cfg.paraphrases} paraphrases after {cfg.paraphrase_tries} tries"
                src = editor_input(before, cfg.resolution)  # the before image as the editor saw it
                before_png = _png(src)
                sims = clip_scorer.directional(src, edits, instruction) if clip_scorer is not None else [None] * len(edits)
                for e, (img, s, sim) in enumerate(zip(edits, seeds, sims)):
                    if cfg.clip_filter is not None and sim is not None and sim < cfg.clip_filter:
                        stats["rejected_by_clip"] += 1
                        continue
                    data = _png(img)
                    cell = {"pair_id": f"{pid}_e{e}", "before": {"bytes": before_png, "path": None}, "after": {"bytes": data, "path": None},
                            "captions": [instruction, *refs], "seed": s, "editor": editor.name, "paraphraser": paraphraser.name,
                            "source_pair_id": pid, "edit_index": e, "clip_directional_similarity": sim}
                    if categories is not None:
                        cell[CATEGORY] = row.get(CATEGORY)
                    writer.add(cell, len(data) + len(before_png))
                    stats["edits"] += 1
                stats["rows"] += 1
                bar.update(1)
            writer.close()
        except BaseException:
            writer.abort()
            raise
        stats["paraphrase_rejections"] = dict(stats["paraphrase_rejections"])
        (tmp / f"train-{k:05d}.json").write_text(json.dumps(stats))
    bar.close()
    done = [k for k in range(len(chunks)) if (tmp / f"train-{k:05d}.json").is_file()]
    report = {"complete": len(done) == len(chunks), "chunks_done": len(done), "chunks": len(chunks)}
    if report["complete"]:
        report.update(_finalise(out, source, split, features, cfg, editor.name, paraphraser.name, len(chunks), clip_scorer))
    return report


def _finalise(out: Path, source: str, split: str, features: Features, cfg: AugmentConfig, editor: str, paraphraser: str,
              n_chunks: int, clip_scorer) -> dict[str, Any]:
    tmp = out / "data" / ".partial"
    totals: dict[str, Any] = {"rows": 0, "edits": 0, "rejected_by_clip": 0, "shortfalls": {}, "paraphrase_rejections": Counter()}
    shards = []
    for k in range(n_chunks):
        stats = json.loads((tmp / f"train-{k:05d}.json").read_text())
        for key in ("rows", "edits", "rejected_by_clip"):
            totals[key] += stats[key]
        totals["shortfalls"].update(stats["shortfalls"])
        totals["paraphrase_rejections"].update(stats["paraphrase_rejections"])
        if (tmp / f"train-{k:05d}.parquet").is_file():
            shards.append(tmp / f"train-{k:05d}.parquet")
    for i, path in enumerate(shards):
        path.replace(out / "data" / f"train-{i:05d}-of-{len(shards):05d}.parquet")

    shutil.rmtree(tmp)
    totals["paraphrase_rejections"] = dict(totals["paraphrase_rejections"])
    params = {**cfg.__dict__, "source": str(source), "source_split": split, "editor": editor, "paraphraser": paraphraser,
              "clip_filter_model": getattr(clip_scorer, "name", None)}
    (out / "augment_report.json").write_text(json.dumps({"parameters": params, **totals}, indent=2) + "\n")
    nbytes = sum(f.stat().st_size for f in (out / "data").glob("*.parquet"))
    meta = {
        "pretty_name": f"Syned-style augmentation of {Path(str(source)).name}",
        "license": "other",
        "task_categories": ["image-to-text"],
        "tags": ["image-difference-captioning", "synthetic", "idc-toolkit"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}] if shards else [],
        "dataset_info": {"features": features._to_yaml_list(), "splits": [{"name": "train", "num_examples": totals["edits"], "num_bytes": nbytes}],
                         "download_size": nbytes, "dataset_size": nbytes},
    }
    body = f"""# {meta['pretty_name']}

Written by `idc-augment` (idc-toolkit) with the Syned recipe of BLIP2IDC (Evennou et al., WACV 2025):
for each source row, {cfg.edits_per_image} InstructPix2Pix edits of the before image with the row's
instruction (editor `{editor}`, {cfg.steps} steps, guidance {cfg.guidance_scale}, image guidance
{cfg.image_guidance_scale}, long side <= {cfg.resolution}), and {cfg.paraphrases} paraphrases of the instruction
by the chat model `{paraphraser}`, cleaned (quotes, numbering, preambles, empties, duplicates, copies
of the instruction and out-of-range lengths removed). References = the instruction + its paraphrases;
`category` = the source's; `seed` reproduces each edit. The licence follows the source dataset and the
models used.

| | |
| --- | --- |
| source rows | {totals['rows']} |
| edited pairs | {totals['edits']} |
| edits rejected by the CLIP directional filter (threshold {cfg.clip_filter}) | {totals['rejected_by_clip']} |
| rows with fewer paraphrases than asked | {len(totals['shortfalls'])} |

Parameters:

```json
{json.dumps(params, indent=2, sort_keys=True, default=str)}
```

Every shortfall and every rejection count is in `augment_report.json`.
"""
    (out / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + body, encoding="utf-8")
    return {k: v for k, v in totals.items() if k != "shortfalls"} | {"shortfall_rows": len(totals["shortfalls"])}

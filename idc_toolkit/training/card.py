"""The model card of a trained adapter (``RUN_DIR/adapter/README.md``) and ``--push-to-hub``.

Written with ``huggingface_hub``'s ``ModelCard`` / ``ModelCardData`` after every finished run,
so the local folder and the Hub repo carry the same card: base model and revision, the dataset
and its content fingerprint, the variant and every setting, the per-epoch validation table with
its per-category scores, and the citations. Local paths never appear in it: a local base model
or dataset is named by its folder name and content fingerprint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional


def _name(value: Optional[str], content: Optional[str]) -> Optional[str]:
    """A Hub id as it is; a local path as its folder name and content hash."""
    if value is None or not Path(str(value)).exists():
        return value
    return f"{Path(str(value)).resolve().name} (local, sha256 {content[:16] if content else 'unknown'})"


def hub_base_of(base_model: str) -> Optional[str]:
    """The Hub id of a base model: itself, or for a local copy the ``_name_or_path`` its
    ``config.json`` records when that is a Hub id (a snapshot of ``Salesforce/blip2-opt-2.7b``)."""
    from ..runs.rows import looks_like_repo_id

    if not Path(str(base_model)).exists():
        return base_model
    try:
        recorded = json.loads((Path(base_model) / "config.json").read_text()).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        return None
    return recorded if isinstance(recorded, str) and looks_like_repo_id(recorded) and not Path(recorded).exists() else None


def hub_dataset_of(dataset: str) -> str:
    """The Hub id of a dataset: itself, or ``idc_toolkit/<builder>`` for a local ``idc-build`` folder."""
    if not Path(str(dataset)).exists():
        return str(dataset)
    from ..card_data import dataset_facts

    return f"idc_toolkit/{dataset_facts(dataset).builder}"


def card_data(recipe_cls, settings, dataset: str, kept: Optional[dict[str, Any]]):
    """The card's Hub metadata: ``base_model``, ``datasets`` and a ``model-index`` with the kept
    adapter's validation scores (what the Hub indexes and shows)."""
    from huggingface_hub import EvalResult, ModelCardData

    data_id = hub_dataset_of(dataset)
    results = [EvalResult(task_type="image-to-text", task_name="image difference captioning", dataset_type=data_id,
                          dataset_name=data_id.split("/")[-1], dataset_split=settings.val_split, metric_type=k.lower(),
                          metric_name=k, metric_value=round(float(v), 4))
               for k, v in (kept or {}).items() if isinstance(v, float) and "/" not in k]
    return ModelCardData(library_name="peft", base_model=hub_base_of(settings.base_model), datasets=[data_id],
                         model_name=f"{recipe_cls.name}-lora" if results else None, eval_results=results or None,
                         tags=["image-difference-captioning", "change-captioning", "idc-toolkit", "lora", recipe_cls.name])


def adapter_card(recipe_cls, settings, fields: dict[str, Any], dataset: str, table: list[dict[str, Any]]) -> str:
    from huggingface_hub import ModelCard

    from ..cards import citations
    from .callbacks import epochs_markdown

    base = _name(settings.base_model, fields.get("base_model_content"))
    data_name = _name(dataset, fields.get("dataset_content"))
    shown = {k: v for k, v in settings.record().items() if k not in ("base_model",)}
    rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in shown.items())
    kept = next((r for r in reversed(table) if r.get("kept")), None)
    data = card_data(recipe_cls, settings, dataset, kept)
    best = ""
    if kept:
        best = "\n".join(f"| {k} | {v:.2f} |" for k, v in kept.items() if isinstance(v, float))
        best = f"Kept adapter: epoch {kept['epoch']}, step {kept['step']}.\n\n| validation | value |\n| --- | ---: |\n{best}\n"
    cite = "\n\n".join(c for c in (getattr(recipe_cls, "citation", ""), citations.TOOLKIT) if c)
    text = f"""---
{data.to_yaml()}
---

# {recipe_cls.name} LoRA adapter, trained with idc-toolkit

- base model: {base} (revision `{settings.revision}`)
- dataset: {data_name}, split `{settings.split}`, validated on `{settings.val_split}`; dataset content fingerprint
  `{(fields.get('dataset_content') or '')[:16]}`
- recipe variant: `{settings.variant}` — {settings.defaults_source}

Load it with `idc-eval --model {recipe_cls.name} --base-model <base> --adapter <this repo or folder>`, or with peft:
`peft.AutoPeftModel.from_pretrained(<this folder>)` where `adapter_config.json`'s `base_model_name_or_path`
names a base that loads (a local base is recorded as its path; an uploaded copy names the Hub base, else the folder name).

## Validation

{best or 'No validation split: the last adapter was kept.'}
{epochs_markdown(table) if table else ''}
## Every setting

| setting | value |
| --- | --- |
{rows}

## Citation

```bibtex
{cite}
```
"""
    return str(ModelCard(text))


def push_adapter(folder: Path, repo: str, private: bool = False) -> str:
    """Upload ``folder`` (adapter + card) to the Hub model repo ``repo``; returns its URL."""
    from huggingface_hub import HfApi

    from ..errors import IDCError

    import shutil
    import tempfile

    api = HfApi()
    with tempfile.TemporaryDirectory() as tmp:  # the uploaded copy names no path of this machine
        staged = Path(tmp) / "adapter"
        shutil.copytree(folder, staged)
        config = json.loads((staged / "adapter_config.json").read_text())
        base = config.get("base_model_name_or_path")
        if base and Path(str(base)).is_absolute():
            config["base_model_name_or_path"] = hub_base_of(base) or Path(base).name
            (staged / "adapter_config.json").write_text(json.dumps(config, indent=2))
        try:
            api.create_repo(repo, repo_type="model", exist_ok=True, private=private)
            info = api.upload_folder(folder_path=str(staged), repo_id=repo, repo_type="model",
                                     commit_message="idc-train: adapter and model card")
        except Exception as exc:  # network and Hub errors come in many types
            from ..stores import first_line

            raise IDCError(f"--push-to-hub {repo}: upload failed ({type(exc).__name__}: {first_line(exc)}); the "
                           f"adapter is in {folder}") from None
    return str(getattr(info, "commit_url", repo))

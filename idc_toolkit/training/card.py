"""The model card of a trained adapter (``RUN_DIR/adapter/README.md``) and ``--push-to-hub``.

Written with ``huggingface_hub``'s ``ModelCard`` / ``ModelCardData`` after every finished run,
so the local folder and the Hub repo carry the same card: base model and revision, the dataset
and its content fingerprint, the variant and every setting, the per-epoch validation table with
its per-category scores, and the citations. Local paths never appear in it: a local base model
or dataset is named by its folder name and content fingerprint.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional


def _name(value: Optional[str], content: Optional[str]) -> Optional[str]:
    """A Hub id as it is; a local path as its folder name and content hash."""
    if value is None or not Path(str(value)).exists():
        return value
    return f"{Path(str(value)).resolve().name} (local, sha256 {content[:16] if content else 'unknown'})"


def adapter_card(recipe_cls, settings, fields: dict[str, Any], dataset: str, table: list[dict[str, Any]]) -> str:
    from huggingface_hub import ModelCard, ModelCardData

    from ..cards import citations
    from .callbacks import epochs_markdown

    base = _name(settings.base_model, fields.get("base_model_content"))
    data_name = _name(dataset, fields.get("dataset_content"))
    local_base = Path(str(settings.base_model)).exists()
    data = ModelCardData(library_name="peft", base_model=None if local_base else settings.base_model,
                         datasets=None if Path(str(dataset)).exists() else [str(dataset)],
                         tags=["image-difference-captioning", "change-captioning", "idc-toolkit", "lora", recipe_cls.name])
    shown = {k: v for k, v in asdict(settings).items() if k not in ("base_model",)}
    rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in shown.items())
    kept = next((r for r in reversed(table) if r.get("kept")), None)
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

Load it with `idc-eval --model {recipe_cls.name} --base-model <base> --adapter <this repo or folder>`.

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

    api = HfApi()
    try:
        api.create_repo(repo, repo_type="model", exist_ok=True, private=private)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="model",
                                 commit_message="idc-train: adapter and model card")
    except Exception as exc:  # network and Hub errors come in many types
        raise IDCError(f"--push-to-hub {repo}: upload failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); the "
                       f"adapter is in {folder}") from None
    return str(getattr(info, "commit_url", repo))

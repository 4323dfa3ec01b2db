"""LoRA adapters (peft) for the checkpoint runners, checked before any work starts.

Two formats load, both through ``peft.PeftModel.from_pretrained``: today's peft (``adapter_config.json`` + ``adapter_model.safetensors``) and
the one BLIP2IDC released, written by peft 0.5 (``adapter_model.bin``, a torch pickle). The
pickle is read with ``torch.load(weights_only=True)``: tensors only, no code runs.

Checks, each an error naming the adapter: the folder or its files are missing; a target
module of the adapter matches nothing in the base model; a LoRA tensor's shape does not fit
the module it wraps. A different ``base_model_name_or_path`` (a Hub name vs your local copy)
is only a warning.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.errors import IDCError

_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$")


def resolve_adapter(adapter: str, revision: Optional[str] = None) -> str:
    """A local adapter folder for ``adapter``: the folder itself, or a Hub model repo's adapter
    files (``adapter_config.json``, ``adapter_model.*``) at ``revision``, downloaded once into
    the Hub cache (``HF_HOME``). One line when neither exists."""
    if Path(adapter).is_dir():
        return str(adapter)
    from ..runs.rows import check_hub_repo, looks_like_repo_id

    if not looks_like_repo_id(adapter):
        raise IDCError(f"adapter folder not found: {adapter} (and not a Hub id of the form org/name)")

    check_hub_repo(adapter, "model", "--adapter", revision)
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(adapter, revision=revision, allow_patterns=["adapter_config.json", "adapter_model.*"])
    except Exception as exc:  # connection and Hub errors come in many types
        raise IDCError(f"--adapter {adapter!r}: cannot download it ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None


def read_adapter(adapter_dir: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config, state_dict)`` of an adapter folder in either format."""
    import torch

    folder = Path(adapter_dir)
    config_path = folder / "adapter_config.json"
    if not config_path.is_file():
        raise IDCError(f"adapter {folder}: no adapter_config.json (is this a peft LoRA adapter folder?)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise IDCError(f"adapter {folder}: adapter_config.json is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise IDCError(f"adapter {folder}: adapter_config.json is not a JSON object")
    if config.get("peft_type", "LORA") != "LORA":
        raise IDCError(f"adapter {folder}: peft_type {config.get('peft_type')!r}, only LORA adapters are supported")
    if (folder / "adapter_model.safetensors").is_file():
        from safetensors.torch import load_file

        try:
            state = load_file(str(folder / "adapter_model.safetensors"))
        except Exception as exc:  # safetensors raises its own error types for a corrupt header or data
            raise IDCError(f"adapter {folder}: adapter_model.safetensors is corrupt ({exc})") from None
    elif (folder / "adapter_model.bin").is_file():
        try:
            state = torch.load(folder / "adapter_model.bin", map_location="cpu", weights_only=True)
        except Exception as exc:
            raise IDCError(f"adapter {folder}: adapter_model.bin is not a plain tensor file ({exc})") from None
    else:
        raise IDCError(f"adapter {folder}: neither adapter_model.safetensors nor adapter_model.bin")
    return config, state


def check_adapter(model, config: dict[str, Any], state: dict[str, Any], base_name: str, adapter_dir: str) -> None:
    """Fail before any work if the adapter cannot apply to ``model``."""
    named = dict(model.named_modules())
    targets = config.get("target_modules") or []
    if isinstance(targets, str):
        targets = [targets]
    unmatched = [t for t in targets if not any(n == t or n.endswith("." + t) for n in named)]
    if unmatched:
        raise IDCError(f"adapter {adapter_dir}: target module(s) {unmatched} do not exist in the base model {base_name}")
    bad = []
    for key, tensor in state.items():
        m = _LORA_KEY.match(key)
        if not m:
            continue
        module = named.get(m.group(1))
        if module is None or not hasattr(module, "weight"):
            bad.append(f"{key}: no module {m.group(1)!r}")
            continue
        out_f, in_f = module.weight.shape[:2]
        if m.group(2) == "A" and tensor.shape[1] != in_f:
            bad.append(f"{key}: shape {tuple(tensor.shape)} does not fit input size {in_f}")
        if m.group(2) == "B" and tensor.shape[0] != out_f:
            bad.append(f"{key}: shape {tuple(tensor.shape)} does not fit output size {out_f}")
    if bad:
        raise IDCError(f"adapter {adapter_dir} does not fit the base model {base_name}: " + "; ".join(bad[:5]))
    declared = config.get("base_model_name_or_path")
    if declared and declared != base_name and Path(declared).name != Path(base_name).name:
        warnings.warn(f"adapter {adapter_dir} was trained on {declared!r}; applying it to {base_name!r}", stacklevel=2)


def apply_adapter(model, adapter_dir: Path | str, base_name: str):
    """The base model with the LoRA adapter merged in, loaded by ``peft`` itself
    (``PeftModel.from_pretrained`` reads both today's safetensors and peft 0.5's
    ``adapter_model.bin``), after :func:`check_adapter` has named any module that does not fit."""
    from peft import PeftModel

    config, state = read_adapter(adapter_dir)
    check_adapter(model, config, state, base_name, str(adapter_dir))
    try:
        peft_model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=False)
    except (ValueError, TypeError, KeyError) as exc:
        raise IDCError(f"adapter {adapter_dir}: peft cannot load it ({exc})") from None
    return peft_model.merge_and_unload()

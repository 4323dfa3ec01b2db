"""LoRA adapters (peft) for the checkpoint runners, checked before any work starts.

Two formats load, both through ``peft.PeftModel.from_pretrained``: today's peft (``adapter_config.json`` + ``adapter_model.safetensors``) and
the one BLIP2IDC released, written by peft 0.5 (``adapter_model.bin``, a torch pickle). The
pickle is read with ``torch.load(weights_only=True)``: tensors only, no code runs.

Checks, each an error naming the adapter, follow what peft itself accepts: the folder or its
files are missing; none of the adapter's target modules exists in the base model; a LoRA tensor
has no module or its shape does not fit; a module the targets wrap has no tensor. A different ``base_model_name_or_path`` (a Hub name vs your local copy)
is only a warning.
"""

from __future__ import annotations

import json
import re
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from idc_toolkit.errors import IDCError
from idc_toolkit.stores import first_line

_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$")


@contextmanager
def quiet_peft():
    """A block where peft's reading of transformers' deprecated ``is_gradient_checkpointing`` warns
    nobody (peft's notice, nothing our users can act on)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
        yield


def wrap_lora(model: Any, config: Any) -> Any:
    """``peft.get_peft_model(model, config)``, quietly (:func:`quiet_peft`)."""
    from peft import get_peft_model

    with quiet_peft():
        return get_peft_model(model, config)


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
        raise IDCError(f"--adapter {adapter!r}: cannot download it ({type(exc).__name__}: {first_line(exc)})") from None


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
            raise IDCError(f"adapter {folder}: adapter_model.safetensors is corrupt ({first_line(exc)})") from None
    elif (folder / "adapter_model.bin").is_file():
        try:
            state = torch.load(folder / "adapter_model.bin", map_location="cpu", weights_only=True)
        except Exception as exc:
            raise IDCError(f"adapter {folder}: adapter_model.bin is not a plain tensor file ({type(exc).__name__}: "
                           f"{first_line(exc)}); "
                           "nothing in it was run") from None
    else:
        raise IDCError(f"adapter {folder}: neither adapter_model.safetensors nor adapter_model.bin")
    return config, state


def _targets_match(name: str, targets: list[str] | str) -> bool:
    """peft's rule for ``target_modules``: a string is a full-match regex, a list matches a module
    whose name is an entry or ends with ``.entry``."""
    if isinstance(targets, str):
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith("." + t) for t in targets)


def check_adapter(model, config: dict[str, Any], state: dict[str, Any], base_name: str, adapter_dir: str) -> None:
    """Fail before any work if the adapter cannot apply to ``model``, with peft's own rule: entries
    of ``target_modules`` that match nothing are fine (BLIP2IDC's released list names a
    cross-attention on all 12 Q-Former layers; the real Q-Former has one on every 2nd), as long as
    one matches, every tensor finds its module with a fitting shape, and every module the targets
    wrap has its tensors (a missing one would stay at its initialisation: a silent no-op)."""
    named = dict(model.named_modules())
    targets = config.get("target_modules") or []
    wrapped = {n for n, m in named.items() if n and _targets_match(n, targets) and getattr(getattr(m, "weight", None), "ndim", 0) == 2}
    if not wrapped:
        shown = targets if isinstance(targets, str) else sorted(targets)[:6]
        raise IDCError(f"adapter {adapter_dir}: none of its target modules {shown} exists in the base model {base_name} "
                       "(an adapter for another architecture?)")
    bad, found = [], {}
    for key, tensor in state.items():
        m = _LORA_KEY.match(key)
        if not m:
            continue
        module = named.get(m.group(1))
        if module is None or not hasattr(module, "weight"):
            bad.append(f"{key}: no module {m.group(1)!r}")
            continue
        found.setdefault(m.group(1), set()).add(m.group(2))
        out_f, in_f = module.weight.shape[:2]
        if m.group(2) == "A" and tensor.shape[1] != in_f:
            bad.append(f"{key}: shape {tuple(tensor.shape)} does not fit input size {in_f}")
        if m.group(2) == "B" and tensor.shape[0] != out_f:
            bad.append(f"{key}: shape {tuple(tensor.shape)} does not fit output size {out_f}")
    if not config.get("layers_to_transform"):  # with a layer filter peft wraps fewer modules than the names match
        bad += [f"{name}: no lora_{'/'.join(sorted({'A', 'B'} - found.get(name, set())))} tensor" for name in sorted(wrapped)
                if found.get(name, set()) != {"A", "B"}]
    if bad:
        raise IDCError(f"adapter {adapter_dir} does not fit the base model {base_name}: " + "; ".join(bad[:5])
                       + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""))
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
        with quiet_peft():
            peft_model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=False)
    except (ValueError, TypeError, KeyError) as exc:
        raise IDCError(f"adapter {adapter_dir}: peft cannot load it ({exc})") from None
    return peft_model.merge_and_unload()

"""Writing the trained adapter: shared by the end of training (:mod:`.train`) and the epoch
validation that keeps the best one (:mod:`.callbacks`)."""

from __future__ import annotations

import json
from pathlib import Path

from ..files import write_text_atomic
from ..runs.folder import remove_owned


def save_adapter(net, folder: Path, base_model: str) -> None:
    """Save the adapter atomically: written beside, then moved over the previous one, so a
    kill leaves either the old adapter or the new one, never half of each."""
    tmp = folder.with_name(f".{folder.name}.tmp")  # hidden: a kill leaves nothing the folder rule calls foreign
    remove_owned(folder.parent, [tmp.name])
    net.save_pretrained(str(tmp))
    cfg_path = tmp / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    # a Hub id as it is; a local base by its absolute path, so peft's AutoPeftModel loads it here
    # (--push-to-hub uploads a copy that names the Hub base or the folder name, never this path)
    cfg["base_model_name_or_path"] = str(Path(base_model).resolve()) if Path(base_model).exists() else base_model
    write_text_atomic(cfg_path, json.dumps(cfg, indent=2))
    old = folder.with_name(f".{folder.name}.old")
    if folder.exists():
        remove_owned(folder.parent, [old.name])
        folder.rename(old)
    tmp.rename(folder)
    remove_owned(folder.parent, [old.name])

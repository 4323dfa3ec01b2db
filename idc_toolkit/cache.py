"""Where the toolkit keeps what it may recompute: ``$IDC_CACHE``, else ``$XDG_CACHE_HOME/idc_toolkit``,
else ``~/.cache/idc_toolkit`` (content hashes of weights, METEOR statistics, the PTB tokenizer's output, SPICE's cache).
Deleting it loses nothing but time."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """The toolkit's cache folder (or a path inside it); not created here."""
    if os.environ.get("IDC_CACHE"):
        base = Path(os.environ["IDC_CACHE"])
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "idc_toolkit"
    return base.joinpath(*parts)

"""One pair, captioned: ``idc-caption BEFORE AFTER --model ...`` and ``idc_toolkit.caption``.

The pair becomes a one-pair dataset (``idc-build folder``) in a scratch folder and is captioned
by ``idc-eval --model``'s own generation (:func:`~idc_toolkit.models.generation.generate_predictions`),
so the caption is the one ``idc-eval`` writes for the same pair, model and options."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Optional

from .errors import IDCError


def caption(before: str | Path, after: str | Path, model: str, run: Any, options: Optional[dict[str, Any]] = None,
            pair_style: str = "scene", mask: Optional[str | Path] = None) -> str:
    """The caption ``model`` gives the pair; ``run`` is a :class:`~idc_toolkit.models.args.GenerateArgs`
    (the checkpoint, device, dtype), ``options`` the runner's own; ``pair_style`` is the one-pair
    dataset's (``scene`` or ``edit``: what a prompt preset or BLIP2IDC's resize and blur follow
    where no option says). ``mask``: also write the toolkit's change mask of the pair there (PNG,
    255 = changed)."""
    import json
    import shutil

    from .builders import make_builder
    from .building import build_dataset
    from .devices import resolve_device
    from .models.generation import generate_predictions
    from .models.registry import get_runner_class

    cls = get_runner_class(model)
    if "entities" in cls.required_columns:
        raise IDCError(f"--model {model} retrieves change entities from a vocabulary of a dataset's training captions, "
                       "which one pair does not have: build a dataset (idc-build folder), add masks and entities "
                       "(idc-precompute), then run idc-eval --model")
    paths = [Path(before), Path(after)]
    for path in paths:
        if not path.is_file():
            raise IDCError(f"{path}: no such image file")
    with tempfile.TemporaryDirectory(prefix="idc-caption-") as tmp:
        raw = Path(tmp) / "raw"
        name = "pair" + (paths[0].suffix or ".png")
        for side, path in zip(("before", "after"), paths):
            (raw / side).mkdir(parents=True)
            shutil.copyfile(path, raw / side / name)
        built = build_dataset(make_builder("folder", raw, {"pair_style": pair_style}), Path(tmp) / "data", progress=False)
        run.device = resolve_device(run.device)
        out = generate_predictions(cls, run, dataset=str(built.out_dir), split="test", out_dir=Path(tmp) / "eval",
                                   options=options, progress=False)
        text = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["caption"]
    if mask is not None:
        from PIL import Image

        from .masks.diff import compute_change_mask

        with Image.open(paths[0]) as b, Image.open(paths[1]) as a:
            found = compute_change_mask(b.convert("RGB"), a.convert("RGB")).mask
        Image.fromarray(found.astype("uint8") * 255).save(mask)
    return text

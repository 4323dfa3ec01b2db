"""The Python API behind ``idc_toolkit.<name>`` (see the package docstring): the same work as
the command-line tools, with names instead of argument strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .evaluators.compare import compare_systems  # noqa: F401  (re-exported)
from .evaluators.scoring import evaluate_predictions  # noqa: F401  (re-exported)


def build_dataset(name: str, raw: Optional[str | Path] = None, out: Optional[str | Path] = None, args: Any = None,
                  **fields: Any):
    """``idc-build NAME --raw RAW --out OUT``: returns a :class:`~idc_toolkit.building.BuildResult`.
    ``args`` is a :class:`~idc_toolkit.building.BuildArgs` (or ``fields`` make one: ``config=``,
    ``strict=``, ``overwrite=``, ...); ``raw`` and ``out`` are its fields too."""
    from .builders import make_builder
    from .building import BuildArgs
    from .building import build_dataset as build
    from .options import with_fields

    given = {k: v for k, v in (("raw", raw), ("out", out)) if v is not None}
    a = with_fields(BuildArgs, args, **fields, **given)
    if a.raw is None or a.out is None:
        from .errors import IDCError

        raise IDCError("build_dataset: raw and out are needed")
    return build(make_builder(name, a.raw, a.config), args=a)


def generate_predictions(model: str, *, dataset: str, out: str | Path, split: str = "test", overwrite: bool = False,
                         progress: bool = True, **options: Any) -> Optional[Path]:
    """``idc-eval --model MODEL ... --predict-only``: writes and returns ``OUT/predictions.jsonl``.
    ``options`` are named as the flags are: the checkpoint's and the batch's (the fields of
    :class:`~idc_toolkit.models.args.GenerateArgs`: ``base_model=``, ``adapter=``, ``device=``, ...),
    the runner's own (``num_entities=``, ``pair_style=``, ...) and the engine's (``shard=``, ...)."""
    from dataclasses import fields

    from .devices import resolve_device
    from .models.generation import generate_predictions as generate
    from .models.registry import get_runner_class
    from .runs import EngineArgs

    engine = EngineArgs(**{k: options.pop(k) for k in [f.name for f in fields(EngineArgs)] if k in options})
    device = resolve_device(options.pop("device", "auto"))
    return generate(get_runner_class(model), dataset=dataset, split=split, out_dir=Path(out), overwrite=overwrite,
                    progress=progress, engine=engine, device=device, **options)


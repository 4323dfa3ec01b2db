"""The Python API behind ``idc_toolkit.<name>`` (see the package docstring): the same work as
the command-line tools, with names instead of argument strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .evaluators.scoring import compare_systems, evaluate_predictions  # noqa: F401  (re-exported)


def build_dataset(name: str, raw: str | Path, out: str | Path, *, config: Optional[dict[str, str]] = None, **options: Any):
    """``idc-build NAME --raw RAW --out OUT``: returns a :class:`~idc_toolkit.building.BuildResult`.
    ``options`` are those of :func:`idc_toolkit.building.build_dataset` (strict, overwrite, ...)."""
    from .builders import make_builder
    from .building import build_dataset as build

    return build(make_builder(name, raw, config), out, **options)


def generate_predictions(model: str, *, base_model: str, dataset: str, out: str | Path, split: str = "test",
                         adapter: Optional[str] = None, device: str = "auto", **options: Any) -> Path:
    """``idc-eval --model MODEL ... --predict-only``: writes and returns ``OUT/predictions.jsonl``.
    Runner options (``num_entities=``, ``pair_style=``, ...) and engine options pass through."""
    from .devices import resolve_device
    from .models.generation import generate_predictions as generate
    from .models.registry import get_runner_class

    cls = get_runner_class(model)
    runner_options = {k: options.pop(k) for k in list(options) if k in cls.option_names()}
    return generate(cls, base_model=base_model, adapter=adapter, dataset=dataset, split=split, out_dir=Path(out),
                    device=resolve_device(device), options=runner_options, **options)


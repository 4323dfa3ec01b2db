"""One pair, captioned: ``idc-caption BEFORE AFTER --model ...`` and ``idc_toolkit.caption``.

The pair becomes a one-pair dataset (``idc-build folder``) in a scratch folder and is captioned
by ``idc-eval --model``'s own generation (:func:`~idc_toolkit.models.generation.generate_predictions`),
so the caption is the one ``idc-eval`` writes for the same pair, model and options. DAVIR's
prompt names the pair's change entities, which ``idc-precompute entities`` retrieves from a
vocabulary of a dataset's training captions: for one pair they are given (``entities``)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from .errors import IDCError
from .options import check_fields, option, python_only, required, taken


def _models() -> list[str]:
    from .models.registry import MODELS

    return MODELS.names()


def _phrases(flag: str, value: Any) -> list[str]:
    """``"a, b"`` (the command line) or a list -> the phrases, stripped, none empty."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(e).strip() for e in items if str(e).strip()]


@dataclass
class CaptionArgs:
    """What one pair is captioned with besides the checkpoint (:class:`~idc_toolkit.models.args.GenerateArgs`)
    and the model's own options: the command line of ``idc-caption`` is derived from it."""

    model: str = required("the model (`--model NAME --help`: its options)", choices=_models)
    mask: Optional[str] = option(None, "also write the toolkit's change mask of the pair (255 = changed)", metavar="OUT.png")
    entities: Optional[list[str]] = option(None, "the pair's change entities, comma-separated, for a model whose prompt "
                                                 "names them (davir)", check=_phrases, metavar="PHRASES")
    pair_style: str = python_only("the one-pair dataset's style, scene or edit: what a prompt preset or BLIP2IDC's resize "
                                  "and blur follow where no option says", lambda: "scene")

    def __post_init__(self) -> None:
        check_fields(self)


class GivenEntities:
    """A column pass writing the same given entities into every row (the one pair's)."""

    def __init__(self, entities: list[str]):
        self.entities = entities

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"entities": list(self.entities), "entity_scores": [0.0] * len(self.entities), "gt_entities": []}
                for _ in rows]


def _with_entities(dataset: Path, out: Path, entities: list[str]) -> Path:
    from .runs import ColumnPass, run_column_pass
    from .schema import ENTITY_FEATURES

    spec = ColumnPass("entities", GivenEntities(entities), ENTITY_FEATURES, {"given_entities": entities},
                      "Change entities given on the command line (idc-caption --entities).")
    return run_column_pass(dataset, out, spec, progress=False).out_dir


def check_mask_path(mask: str | Path) -> Path:
    """Where ``--mask`` writes the pair's change mask: a ``.png`` file in an existing folder."""
    path = Path(mask)
    if path.is_dir():
        raise IDCError(f"--mask {mask}: a folder; name the PNG file to write (e.g. {path / 'mask.png'})")
    if path.suffix.lower() != ".png":
        raise IDCError(f"--mask {mask}: the change mask is written as PNG; name a .png file")
    if not path.parent.is_dir():
        raise IDCError(f"--mask {mask}: its folder {path.parent} does not exist")
    return path


def caption(before: str | Path, after: str | Path, args: Optional[CaptionArgs] = None, run: Any = None,
            options: Union[None, Mapping[str, Any], Any] = None, **fields: Any) -> str:
    """The caption ``args.model`` gives the pair; ``args`` is a :class:`CaptionArgs` (or ``fields``
    make one: ``model=``, ``mask=``, ``entities=``, ``pair_style=``), ``run`` a
    :class:`~idc_toolkit.models.args.GenerateArgs` (the checkpoint, device, dtype; or its fields
    among ``fields``), ``options`` the runner's own (its ``Options``, a dict, or its fields among
    ``fields``). ``mask``: also write the toolkit's change mask of the pair there (PNG, 255 =
    changed). ``entities``: the pair's change entities, for a model whose prompt names them (DAVIR;
    e.g. those ``idc-precompute entities`` retrieved for the pair in a dataset)."""
    import json
    import shutil

    from .builders import make_builder
    from .building import build_dataset
    from .devices import resolve_device
    from .models.args import GenerateArgs
    from .models.generation import generate_predictions
    from .models.registry import get_runner_class

    if isinstance(args, str):  # the earlier order: caption(before, after, model, run, ...)
        fields["model"], args = args, None
    a, run, fields = _split(CaptionArgs, args, fields), _split(GenerateArgs, run, fields, batch_size=1), fields
    cls = get_runner_class(a.model)
    options = cls.make_options(options, **fields)
    cls.check_base_model(run.base_model)
    mask, entities = a.mask, a.entities
    needs_entities = "entities" in cls.required_columns
    if needs_entities and not entities:
        raise IDCError(f"--model {a.model} prompts with the pair's change entities: pass --entities \"phrase, phrase\" "
                       "(idc-precompute entities retrieves them from a dataset's caption vocabulary; one pair has none)")
    paths = [Path(before), Path(after)]
    for path in paths:
        if not path.is_file():
            raise IDCError(f"{path}: no such image file")
    if mask is not None:  # before the caption is computed: a bad --mask never costs a model run
        check_mask_path(mask)
    with tempfile.TemporaryDirectory(prefix="idc-caption-") as tmp:
        raw = Path(tmp) / "raw"
        name = "pair" + (paths[0].suffix or ".png")
        for side, path in zip(("before", "after"), paths):
            (raw / side).mkdir(parents=True)
            shutil.copyfile(path, raw / side / name)
        dataset = build_dataset(make_builder("folder", raw, {"pair_style": a.pair_style}), Path(tmp) / "data",
                                progress=False).out_dir
        if needs_entities:
            dataset = _with_entities(dataset, Path(tmp) / "entities", list(entities or []))
        run = replace(run, device=resolve_device(run.device))
        out = generate_predictions(cls, run, dataset=str(dataset), split="test", out_dir=Path(tmp) / "eval",
                                   options=options, progress=False)
        text = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["caption"]
    if mask is not None:
        from PIL import Image

        from .masks.diff import compute_change_mask

        with Image.open(paths[0]) as b, Image.open(paths[1]) as a_image:
            found = compute_change_mask(b.convert("RGB"), a_image.convert("RGB")).mask
        Image.fromarray(found.astype("uint8") * 255).save(mask)
    return text


def _split(cls: type, given: Any, fields: dict[str, Any], **defaults: Any) -> Any:
    """``given`` (a ``cls``), or the ``cls`` that its fields among ``fields`` make (taken out of
    ``fields``), or ``given`` with them changed."""
    mine = taken(fields, cls)
    if given is None:
        return cls(**{**defaults, **mine})
    return replace(given, **mine) if mine else given

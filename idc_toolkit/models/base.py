"""The base of every checkpoint runner of ``idc-eval --model`` (and ``idc-train``).

A runner module defines one :class:`Runner` subclass: its name, the dataset columns it
needs, its own options (:attr:`Runner.Options`, a dataclass of :func:`~idc_toolkit.options.option`
fields: the command line, ``idc-eval --model NAME --help`` and the run's fingerprint are derived
from it), how it loads a base model + adapter, and how it captions a batch of decoded pairs.
Registering it is one line in :mod:`.registry`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar, Mapping, Optional, Union

from ..devices import load_weights, resolve_dtype
from ..facts import DatasetFacts


@dataclass
class NoOptions:
    """The options of a runner or recipe that has none of its own."""


def make_options(options_cls: type, options: Union[None, Mapping[str, Any], Any] = None, **given: Any) -> Any:
    """An ``options_cls`` object: ``options`` itself when it is one, else made from ``options`` (a
    dict of its fields) and ``given``, every other field at its default; an unknown name is refused
    naming the known ones."""
    from ..errors import IDCError

    if isinstance(options, options_cls) and not given:
        return options
    values = {**(_fields_of(options) if is_dataclass(options) else dict(options or {})), **given}
    known = [f.name for f in fields(options_cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise IDCError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(known) or 'none'}")
    return options_cls(**values)


def _fields_of(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


class Runner:
    name: ClassVar[str]
    #: one line for ``idc-eval --help``
    summary: ClassVar[str] = ""
    required_columns: ClassVar[tuple[str, ...]] = ("pair_id", "before", "after")
    #: a local ``--base-model`` is a transformers checkpoint folder (its ``config.json``)
    transformers_checkpoint: ClassVar[bool] = False
    #: this runner's own options: each field's ``record`` says whether the run's fingerprint holds it
    Options: ClassVar[type] = NoOptions

    @classmethod
    def check_base_model(cls, base_model: Optional[str]) -> None:
        """Fail before any model is loaded when ``base_model`` cannot be this runner's checkpoint
        (``/etc``: a folder that is no model)."""
        if cls.transformers_checkpoint and base_model is not None:
            from ..checks import model_folder

            model_folder("--base-model", base_model)

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """Add this runner's own options (the fields of :attr:`Options`) to ``group``."""
        from ..options import add_options, cli_fields

        add_options(group, cls.Options, cli_fields(cls.Options), f"{cls.name}: ")

    @classmethod
    def make_options(cls, options: Union[None, Mapping[str, Any], Any] = None, **given: Any) -> Any:
        """This runner's :attr:`Options` from an object, a dict of its fields or keywords (:func:`make_options`)."""
        return make_options(cls.Options, options, **given)

    @classmethod
    def options(cls, args: argparse.Namespace) -> Any:
        """This runner's :attr:`Options` from a parsed command line."""
        from ..options import from_namespace

        return from_namespace(cls.Options, args)

    @classmethod
    def dataset_options(cls, columns: list[str], options: Any) -> dict[str, Any]:
        """What the dataset's columns add to the run (its fingerprint, ``model.json``, the runner's
        keywords): none by default; the VLM asks a dataset's multiple-choice questions."""
        return {}

    @classmethod
    def check_dataset(cls, facts: DatasetFacts, columns: list[str], options: Any, where: str) -> None:
        """Fail before any model is loaded when the dataset cannot be run (missing columns, ...);
        ``options``: this runner's :attr:`Options` (or a dict of its fields)."""
        from ..errors import IDCError

        missing = [c for c in cls.required_columns if c not in columns]
        if missing:
            raise IDCError(f"{where} has no {', '.join(missing)} column(s), which {cls.name} needs"
                           + ("; run idc-precompute entities first" if "entities" in missing else ""))

    def __init__(self, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                 revision: Optional[str] = None, options: Any = None, **dataset_options: Any):
        """``options``: this runner's :attr:`Options`; ``dataset_options``: what :meth:`dataset_options` added."""
        raise NotImplementedError

    def generate(self, rows: list[dict[str, Any]]) -> list[str]:
        """Captions of a batch of pairs (``before``/``after`` decoded PIL images)."""
        raise NotImplementedError

    @classmethod
    def description(cls, base_model: str, adapter: Optional[str], device: str, dtype: str, facts: DatasetFacts,
                    revision: Optional[str] = None, options: Any = None, **dataset_options: Any) -> dict[str, Any]:
        """What ``model.json`` records of the run (preprocessing, prompt, decoding, dtype), from
        the arguments alone: a run finished after a kill, with no model loaded, records the same."""
        try:
            resolved = str(resolve_dtype(dtype, device))
        except (RuntimeError, AssertionError):  # a CUDA device named on a driver without one (Ray)
            resolved = f"{dtype} on {device}"
        return {"base_model": base_model, "adapter": adapter, "revision": revision, "dtype": resolved}


def load_pretrained(model_class, processor_class, name: str, revision: Optional[str], dtype):
    """``(model, processor)`` of a BLIP-2-family checkpoint, with the image token set up
    (:func:`ensure_image_token`): how the runners and the training recipes load a base model."""
    kwargs = {"revision": revision} if revision else {}
    processor = processor_class.from_pretrained(name, **kwargs)
    check_image_size(processor, model_class.config_class.from_pretrained(name, **kwargs), name)
    model = load_weights(model_class, name, dtype=dtype, **kwargs)
    ensure_image_token(model, processor)
    return model, processor


def check_image_size(processor, config, name: str) -> None:
    """Refuse a processor whose images are not the size the vision model was built for: BLIP-2's
    embeddings would silently use the first position embeddings of a smaller grid, and DAVIR's
    attention loss would meet a grid its configuration does not describe."""
    from ..errors import IDCError

    side = getattr(getattr(config, "vision_config", None), "image_size", None)
    size = getattr(getattr(processor, "image_processor", None), "size", None) or {}
    made = (size.get("height"), size.get("width")) if hasattr(size, "get") else (None, None)
    if side and all(made) and made != (side, side):
        raise IDCError(f"--base-model {name}: its processor makes {made[0]}x{made[1]} images, its vision model takes "
                       f"{side}x{side} (config.json's vision_config.image_size); save the checkpoint with its own processor")


def ensure_image_token(model, processor) -> None:
    """transformers 5 builds BLIP-2 / InstructBLIP inputs from ``config.image_token_index``."""
    tok = processor.tokenizer
    if getattr(model.config, "image_token_index", None) is None:
        if "<image>" not in tok.get_vocab():
            tok.add_tokens(["<image>"], special_tokens=True)
            model.resize_token_embeddings(len(tok))
        model.config.image_token_index = tok.convert_tokens_to_ids("<image>")
    if getattr(processor, "num_query_tokens", None) is None:
        processor.num_query_tokens = model.config.num_query_tokens

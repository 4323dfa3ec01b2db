"""What every console script shares: --version, -v/-q logging, and one-line errors.

Every CLI's ``main`` runs its work through :func:`run`, so bad input, a missing optional
dependency and Ctrl-C end in one line naming the cause (never a traceback), and the exit
code says which: 1 error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from typing import Callable

from .. import __version__
from ..errors import IDCError
from ..stores import STORE_DATASET, STORE_OUT  # noqa: F401  (the commands' help names them)

#: the extra that provides each optional top-level module
EXTRAS = {
    "torch": "models", "torchvision": "models", "transformers": "models", "diffusers": "models", "peft": "models",
    "accelerate": "models", "open_clip": "models", "segment_anything": "models", "scipy": "models",
    "spacy": "models", "safetensors": "models", "tokenizers": "models", "ray": "distributed",
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every default (``(default: ...)``) without repeating it where help already does."""

    def _get_help_string(self, action):
        text = action.help or ""
        flag = action.nargs == 0  # store_true / store_false: the flag's own help says what it does
        if "%(default)" in text or flag or action.default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return text
        return text + " (default: %(default)s)"


def shown_out(out: object, local: object) -> str:
    """How a command's last line names its output: the folder, or for an object-store ``--out``
    the URI (without secrets) and the local copy beside it."""
    from ..stores import shown_uri, uri_scheme

    text = str(out)
    if uri_scheme(text) in (None, "file"):
        return str(local)
    return f"{shown_uri(text)} (local copy: {local})"


class _HelpDescribedLater(argparse.ArgumentParser):
    """A parser whose description is a function, asked only when help is shown."""

    def format_help(self) -> str:
        if callable(self.description):
            self.description = self.description()
        return super().format_help()


def parser(prog: str, description: str | Callable[[], str]) -> argparse.ArgumentParser:
    """A command's parser with the common options; ``description`` may be a function (text that
    costs imports to write, asked only by ``--help``)."""
    cls = _HelpDescribedLater if callable(description) else argparse.ArgumentParser
    p = cls(prog=prog, description=description, formatter_class=HelpFormatter)
    add_common(p)
    return p


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", action="version", version=f"%(prog)s (idc-toolkit) {__version__}")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    p.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")


def add_engine_options(p) -> None:
    """How a run-engine job is split and where it runs (idc-precompute, idc-augment, idc-eval --model)."""
    from ..options import add_options, cli_fields
    from ..runs import EngineArgs

    add_options(p, EngineArgs, cli_fields(EngineArgs))


def add_run_options(p, options_cls: type, required: tuple[str, ...] = ()) -> None:
    """The options of a :class:`~idc_toolkit.runs.args.RunArgs` class, the engine's last;
    ``required``: as :func:`~idc_toolkit.options.add_options` takes it."""
    from ..options import add_options, cli_fields
    from ..runs import EngineArgs

    engine = cli_fields(EngineArgs)
    add_options(p, options_cls, [name for name in cli_fields(options_cls) if name not in engine] + engine, required=required)


def engine_args(args: argparse.Namespace):
    """The :class:`~idc_toolkit.runs.EngineArgs` :func:`add_engine_options`' flags give."""
    from ..options import from_namespace
    from ..runs import EngineArgs

    return from_namespace(EngineArgs, args)


def model_name(argv: list[str]) -> str | None:
    """The value of ``--model`` in ``argv``, before parsing: the parser then adds that model's
    own options (shown by ``--model NAME --help``)."""
    for k, a in enumerate(argv):
        if a == "--model" and k + 1 < len(argv):
            return argv[k + 1]
        if a.startswith("--model="):
            return a.split("=", 1)[1]
    return None


#: libraries whose FutureWarning / DeprecationWarning lines (transformers' "`is_gradient_checkpointing`
#: is deprecated", from inside the Trainer, on every idc-train) are shown only with ``-v``
LIBRARIES_WARNING_AHEAD = ("transformers", "diffusers", "peft", "accelerate", "torch", "open_clip", "timm", "datasets")


def setup_logging(args: argparse.Namespace) -> None:
    """Quiet by default: the toolkit's own INFO lines, and only warnings from libraries
    (open_clip, for one, logs its progress on the root logger), without their deprecation
    notices and ``datasets``' bars; ``-v`` adds the libraries' INFO and those,
    ``-vv`` everyone's DEBUG, ``-q`` leaves warnings and errors only."""
    verbose = getattr(args, "verbose", 0)
    ours = logging.WARNING if getattr(args, "quiet", False) else logging.DEBUG if verbose >= 2 else logging.INFO
    libraries = logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING
    logging.basicConfig(level=max(libraries, logging.WARNING) if getattr(args, "quiet", False) else libraries,
                        format="%(message)s", stream=sys.stderr, force=True)
    logging.getLogger("idc_toolkit").setLevel(ours)
    for noisy in ("httpx", "urllib3", "filelock", "datasets", "huggingface_hub", "ray"):
        logging.getLogger(noisy).setLevel(max(libraries, logging.WARNING))
    if not verbose:
        quiet_dataset_bars()
        for library in LIBRARIES_WARNING_AHEAD:  # their deprecation notices are for their callers' authors, not users
            for category in (FutureWarning, DeprecationWarning):
                warnings.filterwarnings("ignore", category=category, module=library)


def quiet_dataset_bars() -> None:
    """``datasets`` draws a bar per split the first time it reads a folder ("Generating train
    split: 100%|...", three lines in the demo): library chatter, shown with ``-v``. Without
    importing ``datasets`` (``idc-eval --predictions`` never does): its own environment switch,
    unless the user set it; once imported, its own function."""
    import os

    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
    else:
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def missing_extra(exc: ModuleNotFoundError) -> str:
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra:
        return f"{top} is not installed; install the extra: pip install 'idc-toolkit[{extra}]'"
    return f"missing module {exc.name!r}: {exc}"


def run(prog: str, work: Callable[[], int]) -> int:
    """Run ``work`` with the toolkit's error contract (see the module docstring)."""
    from ..runs.ranks import in_group, leave_distributed

    caller_group = in_group()  # a caller's own process group is its to end
    try:
        code = work() or 0
        sys.stdout.flush()  # inside the try: a closed pipe (`| head`) surfaces here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # Python's documented way: stdout pointed at devnull, so the exit-time flush finds no pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except IDCError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        print(f"{prog}: error: {missing_extra(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        if not caller_group:  # torchrun's ranks: the group accelerate made for the Trainer, or the engine's
            leave_distributed()

"""The README's and the docs' examples, run as a reader runs them.

Every ```bash and ```python block of README.md and of the ``docs/`` pages is executed in reading
order (``PAGES``: what one page's examples write, a later page's read), command by command, in a
scratch working directory that holds nothing but what the README's setup line writes there:
``idc-demo --out idc_demo`` (run here with ``--n-per-type 5 --bootstrap 20``, the same folders and
files from a smaller release). The test writes no file and changes no command; environment
variables come only from a block's own ``export`` line. A block it does not run says so in the
page, on the line above it: ``<!-- not run by the docs test: REASON -->`` (a GPU, a download, a
cluster), or it is the README's setup block, which ``.ci/run`` executes. A block of any other
language holds no command. Optional ``[...]`` parts and ``# comments`` are dropped, as a reader
reads them.

Commands run in-process through each console script's ``main`` (``torchrun -m MODULE``: the
module's ``main`` as one rank; ranks are tested in test_run_engines / test_training), which
keeps this module to seconds per command.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, pyproject

pytestmark = pytest.mark.java

#: the pages whose examples run, in order: what one page's examples write, a later page's read
PAGES = ["README.md", "docs/building.md", "docs/run-engine.md", "docs/masks-and-entities.md", "docs/augmentation.md",
         "docs/models.md", "docs/training.md", "docs/scoring.md", "docs/viewer.md"]
#: the line above a block the test does not run, in the page itself
NOT_RUN = re.compile(r"^\s*<!-- not run by the docs test: (?P<reason>\S.*?) -->\s*$")
SETUP = re.compile(r"^\s*<!-- setup-commands:")
#: the setup line's demo, run here on a smaller release (the same folders and files)
DEMO_SIZE = ["--n-per-type", "5", "--bootstrap", "20"]
RUN = ("bash", "python")


@dataclass
class Block:
    page: str
    line: int
    language: str
    text: str
    above: str  # the last non-blank line before the fence

    @property
    def not_run(self) -> str | None:
        """Why the test does not run it, as the page says, or None."""
        if SETUP.match(self.above):
            return ".ci/run executes the README's setup block"
        m = NOT_RUN.match(self.above)
        return m.group("reason") if m else None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(pages: list[str] = PAGES) -> list[Block]:
    out = []
    for page in pages:
        text = (REPO / page).read_text(encoding="utf-8")
        for m in re.finditer(r"^( *)```(\w*)\n(.*?)^\1```", text, re.M | re.S):
            before = [line for line in text[:m.start()].splitlines() if line.strip()]
            out.append(Block(page, text[:m.start()].count("\n") + 1, m.group(2), m.group(3), before[-1] if before else ""))
    return out


def _scripts() -> dict[str, str]:
    """Every console script the package installs, as pyproject.toml declares it."""
    return pyproject()["project"]["scripts"]


def test_every_page_with_examples_is_run():
    """A docs page with a command block that PAGES does not list would never be run."""
    pages = [str(p.relative_to(REPO)) for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]]
    with_blocks = {b.page for b in _blocks(pages) if b.language in RUN}
    assert with_blocks <= set(PAGES), f"pages with command blocks the test does not run: {with_blocks - set(PAGES)}"


def test_blocks_not_run_are_marked_and_others_hold_no_command():
    """Only a block marked in its page is left out; a command cannot hide in a ```text block."""
    blocks = _blocks([str(p.relative_to(REPO)) for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]])
    markers = [b for b in blocks if NOT_RUN.match(b.above) or SETUP.match(b.above)]
    assert all(b.language in RUN for b in markers), [str(b) for b in markers if b.language not in RUN]
    programs = {*_scripts(), "python", "python3", "torchrun", "source", "export"}
    for b in blocks:
        if b.language not in RUN:
            first_words = {line.split()[0] for line in b.text.splitlines() if line.strip()}
            assert not first_words & programs, f"{b}: a command in a ```{b.language} block (neither run nor marked)"


def test_setup_block_is_what_ci_runs_and_makes_idc_demo():
    """.ci/run reads exactly two lines from the README's setup block; the first ends with the demo
    whose output folder every example names."""
    setup = [b for b in _blocks(["README.md"]) if SETUP.match(b.above)]
    assert len(setup) == 1 and setup[0].language == "bash"
    lines = [line for line in setup[0].text.splitlines() if line.strip()]
    assert len(lines) == 2, lines
    assert lines[0].split("&&")[-1].split() == [".venv/bin/idc-demo", "--out", "idc_demo"], lines[0]


def _commands(block: str) -> list[str]:
    """One string per command: continuations joined, comments and ``[...]`` options dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$|^\s*#.*$", "", line)
        line = re.sub(r"\s*\[[^\]]*\]", "", line).strip()
        if line:
            out.append(" ".join(line.split()))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The scratch directory, holding what the README's setup line writes there: the demo's folder."""
    from idc_toolkit.cli.demo import main as demo

    work = tmp_path_factory.mktemp("readme")
    cwd = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert demo(["--out", "idc_demo", *DEMO_SIZE]) == 0
    finally:
        os.chdir(cwd)
    return work


def _run(command: str, monkeypatch, exported: set[str]) -> None:
    """One command of a ```bash block, in-process."""
    from importlib import import_module

    argv = shlex.split(command)
    if argv[0] == "export":  # a variable the block sets visibly, for its later commands
        for assignment in argv[1:]:
            name, value = assignment.split("=", 1)
            monkeypatch.setenv(name, value)
            exported.add(name)
        return
    if argv == ["source", ".venv/bin/activate"]:  # the test runs in that environment: its scripts are beside Python
        folder = Path(sys.executable).parent
        assert (folder / "activate").is_file() and all((folder / s).is_file() for s in _scripts()), folder
        return
    named = set(re.findall(r"\$\{?(\w+)", command))
    assert named <= exported, f"{command}: uses {sorted(named - exported)}, which no block sets"
    argv = shlex.split(os.path.expandvars(command))
    scripts = _scripts()
    if argv[0] == "torchrun":
        assert argv[1:3] == ["--nproc-per-node", "4"] and argv[3] == "-m", command
        module, args = argv[4], argv[5:]
    elif argv[0] in scripts:
        module, args = scripts[argv[0]].split(":")[0], argv[1:]
    elif argv[:2] == ["python", "-c"]:
        exec(compile(argv[2], "<python -c>", "exec"), {})
        return
    elif argv[:2] == ["python", "-m"]:
        module, args = argv[2], argv[3:]
    else:
        raise AssertionError(f"the docs run a program this test does not know: {command}")
    rc = import_module(module).main(args)
    assert rc in (0, None), f"exit {rc}: {command}"


def test_examples_run_as_written(workdir, monkeypatch, capsys):
    work = workdir
    monkeypatch.chdir(work)
    tree_before = _source_tree_state()
    ran, not_run, exported = [], [], set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in _blocks():
            if block.language not in RUN:
                continue
            if block.not_run:
                not_run.append(block)
                continue
            if block.language == "python":
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block.text, f"<{block}>", "exec"), {})
                ran.append(str(block))
                continue
            for command in _commands(block.text):
                assert "..." not in command, f"{block}: a command with a placeholder, neither runnable nor marked: {command}"
                _run(command, monkeypatch, exported)
                ran.append(command)
    capsys.readouterr()
    ours = {str(w.message) for w in caught if "idc_toolkit" in w.filename or "/evaluators/" in w.filename}
    assert ours == set(), "the examples warn"

    assert len(ran) >= 20 and len(not_run) >= 7, (len(ran), [str(b) for b in not_run])
    # what the examples claim exists, where they say it is
    from datasets import load_dataset

    assert set(load_dataset("data/spot_the_diff")) == {"train", "validation", "test"}
    assert (work / "data/view/index.html").is_file() and (work / "data/figure/figure.pdf").is_file()
    assert (work / "data/view_py/index.html").is_file() and (work / "data/lmms_tasks/idc_clevr_change.yaml").is_file()
    assert json.loads((work / "eval/qwen2vl_zero_shot/model.json").read_text())["model"] == "vlm"
    assert (work / "data/street_mask.png").is_file() and load_dataset("data/my_pairs", split="test").num_rows == 2
    for folder in ("data/demo_masks", "data/demo_masks_ranks", "data/demo_entities", "data/demo_aug",
                   "runs/blip2idc/adapter", "runs/davir/adapter", "eval/davir/attention", "eval/blip2idc",
                   "eval/blip2idc_ranks", "eval/davir_trained", "eval/first_look", "eval/py_blip2idc", "eval/my_pairs"):
        assert (work / folder).is_dir(), folder
    assert json.loads((work / "eval/clevr_test/metrics.json").read_text())["by_category"]["move"]["n"] > 0
    # the coco and RCC files score the baseline as the dataset does
    baseline = json.loads((work / "eval/clevr_test/metrics.json").read_text())
    for copy in ("eval/coco_files", "eval/rcc"):
        assert json.loads((work / copy / "metrics.json").read_text())["overall"]["CIDEr"] == pytest.approx(
            baseline["overall"]["CIDEr"]), copy
    assert load_dataset("data/demo_aug", split="train").num_rows == 4 * 2  # --limit 4 rows, 2 edits each
    assert _source_tree_state() == tree_before, "an example wrote into the source tree"


def _source_tree_state() -> str:
    """``git status`` of the checkout (untracked files included), or the file list without git."""
    try:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "\n".join(sorted(str(p) for p in REPO.rglob("*") if ".git" not in p.parts))

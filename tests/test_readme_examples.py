"""The README's and the docs' examples, run as written.

Every ```bash block of README.md and of the ``docs/`` pages (in ``PAGES`` order, the order a
reader meets them) and the README's ```python block are executed command by command, in a
scratch working directory holding what a reader has after the README's setup line: the demo's
``idc_demo/`` (``idc-demo --out idc_demo``, run here on a smaller release), a raw Spot-the-Diff
release under ``raw/spot-the-diff`` and the predictions and reference files the scoring examples
name. Nothing in a command is replaced: the examples name the demo's folders and the tiny
stand-ins ``python -m idc_toolkit.demo.stand_ins idc_demo/models`` writes. Optional ``[...]`` parts and
``# comments`` are dropped. Every command is either run or listed in ``NOT_RUN`` with the reason
and the test that covers it instead, and none may write into the source tree.

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
import warnings
from pathlib import Path

import pytest

from conftest import REPO, make_spot_the_diff

pytestmark = pytest.mark.java

#: commands not run, with the reason and where the same code is tested
NOT_RUN: dict[str, str] = {
    "idc-precompute masks --dataset /shared/clevr_change --out /shared/clevr_change_masks "
    "--sam-checkpoint /shared/sam_vit_h_4b8939.pth --engine ray --ray-address auto --ray-gpus-per-actor 1":
        "a Ray cluster; a local Ray instance runs the same engine in test_run_engines",
}


#: the pages whose examples run, in order: what one page's examples write, a later page's read
PAGES = ["README.md", "docs/building.md", "docs/run-engine.md", "docs/masks-and-entities.md", "docs/augmentation.md",
         "docs/models.md", "docs/training.md", "docs/scoring.md", "docs/viewer.md"]


def _blocks(language: str, pages: list[str] = PAGES) -> list[str]:
    out = []
    for page in pages:
        text = (REPO / page).read_text(encoding="utf-8")
        out += [m.group(2) for m in re.finditer(r"^( *)```" + language + r"\n(.*?)^\1```", text, re.M | re.S)]
    return out


def test_every_page_with_examples_is_run():
    """A docs page with a command block that PAGES does not list would never be run."""
    with_blocks = {str(p.relative_to(REPO)) for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
                   if _blocks("bash", [str(p.relative_to(REPO))])}
    assert with_blocks <= set(PAGES), f"pages with command blocks the test does not run: {with_blocks - set(PAGES)}"


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


def _python_block() -> str:
    """The first Python example (the one that calls ``idc_toolkit``'s commands)."""
    return next(b for b in _blocks("python", ["README.md"]) if "import idc_toolkit as idc" in b)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The scratch directory, holding what a reader has after the README's setup line."""
    from idc_toolkit.cli.demo import main as demo
    from idc_toolkit.demo.generator import generate_demo_release

    work = tmp_path_factory.mktemp("readme")
    make_spot_the_diff(work / "raw" / "spot-the-diff", {
        "train": [{"img_id": str(i), "sentences": [f"the car {i} left", "a car is gone"]} for i in range(1, 5)],
        "val": [{"img_id": "5", "sentences": ["a person appeared"]}],
        "test": [{"img_id": str(i), "sentences": [f"the bike {i} moved", "a bike moved"]} for i in range(6, 9)]})
    # a reader's own photographs: my_pairs/before/ and after/ (same names) with a captions file
    from PIL import Image

    for k, name in enumerate(("street.jpg", "garden.jpg")):
        for side, shade in (("before", 60), ("after", 180)):
            (work / "my_pairs" / side).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 48), (shade, 40 * k, 90)).save(work / "my_pairs" / side / name)
    (work / "my_pairs" / "captions.csv").write_text("image,caption\nstreet.jpg,a car drove off\ngarden.jpg,the bench is gone\n")
    # a smaller demo than the setup line writes (5 scene ids per change type, a smaller canvas): the same folders
    generate_demo_release(work / "idc_demo" / "raw", n_per_type=5, size=(112, 84), seed=1)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert demo(["--out", "idc_demo", "--bootstrap", "20"]) == 0
    finally:
        os.chdir(cwd)
    _write_prediction_files(work, work / "idc_demo" / "clevr_change_demo")
    return work


def _write_prediction_files(work: Path, dataset: Path) -> None:
    """The predictions and reference files the scoring examples name, from the demo's test split:
    the toolkit's formats, coco-caption files, and RCC's own (``000123.png`` / ``_n`` ids)."""
    from idc_toolkit.evaluators.predictions import load_references_dataset

    refs = load_references_dataset(str(dataset), "test")
    captions = refs.captions

    def write(name, data):
        (work / name).write_text(json.dumps(data))

    write("preds.json", {pid: caps[-1] for pid, caps in captions.items()})
    ids = list(captions)
    write("coco_refs.json", {"images": [{"id": pid} for pid in ids],
                             "annotations": [{"image_id": pid, "id": k * 100 + j, "caption": c}
                                             for k, pid in enumerate(ids) for j, c in enumerate(captions[pid])]})
    write("type_map.json", {cat: [pid for pid in ids if refs.categories[pid] == cat]
                            for cat in sorted(set(refs.categories.values()))})

    def rcc(pid: str) -> str:
        return pid[:-2] + ".png_n" if pid.endswith("_n") else pid + ".png"

    write("sc_nsc_results.json", [{"image_id": rcc(pid), "caption": caps[-1]} for pid, caps in captions.items()])
    write("total_change_captions_reformat.json", {
        "images": [{"id": rcc(pid)} for pid in ids],
        "annotations": [{"image_id": rcc(pid), "id": k * 100 + j, "caption": c}
                        for k, pid in enumerate(ids) for j, c in enumerate(captions[pid])]})
    write("type_mapping.json", {cat: [rcc(pid) for pid in ids if refs.categories[pid] == cat and not pid.endswith("_n")]
                                for cat in sorted(set(refs.categories.values())) if cat != "distractor"})


def _run(command: str) -> None:
    """One README command, in-process."""
    from importlib import import_module

    import tomllib

    argv = shlex.split(command)
    # every console script the package installs, as pyproject.toml declares it
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    if argv[0] == "torchrun":
        assert argv[1:3] == ["--nproc-per-node", "4"] and argv[3] == "-m", command
        module, args = argv[4], argv[5:]
    elif argv[0] in scripts:
        module, args = scripts[argv[0]].split(":")[0], argv[1:]
    elif argv[:2] == ["python", "-c"]:
        exec(compile(argv[2], "<README python -c>", "exec"), {})
        return
    elif argv[:2] == ["python", "-m"]:
        module, args = argv[2], argv[3:]
    else:
        raise AssertionError(f"the README runs a program this test does not know: {command}")
    rc = import_module(module).main(args)
    assert rc in (0, None), f"exit {rc}: {command}"


def test_readme_examples_run_as_written(workdir, monkeypatch, capsys):
    work = workdir
    monkeypatch.chdir(work)
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "1")
    tree_before = _source_tree_state()
    ran, skipped = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in _blocks("bash")[1:]:  # the first block is the setup the CI runs itself
            for command in _commands(block):
                if command in NOT_RUN:
                    skipped.append(command)
                    continue
                assert "..." not in command, f"a command with a placeholder, neither runnable nor in NOT_RUN: {command}"
                _run(os.path.expandvars(command))
                ran.append(command)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(_python_block(), "<README python>", "exec"), {})
    capsys.readouterr()
    ours = {str(w.message) for w in caught if "idc_toolkit" in w.filename or "/evaluators/" in w.filename}
    assert ours == set(), "the examples warn"

    assert sorted(skipped) == sorted(NOT_RUN), "a NOT_RUN entry no longer in the docs"
    assert len(ran) >= 20
    # what the examples claim exists, where they say it is
    from datasets import load_dataset

    assert set(load_dataset("data/spot_the_diff")) == {"train", "validation", "test"}
    assert (work / "data/view/index.html").is_file() and (work / "data/figure/figure.pdf").is_file()
    assert (work / "data/view_py/index.html").is_file() and (work / "data/lmms_tasks/idc_clevr_change.yaml").is_file()
    assert json.loads((work / "eval/qwen2vl_zero_shot/model.json").read_text())["model"] == "vlm"
    for folder in ("data/demo_masks", "data/demo_masks_ranks", "data/demo_entities", "data/demo_aug",
                   "runs/blip2idc/adapter", "runs/davir/adapter", "eval/davir/attention", "eval/blip2idc",
                   "eval/blip2idc_ranks", "eval/davir_trained", "eval/first_look", "eval/py_blip2idc"):
        assert (work / folder).is_dir(), folder
    assert json.loads((work / "eval/clevr_test/metrics.json").read_text())["by_category"]["move"]["n"] > 0
    assert load_dataset("data/demo_aug", split="train").num_rows == 4 * 2  # --limit 4 rows, 2 edits each
    assert _source_tree_state() == tree_before, "an example wrote into the source tree"


def _source_tree_state() -> str:
    """``git status`` of the checkout (untracked files included), or the file list without git."""
    try:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "\n".join(sorted(str(p) for p in REPO.rglob("*") if ".git" not in p.parts))

"""The README's and the docs' examples, run as written on the demo's data.

Every ```bash block of README.md and of the ``docs/`` pages (in ``PAGES`` order, the order a
reader meets them) and the README's first ```python block are executed command by command, in a scratch working directory: what one example writes (``data/``,
``runs/``, ``eval/``) is what the next one reads. Optional ``[...]`` parts and ``# comments``
are dropped. The only other changes are those a machine without weights, GPUs, raw releases or
network forces, each one listed in ``SUBSTITUTIONS`` (tiny random models for the named
checkpoints, ``--device cpu``, a few steps instead of an epoch, the local builds for Hub ids);
each must apply somewhere, so a README edit that leaves one unused fails here. Every command
is either run or listed in ``NOT_RUN`` with the reason and the test that covers it instead,
and none may write into the source tree.

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
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from conftest import REPO, TINY_CLIP, make_emu_edit, make_spot_the_diff

pytestmark = pytest.mark.java

FAST_TRAIN = "--device cpu --max-steps 2 --batch-size 4 --val-limit 2 --no-progress"
RELEASED_ADAPTER = "BLIP2IDC/code_release/weights/spot_sota/spot_1e-4_rank_8_seed_1234__8_15.bin.opt"

#: (README text, what runs instead, why): applied in this order to each joined command
SUBSTITUTIONS: list[tuple[str, str, str]] = [
    ("path/to/spot-the-diff", "{spot_raw}", "a tiny raw Spot-the-Diff release in the real layout"),
    ("raw/spot-the-diff", "{spot_raw}", "the same raw release, from Python"),
    ("idc_toolkit/", "data/", "Hub ids resolve to the local builds of the same datasets (no network)"),
    ("--sam-checkpoint sam_vit_h_4b8939.pth", "--sam-checkpoint {sam} --sam-type tiny", "a tiny random SAM"),
    ("--clip-model ViT-L-14 --clip-checkpoint open_clip_vit_l14.bin",
     "--clip-model tiny-clip --clip-config {clip} --random-weights", "a tiny random open_clip model"),
    ('clip_model="ViT-L-14", clip_checkpoint="open_clip_vit_l14.bin"',
     'clip_model="tiny-clip", clip_config=r"{clip}", random_weights=True', "the same, from Python"),
    ("--editor path/to/instruct-pix2pix-magicbrush", "--editor {ip2p} --steps 2 --resolution 32",
     "a tiny random InstructPix2Pix, 2 steps at 32 px"),
    ("--paraphraser meta-llama/Llama-2-7b-chat-hf", "--paraphraser {chat}", "a tiny random chat LM"),
    ("--edits-per-image 8 --paraphrases 4", "--edits-per-image 2 --paraphrases 2", "fewer edits, same code"),
    ("Salesforce/blip2-opt-2.7b --revision 51572668da0eb669e01a189dc22abe6088589a24", "{blip2}",
     "a tiny random BLIP-2 OPT (a local folder has no revision)"),
    ("Salesforce/blip2-opt-2.7b", "{blip2}", "the same model without a pinned revision"),
    ("Salesforce/instructblip-vicuna-7b", "{iblip}", "a tiny random InstructBLIP-Vicuna"),
    ("Qwen/Qwen2-VL-2B-Instruct", "{vlm}", "a tiny random Qwen2-VL with a Qwen-style chat template"),
    ("--device cuda", "--device cpu", "no GPU"),
    ("--dtype float16", "--dtype float32", "float16 matmuls are a GPU's"),
    ("idc-train --model blip2idc", "idc-train --model blip2idc --base-model {blip2} " + FAST_TRAIN, "2 steps"),
    ("idc-train --model davir", "idc-train --model davir --base-model {iblip} " + FAST_TRAIN, "2 steps"),
    ("--bootstrap 1000", "--bootstrap 100", "fewer resamples, same code"),
    ("bootstrap=1000", "bootstrap=100", "the same, from Python"),
]

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


def _substitute(command: str, values: dict[str, str], used: set[str]) -> str:
    for old, new, _why in SUBSTITUTIONS:
        if old in command:
            used.add(old)
            command = command.replace(old, new.format(**values))
    return command


@pytest.fixture(scope="module")
def workdir(demo_dataset, tiny_models, tmp_path_factory):
    """The scratch directory, holding what the README assumes a reader has: the raw releases,
    the demo dataset as ``data/clevr_change``, checkpoints (tiny and random), predictions."""
    from transformers import Blip2ForConditionalGeneration, InstructBlipForConditionalGeneration

    from idc_toolkit.builders import make_builder

    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.masks.sam import build_tiny_sam
    from idc_toolkit.models import tiny
    import torch

    root = tmp_path_factory.mktemp("readme")
    models = root / "models"
    values = {
        "spot_raw": str(make_spot_the_diff(root / "raw_spot", {
            "train": [{"img_id": str(i), "sentences": [f"the car {i} left", "a car is gone"]} for i in range(1, 5)],
            "val": [{"img_id": "5", "sentences": ["a person appeared"]}],
            "test": [{"img_id": str(i), "sentences": [f"the bike {i} moved", "a bike moved"]} for i in range(6, 9)]})),
        "blip2": str(tiny_models("blip2")),
        "iblip": str(tiny_models("iblip")),
        "ip2p": str(tiny_models("ip2p")),
        "chat": str(tiny_models("chat")),
        "vlm": str(tiny_models("qwen2_vl")),
        "sam": str(models / "sam_tiny.pth"),
        "clip": str(models / "tiny-clip.json"),
    }
    models.mkdir(parents=True, exist_ok=True)
    torch.save(build_tiny_sam().state_dict(), values["sam"])
    Path(values["clip"]).write_text(json.dumps(TINY_CLIP))
    work = root / "work"
    shutil.copytree(demo_dataset, work / "data" / "clevr_change")
    emu = make_emu_edit(root / "raw_emu", {"validation": [{"idx": i, "instruction": f"add a red hat {i}", "task": "add"}
                                                          for i in range(2)]})
    build_dataset(make_builder("emu_edit", emu), work / "data" / "emu_edit", progress=False)
    # the adapters the README names: BLIP2IDC's released peft 0.5 folder, and two of today's format
    def blip2():  # a fresh model per adapter (peft wraps the model it is given)
        return Blip2ForConditionalGeneration.from_pretrained(values["blip2"])

    # as released: its config names the paper's Hub base, so applying it to the tiny copy warns (asserted below)
    tiny.save_lora_adapter(blip2(), work / RELEASED_ADAPTER, tiny.blip2idc_targets(12), old_format=True)
    tiny.save_lora_adapter(blip2(), work / "blip2idc_lora", tiny.blip2idc_targets(12), seed=1, base_name=values["blip2"])
    iblip = InstructBlipForConditionalGeneration.from_pretrained(values["iblip"])
    tiny.save_lora_adapter(iblip, work / "davir_lora", tiny.davir_targets(), base_name=values["iblip"])
    _write_prediction_files(work, demo_dataset)
    return work, values


def _write_prediction_files(work: Path, dataset: Path) -> None:
    """The predictions and reference files the scoring examples name, from the demo's test split:
    the toolkit's formats, coco-caption files, and RCC's own (``000123.png`` / ``_n`` ids)."""
    from idc_toolkit.evaluators.predictions import load_references_dataset

    refs = load_references_dataset(str(dataset), "test")
    captions = refs.captions

    def write(name, data):
        (work / name).write_text(json.dumps(data))

    write("preds.json", {pid: caps[-1] for pid, caps in captions.items()})
    write("preds_a.json", {pid: caps[0] for pid, caps in captions.items()})
    write("preds_b.json", {pid: "the scene is the same" for pid in captions})
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

    argv = shlex.split(command)
    scripts = {"idc-build": "build", "idc-precompute": "precompute", "idc-augment": "augment", "idc-eval": "eval",
               "idc-train": "train", "idc-demo": "demo", "idc-view": "view"}
    if argv[0] == "torchrun":
        assert argv[1:3] == ["--nproc-per-node", "4"] and argv[3] == "-m", command
        module, args = argv[4], argv[5:]
    elif argv[0] in scripts:
        module, args = f"idc_toolkit.cli.{scripts[argv[0]]}", argv[1:]
    elif argv[:2] == ["python", "-c"]:
        exec(compile(argv[2], "<README python -c>", "exec"), {})
        return
    else:
        raise AssertionError(f"the README runs a program this test does not know: {command}")
    rc = import_module(module).main(args)
    assert rc in (0, None), f"exit {rc}: {command}"


def test_readme_examples_run_as_written(workdir, monkeypatch, capsys):
    work, values = workdir
    monkeypatch.chdir(work)
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "1")
    tree_before = _source_tree_state()
    used: set[str] = set()
    ran, skipped = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in _blocks("bash")[1:]:  # the first block is the setup the CI runs itself
            for command in _commands(block):
                if command in NOT_RUN:
                    skipped.append(command)
                    continue
                assert "..." not in command, f"a README command with a placeholder, neither runnable nor in NOT_RUN: {command}"
                _run(os.path.expandvars(_substitute(command, values, used)))
                ran.append(command)
        code = _substitute(_python_block(), values, used)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, "<README python>", "exec"), {})
    capsys.readouterr()
    # the toolkit's own warnings: only the released adapter's base name (the paper's Hub id, not the local copy)
    ours = {str(w.message) for w in caught if "idc_toolkit" in w.filename or "/evaluators/" in w.filename}
    assert ours == {f"adapter {RELEASED_ADAPTER} was trained on 'Salesforce/blip2-opt-2.7b'; applying it to '{values['blip2']}'"}

    assert sorted(skipped) == sorted(NOT_RUN), "a NOT_RUN entry no longer in the README"
    assert used == {old for old, _new, _why in SUBSTITUTIONS}, f"unused substitutions: {set(s for s, _, _ in SUBSTITUTIONS) - used}"
    assert len(ran) >= 20
    # what the examples claim exists, where they say it is
    from datasets import load_dataset

    assert set(load_dataset("data/spot_the_diff")) == {"train", "validation", "test"}
    assert (work / "data/view/index.html").is_file() and (work / "data/figure/figure.pdf").is_file()
    assert (work / "data/view_blip2idc/index.html").is_file() and (work / "data/lmms_tasks/idc_clevr_change.yaml").is_file()
    assert json.loads((work / "eval/qwen2vl_zero_shot/model.json").read_text())["model"] == "vlm"
    for folder in ("data/clevr_change_masks", "data/clevr_change_entities", "data/syned_aug", "runs/blip2idc/adapter",
                   "runs/davir/adapter", "eval/blip2idc_spot", "eval/davir/attention", "eval/blip2idc"):
        assert (work / folder).is_dir(), folder
    assert json.loads((work / "eval/clevr_test/metrics.json").read_text())["by_category"]["move"]["n"] > 0
    assert (work / "eval/first_look/metrics.json").is_file()
    assert _source_tree_state() == tree_before, "a README example wrote into the source tree"


def _source_tree_state() -> str:
    """``git status`` of the checkout (untracked files included), or the file list without git."""
    try:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "\n".join(sorted(str(p) for p in REPO.rglob("*") if ".git" not in p.parts))

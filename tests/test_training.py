"""idc-train on tiny random models (CPU, seconds): both recipes learn, eq. 7 as the paper writes
it and as we normalise it against hand-computed values, resume equals an uninterrupted run,
the adapter round-trips through idc-eval, bad inputs fail before any model is loaded."""

import json
import math

import numpy as np
import pytest

from idc_toolkit.cli.eval import main as eval_main
from idc_toolkit.cli.train import main as train_main
from idc_toolkit.models.davir_fac import fac_loss
from idc_toolkit.training import TrainArgs, train

from conftest import ranks_stderr

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip

    root = tmp_path_factory.mktemp("bases")
    return {"blip2idc": save_tiny_blip2(root / "blip2"), "davir": save_tiny_instructblip(root / "iblip")}


def test_eq7_against_hand_computed_values_for_both_readings():
    a_b = torch.tensor([[[0.1, 0.1, 0.1, 0.1], [0.1, 0.2, 0.1, 0.0], [0.0, 0.03, 0.05, 0.02], [0.0, 0.0, 0.05, 0.05]]])
    a_a = torch.full((1, 4, 4), 1 / 16)
    m = torch.zeros(1, 4, 4)
    m[0, 1:3, 1:3] = 1.0

    def softmax(x):
        e = np.exp(x - x.max())
        return e / e.sum()

    def kl(p, q):
        return float(sum(pi * math.log(pi / qi) for pi, qi in zip(p, q) if pi > 0))

    ab, aa, mm = a_b.flatten().numpy(), a_a.flatten().numpy(), m.flatten().numpy()
    paper = kl(softmax(ab), softmax(mm)) + kl(softmax(aa), softmax(mm))
    assert float(fac_loss(a_b, a_a, m, "paper")) == pytest.approx(paper, rel=1e-5)
    target = mm / mm.sum()
    normalised = kl(target, ab / ab.sum()) + kl(target, aa / aa.sum())
    assert float(fac_loss(a_b, a_a, m, "normalised")) == pytest.approx(normalised, rel=1e-5)
    # a pair without a change: the paper's reading still counts it (uniform target), ours skips it
    empty = torch.zeros(1, 4, 4)
    assert float(fac_loss(a_b, a_a, empty, "paper")) > 0 and float(fac_loss(a_b, a_a, empty, "normalised")) == 0.0


@pytest.mark.parametrize("model", ["blip2idc", "davir"])
def test_loss_decreases_on_the_demo_dataset(model, bases, demo_dataset, davir_dataset, tmp_path):
    from transformers.utils import logging as hf_logging

    data = demo_dataset if model == "blip2idc" else davir_dataset
    hf_logging.enable_progress_bar()
    r = train(TrainArgs(model, str(data), tmp_path / "run", base_model=str(bases[model]), max_steps=30, batch_size=4, lr=1e-2,
              val_split=None, device="cpu", progress=False, report_to="none"))
    assert not hf_logging.is_progress_bar_enabled()  # no progress: not even transformers' "Loading weights" bar
    hf_logging.enable_progress_bar()
    assert len(r.losses) == 30 and np.mean(r.losses[-5:]) < np.mean(r.losses[:5]) - 0.05, r.losses
    cfg = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert cfg["complete"] and cfg["fingerprint"]["model"] == model and cfg["versions"]["peft"]
    # the Trainer's FLOP count multiplies the parameters by the pixels here: not recorded as if it were one
    assert "train_runtime" in cfg["trainer_metrics"] and "total_flos" not in cfg["trainer_metrics"]
    assert (r.adapter / "adapter_model.safetensors").is_file()


def _adapter_tensors(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


def test_off_a_terminal_progress_is_plain_lines_and_no_log_dicts(bases, demo_dataset, tmp_path, capsys):
    """In a log file (here: captured output, not a terminal) a run shows one line per tenth of its
    steps, no bar redrawn with carriage returns, and never the Trainer's raw log dicts."""
    capsys.readouterr()
    assert train_main(["--model", "blip2idc", "--dataset", str(demo_dataset), "--base-model", str(bases["blip2idc"]),
                       "--out", str(tmp_path / "run"), "--max-steps", "2", "--batch-size", "4", "--val-limit", "2",
                       "--device", "cpu", "--report-to", "none"]) == 0
    out, err = capsys.readouterr()
    assert "{'loss'" not in out + err and "\r" not in err
    assert [line for line in err.splitlines() if line.startswith("[idc-train] step")][-1].startswith("[idc-train] step 2/2 (100%)")


def test_seeds_train_one_run_each_into_the_parent_folder(bases, demo_dataset, tmp_path, capsys):
    args = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--out", str(tmp_path / "runs"), "--base-model",
            str(bases["blip2idc"]), "--max-steps", "1", "--batch-size", "4", "--val-split", "", "--device", "cpu",
            "--no-progress", "--report-to", "none", "--seeds", "3", "7"]
    assert train_main(args) == 0
    configs = [json.loads((tmp_path / "runs" / f"seed_{s}" / "train_config.json").read_text()) for s in (3, 7)]
    assert [c["fingerprint"]["seed"] for c in configs] == [3, 7]
    weights = [(tmp_path / "runs" / f"seed_{s}" / "adapter" / "adapter_model.safetensors").read_bytes() for s in (3, 7)]
    assert weights[0] != weights[1]
    assert "seed 7:" in capsys.readouterr().out
    assert train_main([*args[:-3], "--seeds", "1", "1"]) == 1
    assert "a seed is given twice" in capsys.readouterr().err


def test_train_then_idc_eval_round_trip_and_other_settings_refused(bases, demo_dataset, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--out", str(out), "--base-model", str(bases["blip2idc"]),
            "--epochs", "2", "--batch-size", "8", "--lr", "2e-2", "--device", "cpu", "--no-progress", "--report-to", "none"]
    assert train_main(args) == 0
    epochs = json.loads((out / "epochs.json").read_text())
    assert len(epochs) == 2 and "CIDEr" in epochs[0] and "CIDEr/color" in epochs[0] and (out / "epochs.md").is_file()
    assert (out / "adapter" / "adapter_config.json").is_file()
    for name, extra in (("base", []), ("tuned", ["--adapter", str(out / "adapter")])):
        assert eval_main(["--model", "blip2idc", "--base-model", str(bases["blip2idc"]), *extra, "--dataset", str(demo_dataset),
                          "--out", str(tmp_path / name), "--device", "cpu", "--metrics", "BLEU", "--no-progress"]) == 0
    read = [[json.loads(line)["caption"] for line in (tmp_path / n / "predictions.jsonl").read_text().splitlines()] for n in ("base", "tuned")]
    assert read[0] != read[1]
    capsys.readouterr()
    assert train_main([*args[:-7], "--lr", "1e-3", "--device", "cpu", "--no-progress", "--report-to", "none"]) == 1
    err = capsys.readouterr().err
    assert "holds a training run with other settings" in err and "lr: 0.02 -> 0.001" in err and "--overwrite" in err


def test_bad_inputs_fail_before_any_model_is_loaded(bases, demo_dataset, tmp_path, capsys, monkeypatch):
    import transformers

    def no_loading(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.InstructBlipForConditionalGeneration, "from_pretrained", no_loading)
    monkeypatch.setattr(transformers.Blip2ForConditionalGeneration, "from_pretrained", no_loading)
    base = ["--dataset", str(demo_dataset), "--out", str(tmp_path / "o"), "--device", "cpu", "--no-progress"]
    cases = [
        (["--model", "davir", "--base-model", str(bases["davir"])], "no 'entities' column, which davir trains on: run idc-precompute entities first"),
        (["--model", "davir", "--base-model", str(bases["blip2idc"]), "--dataset", str(demo_dataset)], "no 'entities' column"),
        (["--model", "blip2idc", "--base-model", str(bases["davir"])], "is a instructblip model; blip2idc trains a blip-2 model"),
        (["--model", "blip2idc", "--base-model", str(bases["blip2idc"]), "--lora-rank", "0"], "--lora-rank: must be at least 1"),
        (["--model", "blip2idc", "--base-model", str(bases["blip2idc"]), "--split", "nope"], "cannot load split 'nope'"),
    ]
    for extra, message in cases:
        try:
            code = train_main([*base, *extra])
        except SystemExit as exc:  # argparse's own usage error for a value out of range
            code = exc.code
        assert code in (1, 2)
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err


def test_davir_attention_pictures_during_training(bases, davir_dataset, tmp_path):
    from PIL import Image

    r = train(TrainArgs("davir", str(davir_dataset), tmp_path / "run", base_model=str(bases["davir"]), max_steps=4, batch_size=4,
              lr=1e-2, options={"attention_every": 2}, val_split=None, device="cpu", progress=False, report_to="none"))
    pictures = sorted((r.out / "attention").iterdir())
    assert [p.name.split("_")[0] for p in pictures] == ["step-000002"] * 2 + ["step-000004"] * 2
    img = Image.open(pictures[0])
    assert img.size[0] == 2 * 112 and np.asarray(img)[..., 1].max() == 255  # before | after, mask outline in green


def test_a_checkpoint_cut_mid_write_is_not_resumed_from(tmp_path):
    from idc_toolkit.training.train import last_complete_checkpoint

    folder = tmp_path / "checkpoints"
    for step, complete in ((2, True), (4, True), (6, False)):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        if complete:
            (folder / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert last_complete_checkpoint(folder) == str(folder / "checkpoint-4")
    assert not (folder / "checkpoint-6").exists() and last_complete_checkpoint(tmp_path / "none") is None


KILL_IN_VALIDATION = """
import sys, time, pathlib
from idc_toolkit.training import callbacks
original = callbacks.EpochValidation._cider
def held(self, model, batch_size):
    scores = original(self, model, batch_size)
    if len(self.table) == {epoch}:  # the validation of epoch {epoch} + 1 is under way
        pathlib.Path(sys.argv[-1]).write_text("in validation")
        time.sleep(600)
    return scores
callbacks.EpochValidation._cider = held
from idc_toolkit.cli.train import main
sys.exit(main(sys.argv[1:-1]))
"""


def test_kill_9_inside_validation_resumes_to_the_same_table_and_adapter(bases, demo_dataset, tmp_path, capsys):
    """``kill -9`` inside the second epoch's validation, with a step checkpoint in the middle of
    that epoch, then the same command: it resumes from that checkpoint (the first epoch's row of
    the table from it, the epoch's last steps trained again, its validation redone) and, on CPU
    with a fixed seed, epochs.json and the kept adapter equal an uninterrupted run's bit for bit;
    a third run finds the work done."""
    import os
    import signal
    import subprocess
    import sys
    import time

    # 30 training pairs in batches of 8: 4 steps an epoch, checkpoints after steps 3 and 6 (mid-epoch)
    args = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--base-model", str(bases["blip2idc"]), "--epochs", "2",
            "--batch-size", "8", "--lr", "2e-2", "--device", "cpu", "--no-progress", "--report-to", "none", "--seed", "5",
            "--val-limit", "6", "--save-steps", "3"]
    capsys.readouterr()
    assert train_main([*args, "--out", str(tmp_path / "whole")]) == 0
    # --val-limit validates a subset on purpose: no note per epoch that the rest went unscored
    assert "have no prediction" not in capsys.readouterr().err
    out, marker = tmp_path / "cut", tmp_path / "marker"
    script = tmp_path / "held.py"
    script.write_text(KILL_IN_VALIDATION.replace("{epoch}", "1"))
    proc = subprocess.Popen([sys.executable, str(script), *args, "--out", str(out), str(marker)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "validation was never reached"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert max(int(p.name.split("-")[1]) for p in (out / "checkpoints").iterdir()) == 6
    assert len(json.loads((out / "epochs.json").read_text())) == 1  # killed before the second row
    assert train_main([*args, "--out", str(out)]) == 0
    whole = json.loads((tmp_path / "whole" / "epochs.json").read_text())
    assert json.loads((out / "epochs.json").read_text()) == whole and len(whole) == 2
    a, b = _adapter_tensors(tmp_path / "whole" / "adapter"), _adapter_tensors(out / "adapter")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    args_done = TrainArgs("blip2idc", str(demo_dataset), out, base_model=str(bases["blip2idc"]), epochs=2, batch_size=8,
                          lr=2e-2, device="cpu", progress=False, report_to="none", seed=5, val_limit=6, save_steps=3)
    assert train(args_done).already_done


def test_two_gloo_ranks_train_what_one_process_trains_at_the_same_global_batch(bases, demo_dataset, tmp_path):
    """torchrun, 2 CPU ranks of batch 4 against one process of batch 8: the same steps.jsonl
    losses, the same validation row (captions split between the ranks and gathered), the same
    adapter; only rank 0 wrote the run folder."""
    import os
    import subprocess
    import sys

    from safetensors.torch import load_file

    from idc_toolkit.demo.tiny import save_tiny_blip2

    base = save_tiny_blip2(tmp_path / "no_dropout", dropout=0.0)
    common = ["--model", "blip2idc", "--dataset", str(demo_dataset), "--split", "train[:24]", "--base-model", str(base),
              "--epochs", "1", "--lr", "2e-2", "--device", "cpu", "--no-progress", "--report-to", "none", "--seed", "2",
              "--val-limit", "6", "--lora-dropout", "0", "--trainer-arg", "optim=sgd"]
    # plain SGD: AdamW's steps are lr * sign(gradient) where a gradient is ~0 (the real 32 query tokens leave some
    # LoRA weights such gradients), so the order of a sum over ranks would flip them, as in the accumulation test
    assert train_main([*common, "--batch-size", "8", "--out", str(tmp_path / "one")]) == 0
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "idc_toolkit.cli.train",
           *common, "--batch-size", "4", "--out", str(tmp_path / "two")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, ranks_stderr(proc.stderr)
    steps = [[json.loads(line) for line in (tmp_path / n / "steps.jsonl").read_text().splitlines()] for n in ("one", "two")]
    assert [r["step"] for r in steps[1]] == [1, 2, 3]  # one line per optimizer step: rank 0 alone wrote
    for a, b in zip(*steps):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4), (a, b)
    epochs = [json.loads((tmp_path / n / "epochs.json").read_text()) for n in ("one", "two")]
    assert len(epochs[1]) == 1 and epochs[1][0]["CIDEr"] == pytest.approx(epochs[0][0]["CIDEr"], abs=1e-6)
    a, b = (load_file(str(tmp_path / n / "adapter" / "adapter_model.safetensors")) for n in ("one", "two"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


def test_model_card_report_to_and_push_to_hub(bases, demo_dataset, tmp_path, monkeypatch):
    """The kept adapter has a filled model card (Hub metadata: base_model, datasets, a model-index with
    the validation scores; no local path in it); validation CIDEr per category reaches TensorBoard under
    eval/ (read back from the event file); peft's AutoPeftModel loads the adapter from its folder alone;
    --push-to-hub uploads the adapter with that card and a config naming no local path."""
    import huggingface_hub
    import yaml
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    uploads = []

    class FakeApi:
        def create_repo(self, repo, **k):
            uploads.append(("create", repo))

        def upload_folder(self, folder_path, repo_id, **k):
            folder = __import__("pathlib").Path(folder_path)
            uploads.append(("upload", repo_id, sorted(p.name for p in folder.iterdir()),
                            json.loads((folder / "adapter_config.json").read_text())))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.chdir(tmp_path)  # the Trainer's TensorBoard writer resolves its log folder from here
    r = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "run", base_model=str(bases["blip2idc"]), epochs=1, batch_size=8,
              lr=2e-2, val_limit=6, device="cpu", progress=False, report_to="tensorboard", push_to_hub="me/blip2idc-demo"))
    events = sorted((tmp_path / "run").rglob("events.out.tfevents.*"))
    assert events, "no TensorBoard event file under the run folder"
    tags = set()
    for f in events:
        acc = EventAccumulator(str(f))
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    assert "eval/CIDEr" in tags and any(t.startswith("eval/CIDEr/") for t in tags), sorted(tags)
    assert not any(t.startswith("train/eval") for t in tags) and "train/loss" in tags and "train/total_flos" not in tags
    card = (r.adapter / "README.md").read_text()
    assert "library_name: peft" in card and "| `variant` | `ours` |" in card and "evennou2025reframing" in card
    assert "Kept adapter: epoch 1" in card and str(tmp_path) not in card and str(bases["blip2idc"]) not in card
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["datasets"] == ["idc_toolkit/clevr_change"]
    scores = {m["name"]: m["value"] for m in meta["model-index"][0]["results"][0]["metrics"]}
    kept = json.loads((tmp_path / "run" / "epochs.json").read_text())[-1]
    assert scores["CIDEr"] == pytest.approx(kept["CIDEr"], abs=1e-4)
    config = json.loads((r.adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(bases["blip2idc"].resolve())
    from peft import AutoPeftModel

    loaded = AutoPeftModel.from_pretrained(str(r.adapter))  # the base is found where the adapter says
    assert any("lora_A" in n for n, _ in loaded.named_parameters())
    assert uploads[0] == ("create", "me/blip2idc-demo") and uploads[1][:2] == ("upload", "me/blip2idc-demo")
    assert {"README.md", "adapter_config.json", "adapter_model.safetensors"} <= set(uploads[1][2])
    assert uploads[1][3]["base_model_name_or_path"] == bases["blip2idc"].name  # the uploaded copy names no local path


def _attention_on_mask(run, base, dataset):
    """Mean share of the final-layer CLS attention that lies on the change (eq. 6's soft mask),
    over the validation pairs that have a change, with the run's adapter."""
    from datasets import load_dataset
    from peft import PeftModel

    from idc_toolkit.card_data import dataset_facts
    from idc_toolkit.models.davir_fac import attention_on_mask
    from idc_toolkit.models.registry import get_recipe_class

    from dataclasses import replace

    facts = dataset_facts(dataset)
    settings = run.settings.replace(options=replace(run.settings.options, attention_every=1))  # capture the attention
    recipe = get_recipe_class("davir")(settings, facts)
    model = PeftModel.from_pretrained(recipe.load(torch.float32), str(run.adapter)).eval()
    ds = load_dataset(str(dataset), split="validation")
    rows = [{**ds[i], "__index": i, "__epoch": 0} for i in range(len(ds))]
    shares = []
    for k in range(0, len(rows), 8):
        batch = recipe.collate(rows[k:k + 8])
        mask = batch.pop("idc_soft_mask")
        batch.pop("labels")
        with torch.no_grad():
            model(**batch)
        shares.append(attention_on_mask(recipe.attention.last, mask))
    return float(np.nanmean(torch.cat(shares).numpy()))


def test_fac_pulls_attention_onto_the_change_on_the_demo_setup(davir_dataset, tmp_path):
    """The demo's InstructBLIP stand-in before pretraining (idc_toolkit.demo.pretrain), same seed:
    training with lambda = 0.1 puts more of the vision encoder's attention on the change than
    lambda = 0."""
    from idc_toolkit.demo.pretrain import instructblip_base

    model, processor = instructblip_base(0)
    base = tmp_path / "base"
    model.save_pretrained(base)
    processor.save_pretrained(base)
    shares = {}
    for lam in (0.0, 0.1):
        run = train(TrainArgs("davir", str(davir_dataset), tmp_path / f"run{lam}", base_model=str(base), epochs=8, batch_size=8,
                    lr=5e-3, val_split=None, device="cpu", progress=False, report_to="none", seed=0,
                    options={"fac_weight": lam, "fac_reading": "normalised"}))
        shares[lam] = _attention_on_mask(run, base, davir_dataset)
    assert shares[0.1] > 1.08 * shares[0.0], shares  # a pull, not noise (figures: benchmarks/README.md)


@pytest.mark.parametrize("old, new, names", [
    ("idc_toolkit.masks.fac", "idc_toolkit.models.davir_fac", ["fac_loss", "fac_kl_loss", "attention_on_mask", "FAC_READINGS"]),
    ("idc_toolkit.masks.fac", "idc_toolkit.masks.patch_masks", ["soft_patch_mask"]),
    ("idc_toolkit.models.layouts", "idc_toolkit.models.published_configs", ["LAYOUTS", "real_config", "meta_model"]),
])
def test_a_moved_module_keeps_its_old_path_for_a_release_with_a_warning(old, new, names):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        shim = importlib.import_module(old)
    moved = importlib.import_module(new)
    assert all(getattr(shim, n) is getattr(moved, n) for n in names)

"""Training speed and memory of ``idc-train``, both recipes, tiny random models on this machine.

Builds the demo dataset (with change masks and entities for DAVIR), then runs ``idc-train``
as a separate process per recipe for ``--steps`` optimizer steps at ``--batch-size`` and prints
steps/s, samples/s (model start-up excluded: measured from the Trainer's own runtime) and the
peak RSS of the process. The real BLIP-2 OPT-2.7B / InstructBLIP-Vicuna-7B configurations at
batch 16 in bf16 need a GPU, which this project's machines do not have: not measured here.

    python benchmarks/train_speed.py [--steps 40] [--batch-size 8]
    python benchmarks/train_speed.py --real-size [--steps 12] [--compile] [--best-batch] [--recipes blip2idc]  (on a GPU)

``--real-size`` (a GPU): both recipes on randomly initialised weights of the real configurations
(below; the tiny tokenizers and processors), batch 16, bf16, no validation, each run in its own
process: samples/s over the Trainer's runtime and after the first step, MFU (``step_flops``: the
model FLOPs of a pair, ``idc_toolkit.training.flops``, times the samples/s after the first step,
over the GPU's bf16 dense peak, ``gpu_peaks.py``) and the peak of
``torch.cuda.max_memory_allocated``, beside ``--dry-run``'s estimate of the same run. The runs
use ``idc-train``'s defaults on a GPU (DataLoader workers, pinned memory, fused AdamW, the losses
read back every 10 steps); ``--compile`` adds a ``--compile`` run of each recipe and its first
step's time.

It then prints ``idc-train --dry-run``'s figures for the real configurations, built from their
published sizes (BLIP-2 OPT-2.7B: EVA ViT-g 1408x39, Q-Former 768x12, OPT-2.7B 2560x32;
InstructBLIP-Vicuna-7B: the same ViT and Q-Former, Llama-7B 4096x32) on the meta device: exact
parameter counts and the memory estimate of one step at batch 16 in bf16, with and without
gradient checkpointing. Measuring those on a GPU is what the estimate is to be checked against.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=None, help="optimizer steps of each run (default: 40 tiny, 12 real size)")
    p.add_argument("--batch-size", type=int, default=None, help="default: 8 tiny, 16 real size")
    p.add_argument("--real-size", action="store_true", help="the real configurations on a GPU (random weights)")
    p.add_argument("--compile", action="store_true", help="with --real-size: a --compile run of each recipe too")
    p.add_argument("--best-batch", action="store_true",
                   help="with --real-size: a run of each recipe at the largest batch (a multiple of 8) the estimate fits in 90%% "
                        "of the GPU's memory too (--make-data's --pairs-per-type must give that many pairs)")
    p.add_argument("--pairs-per-type", type=int, default=10, help="--make-data: demo pairs per change type (6 types)")
    p.add_argument("--recipes", default="blip2idc,davir", help="with --real-size: which recipes, comma-separated")
    p.add_argument("--data", help="with --real-size: the folder --make-data wrote (a GPU machine without spaCy)")
    p.add_argument("--make-data", metavar="DIR", help="write the demo data (ds/, ents/) into DIR and stop")
    p.add_argument("--estimates-only", action="store_true", help="only --dry-run's figures of the real configurations")
    p.add_argument("--child", nargs=8, help=argparse.SUPPRESS)
    return p


def main(args: argparse.Namespace) -> None:
    from processes import measure

    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip

    args.steps, args.batch_size = args.steps or 40, args.batch_size or 8
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ds, ents = demo_data(root)
        runs = {"blip2idc": (save_tiny_blip2(root / "blip2"), ds), "davir": (save_tiny_instructblip(root / "iblip"), ents)}
        print(f"idc-train, tiny random models, CPU ({args.steps} steps, batch {args.batch_size}, no validation)")
        print("| recipe | steps/s | samples/s | wall (incl. start-up) | peak RSS |\n| --- | ---: | ---: | ---: | ---: |")
        for name, (base, data) in runs.items():
            out = root / f"run_{name}"
            cmd = [sys.executable, "-m", "idc_toolkit.cli.train", "--model", name, "--dataset", str(data), "--out", str(out),
                   "--base-model", str(base), "--max-steps", str(args.steps), "--batch-size", str(args.batch_size),
                   "--val-split", "", "--device", "cpu", "--no-progress", "--report-to", "none", "--lr", "1e-3"]
            wall, peak = measure(cmd)
            runtime = json.loads((out / "train_config.json").read_text())["trainer_metrics"]["train_runtime"]
            print(f"| {name} | {args.steps / runtime:.1f} | {args.steps * args.batch_size / runtime:.1f} | {wall:.1f} s | "
                  f"{peak / 2**20:.0f} MB |")


def real_size_configs() -> dict:
    """The two papers' base configurations, from their published sizes (no download)."""
    from idc_toolkit.models.published_configs import real_config

    return {"blip2idc": real_config("Salesforce/blip2-opt-2.7b"), "davir": real_config("Salesforce/instructblip-vicuna-7b")}


def real_size_estimates() -> None:
    from idc_toolkit.training.estimate import estimate

    names = {"blip2idc": "BLIP-2 OPT-2.7B", "davir": "InstructBLIP-Vicuna-7B"}
    print("\nidc-train --dry-run on the real configurations (meta device; batch 16, bf16)")
    print("| recipe (base) | parameters | trainable | weights | LoRA state | activations | total | total, checkpointing |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, config in real_size_configs().items():
            folder = Path(tmp) / name
            config.save_pretrained(folder)
            rows = []
            for ckpt in (False, True):
                cls, s, facts = real_settings(name, folder, 16, ckpt)
                rows.append(estimate(cls, s, facts, "cpu"))
            e, c = rows
            gib = 2 ** 30
            print(f"| {name} ({names[name]}) | {sum(e.parameters.values()) / 1e9:.2f} B | {sum(e.trainable.values()) / 1e6:.2f} M "
                  f"| {e.weight_bytes / gib:.1f} GiB | {e.lora_state_bytes / gib:.2f} GiB | {e.activation_bytes / gib:.1f} GiB "
                  f"| {e.total_bytes / gib:.1f} GiB | {c.total_bytes / gib:.1f} GiB |")


DEVICE = os.environ.get("IDC_BENCH_DEVICE", "cuda")  # cpu: a smoke run of the --real-size path with tiny configurations


def demo_data(root: Path, n_per_type: int = 10) -> tuple[Path, Path]:
    """The demo dataset, and the same with DAVIR's masks and entities (tiny random CLIP)."""
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.entities.column import add_change_entities
    from idc_toolkit.masks.column import add_change_masks

    raw = generate_demo_release(root / "raw", n_per_type=n_per_type, size=(112, 84), seed=1)
    build_dataset(make_builder("clevr_change", raw), root / "ds", progress=False)
    add_change_masks(root / "ds", root / "masks", device="cpu", progress=False)
    clip = root / "tiny-clip-bench.json"
    clip.write_text(json.dumps({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8,
                                                                "head_width": 16},
                                "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}))
    ents = add_change_entities(root / "masks", root / "ents", clip_model="tiny-clip-bench", clip_config=str(clip),
                               device="cpu", progress=False, random_weights=True)
    return root / "ds", ents.out_dir


def save_real_size(name: str, folder: Path, device: str) -> Path:
    """A randomly initialised model of the real configuration, in bf16, with the tiny processor."""
    import torch
    from transformers import AutoConfig, Blip2ForConditionalGeneration, InstructBlipForConditionalGeneration

    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip

    (save_tiny_blip2 if name == "blip2idc" else save_tiny_instructblip)(folder)  # the processor and its special ids
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(folder)
    side = real_size_configs()[name].vision_config.image_size  # the real 224 px (the tiny processor's 56 px would shrink the ViT's work)
    processor.image_processor.size = {"height": side, "width": side}
    processor.save_pretrained(folder)
    tiny = AutoConfig.from_pretrained(folder)
    config = real_size_configs()[name]
    config.image_token_index = tiny.image_token_index
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(config.text_config, key, getattr(tiny.text_config, key))
    model_class = Blip2ForConditionalGeneration if name == "blip2idc" else InstructBlipForConditionalGeneration
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = model_class(config)
    torch.set_default_dtype(torch.float32)
    model.save_pretrained(folder)
    return folder


def real_settings(name: str, base, batch: int, checkpointing: bool = False) -> tuple:
    """``(recipe class, settings, facts)`` of an ``idc-train`` run of ``name`` on ``base`` at ``batch``
    (bf16, no validation) on the demo data's facts: what every real-size figure here is of."""
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run

    cls, facts = get_recipe_class(name), DatasetFacts(builder="clevr_change", pair_style="scene")
    return cls, resolve_run(cls, facts, TrainArgs(name, dataset="data", out="run", base_model=str(base), batch_size=batch,
                                                  dtype="bfloat16", val_split=None, gradient_checkpointing=checkpointing)), facts


def step_flops(name: str, base: str, data: str) -> float:
    """The model FLOPs of one pair of an optimizer step (``idc_toolkit.training.flops``,
    checkpointing's recomputation not included), the captions at the dataset's mean token count."""
    from transformers import AutoProcessor

    from idc_toolkit.training.flops import step_pair_flops

    cls, settings, facts = real_settings(name, base, 1)
    tokens = mean_caption_tokens(AutoProcessor.from_pretrained(base).tokenizer, data)
    return step_pair_flops(cls, settings.replace(max_caption_tokens=tokens), facts)


def mean_caption_tokens(tokenizer, data: str) -> int:
    """The mean token count of the training split's captions."""
    import datasets

    captions = [c for row in datasets.load_dataset(data, split="train")["captions"] for c in row]
    return round(sum(len(tokenizer(c, add_special_tokens=False)["input_ids"]) for c in captions) / len(captions))


def real_size_child(name: str, base: str, data: str, out: str, steps: int, batch: int, checkpointing: bool,
                    compiled: bool = False) -> None:
    """One ``train()`` run in this process; prints its peak memory, samples/s over the Trainer's
    runtime and after the first step (each step's end synchronised: the step itself reads nothing
    back) as JSON."""
    import statistics
    import time

    import torch
    from transformers import TrainerCallback

    from idc_toolkit.training import TrainArgs
    from idc_toolkit.training.train import train

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.times, self.last = [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self.last = self.last or time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if DEVICE == "cuda":
                torch.cuda.synchronize()
            now = time.perf_counter()
            self.times.append(now - self.last)
            self.last = now

    timer = StepTimes()
    args = TrainArgs(name, dataset=data, out=out, base_model=base, batch_size=batch, dtype="bfloat16", val_split="",
                     max_steps=steps, device=DEVICE, report_to="none", progress=False, lr=1e-4,
                     gradient_checkpointing=checkpointing, compile=compiled)
    train(args, callbacks=[timer])
    record = json.loads((Path(out) / "train_config.json").read_text())
    runtime = record["trainer_metrics"]["train_runtime"]
    peak = torch.cuda.max_memory_allocated() if DEVICE == "cuda" else 0
    print("RESULT " + json.dumps({"peak_GiB": peak / 2**30, "samples_per_s": steps * batch / runtime,
                                  "steady_samples_per_s": batch / statistics.median(timer.times[1:]) if steps > 1 else None,
                                  "first_step_s": timer.times[0], "compile": (record.get("speed") or {}).get("compile")}))


def largest_batch(name: str, base: Path, batch: int) -> int:
    """The largest batch, a multiple of 8, that ``--dry-run``'s estimate fits in 90% of the GPU's memory."""
    import torch

    from idc_toolkit.training.estimate import estimate

    memory = torch.cuda.get_device_properties(0).total_memory if DEVICE == "cuda" else 2 * 2**30
    return max(8, estimate(*real_settings(name, base, batch), DEVICE).largest_batch(int(0.9 * memory)) // 8 * 8)


def real_size_runs(steps: int, batch: int = 16, data_root: Optional[str] = None, compiled: bool = False,
                   recipes: tuple = ("blip2idc", "davir"), best_batch: bool = False) -> None:
    """``data_root``: ``demo_data``'s two folders made beforehand (``ds/``, ``ents/``), e.g. on a
    machine with spaCy, for a GPU machine without it."""
    import subprocess

    import torch

    from idc_toolkit.training.estimate import estimate

    import transformers

    from gpu_peaks import gpu_model, mfu, shown

    gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    model = gpu_model(gpu) if DEVICE == "cuda" else None
    print(f"idc-train on the real configurations, random weights ({gpu}, torch {torch.__version__}, transformers "
          f"{transformers.__version__}, {steps} steps, batch {batch}, bf16, no validation; MFU: step_flops() a pair "
          f"times the samples/s after the first step, over the {model or 'unknown'} bf16 dense peak)")
    print("| recipe | `--dry-run` total | peak allocated | samples/s (run) | samples/s (after step 1) | first step | "
          "TFLOP a pair | MFU |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ds, ents = (Path(data_root) / "ds", Path(data_root) / "ents") if data_root else demo_data(root)
        import datasets

        rows = {"blip2idc": datasets.load_dataset(str(ds), split="train").num_rows,
                "davir": datasets.load_dataset(str(ents), split="train").num_rows}
        for name, data in ((n, d) for n, d in (("blip2idc", ds), ("davir", ents)) if n in recipes):
            base = save_real_size(name, root / f"base_{name}", DEVICE)
            per_pair = step_flops(name, str(base), str(data))
            runs = [(False, False, batch)] if name == "blip2idc" else [(False, False, batch), (True, False, batch)]
            runs += [(False, True, batch)] if compiled else []
            if best_batch:
                runs.append((False, False, largest_batch(name, base, batch)))
            for ckpt, comp, size in runs:
                if size > rows[name]:  # a batch larger than the split would count pairs it never trained on
                    print(f"| {name}, batch {size} | needs {size} training pairs, the data has {rows[name]} (--make-data "
                          f"--pairs-per-type {-(-size // 6)}) | | | | | | |")
                    continue
                guess = estimate(*real_settings(name, base, size, ckpt), DEVICE).total_bytes / 2**30
                out = root / f"run_{name}_{ckpt}_{comp}_{size}"
                proc = subprocess.run([sys.executable, __file__, "--child", name, str(base), str(data), str(out), str(steps),
                                       str(size), str(int(ckpt)), str(int(comp))], capture_output=True, text=True)
                line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
                label = name + (", `--gradient-checkpointing`" if ckpt else "") + (", `--compile`" if comp else "")
                label += f", batch {size}" if size != batch else ""
                if line is None:
                    print(f"| {label} | {guess:.2f} GiB | failed: {proc.stderr[-1500:]} | | | | | |")
                    continue
                r = json.loads(line[7:])
                error = f" ({100 * (guess - r['peak_GiB']) / r['peak_GiB']:+.0f}%)" if r["peak_GiB"] else ""
                info = r.get("compile") or {}
                if comp:
                    label += (f" (first step {info.get('first_step_s')} s, then {info.get('later_step_s')} s)"
                              if info.get("compiled") else f" (not compiled: {info.get('reason')})")
                steady = r["steady_samples_per_s"] or r["samples_per_s"]
                share = mfu(per_pair * steady, gpu) if DEVICE == "cuda" else None
                print(f"| {label} | {guess:.2f} GiB | {r['peak_GiB']:.2f} GiB{error} | {r['samples_per_s']:.1f} | {steady:.1f} | "
                      f"{r['first_step_s']:.1f} s | {per_pair / 1e12:.2f} | {shown(share)} |", flush=True)
            import shutil

            shutil.rmtree(base)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # processes.py, gpu_peaks.py
    options = parser().parse_args()
    if options.child:
        name, base, data, out, steps, batch, ckpt, comp = options.child
        real_size_child(name, base, data, out, int(steps), int(batch), ckpt == "1", comp == "1")
    elif options.real_size:
        real_size_runs(options.steps or 12, options.batch_size or 16, data_root=options.data, compiled=options.compile,
                       recipes=tuple(options.recipes.split(",")), best_batch=options.best_batch)
    elif options.make_data:
        demo_data(Path(options.make_data), options.pairs_per_type)
    elif options.estimates_only:
        real_size_estimates()
    else:
        main(options)
        real_size_estimates()

"""Where the time of one training step and of one generation batch goes, both recipes, on CPU.

Three tables per recipe, from the tiny random models the tests build (``idc_toolkit.demo.tiny``)
and the demo dataset (with DAVIR's masks and entities), one torch thread, so CPU-seconds are one
core's:

* **a training step**: ``train()`` itself (the Trainer, the recipe's collation, the callbacks),
  ``--steps`` optimizer steps after two of warm-up, each phase's CPU time per step and share —
  reading and decoding the rows, image processing (the recipe's ``pixels``), the rest of the
  collation (tokens, padding, DAVIR's masks), the forward and backward of each stack (ViT,
  Q-Former, LM; the backward split where autograd hands the gradient from one stack to the
  next), the caption loss and DAVIR's attention loss, gradient clipping, the optimizer, and the
  rest (the Trainer's own loop, callbacks, logging), then ``torch.profiler``'s heaviest operators
  over the same steps;
* **a generation batch**: the runner's ``generate`` (``idc-eval --model``'s path), every pair
  writing ``--new-tokens`` tokens: input processing, each stack's forward (the LM's once per new
  token), decoding the text, and the rest (``generate``'s own loop);
* **the input pipeline alone**, at the real sizes (CLEVR-Change-sized 480x320 PNGs, the real
  processor's 224 px): decode, stack / resize / blur, the processor, the collation, per pair
  style (BLIP2IDC scene and edit, DAVIR), in samples/s of one core.

    python benchmarks/step_profile.py [--steps 8] [--batch-size 8] [--new-tokens 20] [--pairs 64]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REST = "the rest (the Trainer's loop, callbacks, logging)"


class Clock:
    """Charges the thread's CPU time to the phase on top of a stack: a phase entered inside
    another is charged to itself only. ``switch`` replaces the top (the backward's stack borders)."""

    def __init__(self, rest: str):
        self.stack, self.totals, self.on = [rest], defaultdict(float), False
        self.last = time.thread_time()

    def _charge(self) -> None:
        now = time.thread_time()
        if self.on:
            self.totals[self.stack[-1]] += now - self.last
        self.last = now

    def enter(self, phase: str) -> None:
        self._charge()
        self.stack.append(phase)

    def leave(self) -> None:
        self._charge()
        if len(self.stack) > 1:
            self.stack.pop()

    def switch(self, phase: str) -> None:
        self._charge()
        self.stack[-1] = phase

    def start(self) -> None:
        self._charge()
        self.on = True

    def stop(self) -> None:
        self._charge()
        self.on = False

    @contextlib.contextmanager
    def phase(self, name: str):
        self.enter(name)
        try:
            yield
        finally:
            self.leave()


def timed(clock: Clock, name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with clock.phase(name):
            return fn(*args, **kwargs)

    return wrapper


def stacks_of(model) -> dict:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {"ViT": base.vision_model, "Q-Former": base.qformer, "LM": base.language_model}


def hook_stacks(clock: Clock, model, backward: bool) -> list:
    """Forward pre/post hooks charging each stack's forward to it; with ``backward``, tensor hooks
    where the gradient leaves the LM (its input embeddings) and the Q-Former (its image input),
    which is where autograd moves on to the next stack."""
    import torch

    handles = []
    stacks = stacks_of(model)

    def pre(name):
        def hook(module, args, kwargs):
            clock.enter(f"forward: {name}")
            if backward and torch.is_grad_enabled():
                border = {"LM": ("inputs_embeds", "backward: Q-Former (and the projection)"),
                          "Q-Former": ("encoder_hidden_states", "backward: ViT")}.get(name)
                if border and isinstance(kwargs.get(border[0]), torch.Tensor) and kwargs[border[0]].requires_grad:
                    kwargs[border[0]].register_hook(lambda grad, nxt=border[1]: (clock.switch(nxt), None)[1])
        return hook

    def post(module, args, kwargs, output):
        clock.leave()

    for name, module in stacks.items():
        handles.append(module.register_forward_pre_hook(pre(name), with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True))
    return handles


def table(title: str, totals: dict, per: int, unit: str) -> None:
    total = sum(totals.values())
    print(f"\n{title}\n\n| phase | CPU ms per {unit} | share |\n| --- | ---: | ---: |")
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {1000 * seconds / per:.1f} | {100 * seconds / max(total, 1e-12):.1f}% |")
    print(f"| **total** | **{1000 * total / per:.1f}** | 100% |")


def profiler_table(prof, steps: int, top: int = 8) -> None:
    """The operators with the most self time: each operator's median call times its calls, so a
    call the loaded machine's scheduler interrupted does not count as the operator's time."""
    import statistics

    calls = defaultdict(list)
    for event in prof.events():
        if not event.name.startswith(("enumerate(DataLoader)", "ProfilerStep", "Optimizer.")):  # wrappers, not work
            calls[event.name].append(event.self_cpu_time_total)
    robust = {name: statistics.median(times) * len(times) for name, times in calls.items()}
    total = sum(robust.values())
    print(f"\ntorch.profiler, the {top} operators with the most self CPU time ({steps} step{'s' * (steps > 1)}; "
          "each operator's median call x its calls)\n")
    print("| operator | calls per step | self CPU ms per step | share |\n| --- | ---: | ---: | ---: |")
    for name, us in sorted(robust.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| `{name}` | {len(calls[name]) / steps:.0f} | {us / 1000 / steps:.2f} | {100 * us / max(total, 1):.1f}% |")


def profile_training(name: str, base: Path, data: Path, out: Path, steps: int, batch: int) -> None:
    import torch
    from transformers import Trainer, TrainerCallback

    from idc_toolkit.models.registry import get_recipe_class
    import importlib

    from idc_toolkit.training import TrainArgs, train

    train_module = importlib.import_module("idc_toolkit.training.train")

    clock = Clock(REST)
    recipe_cls = get_recipe_class(name)
    module = sys.modules[recipe_cls.__module__]
    inputs_class = module.Blip2IDCInputs if name == "blip2idc" else module.DavirInputs
    warmup = 2
    handles: list = []
    prof_holder: dict = {}

    def loaded(rows_getitem):
        def getitem(self, i):
            row = rows_getitem(self, i)
            for value in row.values():  # PIL opens lazily: decode here, so decoding is charged to reading
                if hasattr(value, "load"):
                    value.load()
            return row
        return getitem

    class Phases(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            handles.extend(hook_stacks(clock, model, backward=True))

        def on_step_end(self, args, state, control, **kw):
            if state.global_step == warmup:
                clock.start()
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                prof.__enter__()
                prof_holder["prof"] = prof
            if state.global_step == warmup + steps:
                clock.stop()
                prof_holder["prof"].__exit__(None, None, None)

        def on_pre_optimizer_step(self, args, state, control, **kw):
            clock.enter("optimizer (AdamW step)")

        def on_optimizer_step(self, args, state, control, **kw):
            clock.leave()

    original_trainer_class = train_module._trainer_class

    def trainer_class():
        cls = original_trainer_class()

        class Profiled(cls):
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                with clock.phase("forward: caption loss, attention loss, projection"):
                    return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

            def _clip_grad_norm(self, model):
                with clock.phase("gradient clipping"):
                    return super()._clip_grad_norm(model)

        return Profiled

    backward = Trainer.training_step

    def training_step(self, model, inputs, num_items_in_batch=None):
        accelerator_backward = self.accelerator.backward

        def timed_backward(loss, **kwargs):
            clock.enter("backward: LM (and the loss)")
            try:
                return accelerator_backward(loss, **kwargs)
            finally:
                clock.leave()

        self.accelerator.backward = timed_backward
        try:
            return backward(self, model, inputs, num_items_in_batch)
        finally:
            del self.accelerator.backward

    patches = [(train_module._Rows, "__getitem__", timed(clock, "data: read and decode the rows", loaded(train_module._Rows.__getitem__))),
               (inputs_class, "pixels", timed(clock, "data: image processing (the processor)", inputs_class.pixels)),
               (recipe_cls, "collate", timed(clock, "data: collation (tokens, padding, masks)", recipe_cls.collate)),
               (train_module, "_trainer_class", trainer_class), (Trainer, "training_step", training_step)]
    saved = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in patches]
    for owner, attr, value in patches:
        setattr(owner, attr, value)
    try:
        train(TrainArgs(name, str(data), out, base_model=str(base), max_steps=warmup + steps, batch_size=batch, val_split="",
                        device="cpu", dtype="float32", progress=False, report_to="none", lr=1e-3),
              callbacks=(Phases(),))
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)
        for h in handles:
            h.remove()
    table(f"{name}: one training step (batch {batch}, tiny random model, {steps} steps after {warmup} of warm-up)",
          clock.totals, steps, "step")
    profiler_table(prof_holder["prof"], steps)


def profile_generation(name: str, base: Path, rows: list, batch: int, new_tokens: int) -> None:
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_runner_class

    runner = get_runner_class(name)(str(base), None, "cpu", "float32", DatasetFacts(builder="clevr_change", pair_style="scene"),
                                    options={"max_new_tokens": new_tokens})
    for model in (runner.model, runner.model.language_model):  # BLIP-2's LM generates under its own config
        model.generation_config.min_new_tokens = new_tokens  # random weights would stop at once
    clock = Clock("the rest (generate's loop: logits processing, stopping, caches)")
    handles = hook_stacks(clock, runner.model, backward=False)
    inputs = runner.inputs
    inputs.pixels = timed(clock, "input: image processing", inputs.pixels)
    processor = inputs.processor
    processor.batch_decode = timed(clock, "decoding the text", processor.batch_decode)
    if name == "davir":
        inputs.text = timed(clock, "input: the prompts' tokens", inputs.text)
    runner.generate(rows[:batch])  # warm-up
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        clock.start()
        runner.generate(rows[:batch])
        clock.stop()
    for h in handles:
        h.remove()
    table(f"{name}: one generation batch ({batch} pairs, {new_tokens} new tokens each, tiny random model)", clock.totals, 1, "batch")
    profiler_table(prof, 1)


def input_pipeline(root: Path, pairs: int) -> None:
    """Samples/s of one core for each stage of the input, at CLEVR-Change's image size and the
    real processors' 224 px."""
    import numpy as np
    from PIL import Image
    from transformers import AutoProcessor

    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip
    from idc_toolkit.masks.patch_masks import soft_patch_mask
    from idc_toolkit.models.pairs import stacked_pair
    from idc_toolkit.models.recipe import pack

    import io

    raw = generate_demo_release(root / "raw_real", n_per_type=max(1, -(-pairs // 5)), size=(480, 320), seed=3)
    befores = sorted((raw / "images").glob("*.png"))[:pairs]
    data = [blob for before in befores for blob in
            (before.read_bytes(), (raw / "sc_images" / before.name.replace("default", "semantic")).read_bytes())]

    def decode(blob):
        im = Image.open(io.BytesIO(blob))
        im.load()
        return im

    procs = {}
    for key, save in (("blip2", save_tiny_blip2), ("iblip", save_tiny_instructblip)):
        folder = save(root / f"pipe_{key}")
        proc = AutoProcessor.from_pretrained(folder)
        proc.image_processor.size = {"height": 224, "width": 224}
        procs[key] = proc
    n = len(data) // 2
    print(f"\nThe input pipeline alone, one core: {n} pairs of 480x320 PNGs, the processors at 224 px\n")
    print("| pair style | decode | stack / resize / blur | processor | collation (tokens, padding, masks) | all |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")

    def rate(seconds: float) -> str:
        return f"{n / seconds:.0f}/s"

    for style in ("BLIP2IDC scene", "BLIP2IDC edit", "DAVIR"):
        t = defaultdict(float)
        start = time.thread_time()
        images = [(decode(data[2 * k]), decode(data[2 * k + 1])) for k in range(n)]
        t["decode"] = time.thread_time() - start
        texts = ["the small gray metal cylinder has been moved to the left of the big rubber cube"] * n
        if style.startswith("BLIP2IDC"):
            proc = procs["blip2"]
            start = time.thread_time()
            stacked = [stacked_pair(b, a, style.endswith("edit"), str(k)) for k, (b, a) in enumerate(images)]
            t["stack"] = time.thread_time() - start
            start = time.thread_time()
            for k in range(0, n, 16):
                proc(images=stacked[k:k + 16], return_tensors="pt")
            t["processor"] = time.thread_time() - start
            start = time.thread_time()
            tok = proc.tokenizer
            for k in range(0, n, 16):
                seqs = [([3] * 32 + [2], tok(x, add_special_tokens=False)["input_ids"][:30] + [2]) for x in texts[k:k + 16]]
                pack(seqs, 1)
            t["collation"] = time.thread_time() - start
        else:
            proc = procs["iblip"]
            start = time.thread_time()
            converted = [(b.convert("RGB"), a.convert("RGB")) for b, a in images]
            t["stack"] = time.thread_time() - start
            start = time.thread_time()
            for k in range(0, n, 16):
                chunk = converted[k:k + 16]
                proc.image_processor([b for b, _ in chunk], return_tensors="pt")
                proc.image_processor([a for _, a in chunk], return_tensors="pt")
            t["processor"] = time.thread_time() - start
            start = time.thread_time()
            tok = proc.tokenizer
            prompt = "Describe the difference between the two images. Entity: small gray metal cylinder"
            mask = Image.fromarray((np.random.default_rng(0).random((320, 480)) > 0.9).astype(np.uint8) * 255)
            for k in range(0, n, 16):
                seqs = [([3] * 32 + tok(prompt)["input_ids"], tok(x, add_special_tokens=False)["input_ids"][:30] + [2])
                        for x in texts[k:k + 16]]
                pack(seqs, 0)
                proc.qformer_tokenizer([prompt] * len(seqs), padding=True, return_tensors="pt")
                masks = np.stack([np.asarray(mask.resize((128, 128), Image.NEAREST)) > 127 for _ in seqs]).astype(np.float32)
                soft_patch_mask(masks, 16)
            t["collation"] = time.thread_time() - start
        total = sum(t.values())
        print(f"| {style} | {rate(t['decode'])} | {rate(t['stack'])} | {rate(t['processor'])} | {rate(t['collation'])} | "
              f"**{rate(total)}** |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=20)
    p.add_argument("--pairs", type=int, default=64, help="pairs of the input-pipeline table")
    p.add_argument("--only", choices=("train", "generate", "pipeline"), action="append")
    args = p.parse_args()
    import platform

    import torch
    import transformers

    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_speed import demo_data

    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip
    from idc_toolkit.runs.rows import decode_image, open_split

    only = set(args.only or ("train", "generate", "pipeline"))
    print(f"Python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
          f"one torch thread, CPU: {platform.processor() or platform.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if only & {"train", "generate"}:
            ds, ents = demo_data(root)
            bases = {"blip2idc": save_tiny_blip2(root / "blip2"), "davir": save_tiny_instructblip(root / "iblip")}
            for name in ("blip2idc", "davir"):
                data = ds if name == "blip2idc" else ents
                if "train" in only:
                    profile_training(name, bases[name], data, root / f"run_{name}", args.steps, args.batch_size)
                if "generate" in only:
                    source = open_split(str(data), "test")[0]
                    rows = [{**r, "before": decode_image(r["before"]), "after": decode_image(r["after"])}
                            for r in source.read(0, min(args.batch_size, len(source)))]
                    profile_generation(name, bases[name], rows, args.batch_size, args.new_tokens)
        if "pipeline" in only:
            input_pipeline(root, args.pairs)


if __name__ == "__main__":
    main()

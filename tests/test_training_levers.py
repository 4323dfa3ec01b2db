"""What makes a training step faster changes nothing it trains: each lever against the plain path
on the tiny models, on CPU (where a lever needs a GPU, the settings it makes there).

The levers (docs/training.md, "Speed"): DataLoader workers with pinned memory, bf16 autocast with
float32 LoRA weights, SDPA in every stack (DAVIR's attention capture eager in the final ViT layer
only), fused AdamW, ``--compile``, ``--memory-budget``, ``--group-by-length``, and no read-back
from the device inside a step (``--log-every``)."""

from __future__ import annotations

import importlib
import json
import logging

import pytest

torch = pytest.importorskip("torch")

from idc_toolkit.facts import DatasetFacts  # noqa: E402
from idc_toolkit.training import TrainArgs, resolve_run, train  # noqa: E402

train_module = importlib.import_module("idc_toolkit.training.train")
STEPS = 20


def _args(model, dataset, base, out, **kw):
    settings = dict(base_model=str(base), max_steps=STEPS, batch_size=2, lr=1e-3, val_split=None, device="cpu",
                    progress=False, report_to="none", seed=3, dtype="float32")
    settings.update(kw)
    return TrainArgs(model, str(dataset), out, **settings)


class Batches:
    """Every micro-batch the Trainer's loss sees, copied (the Trainer's class wrapped for one run)."""

    def __init__(self, monkeypatch):
        self.seen: list[dict] = []
        made = train_module._trainer_class

        def trainer_class():
            cls = made()
            seen = self.seen

            class Recording(cls):
                def compute_loss(self, model, inputs, *args, **kwargs):
                    seen.append({k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)})
                    return super().compute_loss(model, inputs, *args, **kwargs)

            return Recording

        monkeypatch.setattr(train_module, "_trainer_class", trainer_class)


@pytest.fixture(scope="module")
def plain_runs(tiny_models, demo_dataset, davir_dataset, tmp_path_factory):
    """Each recipe trained STEPS steps the plain way (no worker, torch's AdamW, a log line read each step)."""
    root = tmp_path_factory.mktemp("plain")
    runs = {}
    for model, base, data in (("blip2idc", tiny_models("blip2"), demo_dataset), ("davir", tiny_models("iblip"), davir_dataset)):
        mp = pytest.MonkeyPatch()
        batches = Batches(mp)
        try:
            result = train(_args(model, data, base, root / model, log_every=1, dataloader_workers=0))
        finally:
            mp.undo()
        runs[model] = (result, batches.seen)
    return runs


def _same_batches(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b) == STEPS
    for k, (x, y) in enumerate(zip(a, b)):
        assert x.keys() == y.keys(), k
        for key in x:
            assert torch.equal(x[key], y[key]), (k, key)


@pytest.mark.parametrize("model", ["blip2idc", "davir"])
def test_the_optimised_path_trains_what_the_plain_path_trains(model, plain_runs, tiny_models, demo_dataset, davir_dataset,
                                                              tmp_path, monkeypatch):
    """DataLoader workers (the same batches, in the same order, across an epoch's end: the reference
    drawn anew each epoch reaches the workers), fused AdamW, the losses read back every 5 steps and
    the stacks compiled layer by layer (torch.compile's eager backend: tracing without a C++
    compiler): the same 20 losses within float32 rounding, the same captions."""
    plain, plain_batches = plain_runs[model]
    base, data = (tiny_models("blip2"), demo_dataset) if model == "blip2idc" else (tiny_models("iblip"), davir_dataset)
    batches = Batches(monkeypatch)
    monkeypatch.setattr(train_module, "COMPILE_BACKEND", "eager")
    fast = train(_args(model, data, base, tmp_path / "fast", dataloader_workers=2, log_every=5, compile=True,
                       trainer_args={"optim": "adamw_torch_fused"}))
    _same_batches(plain_batches, batches.seen)
    assert len({b["input_ids"].shape[1] for b in batches.seen}) > 1  # captions of several lengths were drawn
    assert len(fast.losses) == len(plain.losses) == STEPS
    assert fast.losses == pytest.approx(plain.losses, rel=1e-5)
    speed = json.loads((tmp_path / "fast" / "train_config.json").read_text())["speed"]
    assert speed["dataloader_workers"] == 2 and speed["optimizer"] == "adamw_torch_fused" and speed["log_every"] == 5
    assert speed["compile"]["compiled"] and speed["compile"]["layers"] == 6 and speed["compile"]["first_step_s"] > 0
    steps = [json.loads(line) for line in (tmp_path / "fast" / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps] == list(range(1, STEPS + 1))  # one line per step, written every 5
    assert all(isinstance(r["grad_norm"], float) and isinstance(r["lr"], float) for r in steps)
    # the captions of both adapters, decoded as validation and idc-eval --model decode them
    from peft import PeftModel

    from idc_toolkit.card_data import dataset_facts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.runs.rows import decode_image, open_split

    rows = [{**r, "before": decode_image(r["before"]), "after": decode_image(r["after"]), "__index": 0, "__epoch": 0}
            for r in open_split(str(data), "test")[0].read(0, 4)]
    captions = []
    for run in (plain, fast):
        recipe = get_recipe_class(model)(run.settings, dataset_facts(str(data)))
        base_model = recipe.load(torch.float32)
        base_model.language_model.generation_config.min_new_tokens = 12  # tiny random models stop at once otherwise
        net = PeftModel.from_pretrained(base_model, str(run.adapter)).eval()
        recipe.inputs.max_new_tokens = 12
        captions.append(recipe.generate(net, rows))
    assert captions[0] == captions[1] and any(captions[0])


def test_bf16_autocast_keeps_float32_lora_weights(plain_runs, tiny_models, demo_dataset, tmp_path):
    """--dtype bfloat16: the frozen base in bf16, the step under bf16 autocast (on CPU too), the LoRA
    weights, their gradients and AdamW's moments in float32; the losses follow the float32 run's
    within bf16's precision."""
    seen = {}
    from transformers import TrainerCallback

    class Dtypes(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, optimizer=None, **kw):
            if state.global_step == 1:
                params = dict(model.named_parameters())
                seen["lora"] = {p.dtype for n, p in params.items() if "lora_" in n}
                seen["grads"] = {p.grad.dtype for n, p in params.items() if "lora_" in n and p.grad is not None}
                seen["frozen"] = {p.dtype for n, p in params.items() if "lora_" not in n and p.dim() == 2}
                seen["moments"] = {s["exp_avg"].dtype for s in optimizer.state.values()}

    run = train(_args("blip2idc", demo_dataset, tiny_models("blip2"), tmp_path / "bf16", dtype="bfloat16"), callbacks=(Dtypes(),))
    assert seen["lora"] == seen["moments"] == {torch.float32} and seen["frozen"] == {torch.bfloat16}
    assert json.loads((tmp_path / "bf16" / "train_config.json").read_text())["speed"]["bf16_autocast"] is True
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(str(run.adapter / "adapter_model.safetensors")).values()} == {torch.float32}
    assert run.losses == pytest.approx(plain_runs["blip2idc"][0].losses, rel=2e-2)


def test_gpu_settings_pin_workers_fuse_adamw_and_autocast(monkeypatch, tmp_path):
    """What a GPU run gets (asked here without one): bf16 autocast, fused AdamW, up to 4 DataLoader
    workers leaving the loop a core, pinned memory copied without waiting; on CPU: none of them."""
    from idc_toolkit.models.registry import get_recipe_class

    cls = get_recipe_class("blip2idc")
    settings = resolve_run(cls, DatasetFacts(builder="clevr_change", pair_style="scene"), TrainArgs("blip2idc", "d", "o"))
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)), raising=False)
    gpu = train_module.trainer_fields(settings, tmp_path, "cuda", "none", False, log_every=10)
    assert gpu["optim"] == "adamw_torch_fused" and gpu["bf16"] and not gpu["fp16"]
    assert gpu["dataloader_num_workers"] == 4 and gpu["dataloader_pin_memory"] and gpu["accelerator_config"]["non_blocking"]
    assert gpu["logging_steps"] == 10 and gpu["logging_nan_inf_filter"] is False
    cpu = train_module.trainer_fields(settings, tmp_path, "cpu", "none", False)
    assert cpu["optim"] == "adamw_torch" and not cpu["bf16"] and cpu["dataloader_num_workers"] == 0
    assert not cpu["dataloader_pin_memory"] and not cpu["accelerator_config"]["non_blocking"]
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert train_module.default_workers("cuda") == 1 and train_module.default_workers("cpu") == 0
    from idc_toolkit.errors import IDCError

    for field, flag in (("dataloader_num_workers", "--dataloader-workers"), ("logging_steps", "--log-every"),
                        ("train_sampling_strategy", "--group-by-length")):
        with pytest.raises(IDCError, match=f"set by idc-train itself; use {flag}"):
            TrainArgs("blip2idc", "d", "o", trainer_args={field: 1})


@pytest.mark.parametrize("name", ["Salesforce/blip2-opt-2.7b", "Salesforce/instructblip-vicuna-7b"])
def test_every_stack_runs_sdpa_on_the_real_layouts(name):
    """On the real layouts (meta device), every attention layer of the ViT, the Q-Former and the LM
    resolves to SDPA; DAVIR's attention capture makes the final ViT layer alone eager."""
    from idc_toolkit.models.davir import pair_forward
    from idc_toolkit.models.published_configs import meta_model

    model = meta_model(name)
    kinds = train_module.attention_implementations(model)
    assert set(kinds) == {"vision_model", "qformer", "language_model"}
    assert all(set(k) == {"sdpa"} for k in kinds.values()), kinds
    assert [len(kinds[s]) for s in ("vision_model", "qformer", "language_model")] == [39, 12, 32]
    if "instructblip" in name:
        pair_forward(model.vision_model, capture=True)
        vision = train_module.attention_implementations(model)["vision_model"]
        assert vision == ["sdpa"] * 38 + ["eager"]
        assert model.config.vision_config._attn_implementation == "sdpa"


def test_davirs_final_layer_capture_equals_the_whole_eager_encoder(tiny_models):
    """The final layer's CLS attention, the encoder's output and the attention loss's gradient with
    the other layers on SDPA equal those of the encoder run eagerly throughout (the earlier way)."""
    import copy

    from transformers import InstructBlipForConditionalGeneration

    from idc_toolkit.models.davir_fac import fac_loss
    from idc_toolkit.models.davir import pair_forward

    torch.manual_seed(0)
    model = InstructBlipForConditionalGeneration.from_pretrained(tiny_models("iblip")).train()
    eager = copy.deepcopy(model)
    holder = pair_forward(model.vision_model, capture=True)
    pixels = torch.randn(2, 6, 56, 56)
    out = model.vision_model(pixel_values=pixels)
    eager.vision_model.config._attn_implementation = "eager"
    outs = [eager.vision_model(pixel_values=pixels[:, k:k + 3], output_attentions=True, return_dict=True) for k in (0, 3)]
    reference = torch.stack([o.attentions[-1][:, :, 0, 1:].mean(1) for o in outs], dim=1)
    assert torch.allclose(holder.last, reference, atol=1e-6)
    assert torch.allclose(out.last_hidden_state, torch.cat([o.last_hidden_state for o in outs], dim=1), atol=1e-5)
    mask = torch.rand(2, 4, 4)
    grads = []
    for net, att in ((model, holder.last), (eager, reference)):
        fac_loss(att[:, 0].reshape(-1, 4, 4), att[:, 1].reshape(-1, 4, 4), mask).backward()
        grads.append(net.vision_model.encoder.layers[-1].self_attn.qkv.weight.grad)
    assert torch.allclose(grads[0], grads[1], atol=1e-6) and grads[0].abs().sum() > 0


def test_davir_decoding_asks_the_processor_for_text_only(tiny_models):
    """DAVIR's generation input: the prompts as InstructBLIP's processor lays them out with images
    (image slots, then each prompt padded on the left, the Q-Former's tokens), without the
    processor's own pass over the before images that the pair's pixels replaced."""
    from PIL import Image
    from transformers import InstructBlipProcessor

    from idc_toolkit.models.davir import DavirInputs

    processor = InstructBlipProcessor.from_pretrained(tiny_models("iblip"))
    inputs = DavirInputs(processor)
    img = Image.new("RGB", (40, 30), (10, 200, 30))
    rows = [{"before": img, "after": img, "entities": ["a big red metal cube"]}, {"before": img, "after": img, "entities": []}]
    tok = processor.tokenizer
    side, tok.padding_side = tok.padding_side, "left"
    old = processor(images=[r["before"] for r in rows], text=inputs.prompts(rows), return_tensors="pt", padding=True)
    tok.padding_side = side
    new = inputs.text(rows)
    assert set(new) == {"input_ids", "attention_mask", "qformer_input_ids", "qformer_attention_mask"}
    for key in new:
        assert torch.equal(old[key], new[key]), key
    assert tok.padding_side == side


def test_compile_falls_back_in_one_line_where_the_platform_cannot(tiny_models, demo_dataset, tmp_path, monkeypatch, caplog):
    """--compile where nothing compiles (no C++ compiler, no Triton): one line says so, the run
    trains uncompiled and records why; --group-by-length in the same run sees every pair once an epoch."""
    from idc_toolkit.models.blip2idc import Blip2IDCRecipe

    def cannot(device):
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found\nmore lines")

    monkeypatch.setattr(train_module, "_compile_probe", cannot)
    seen: list = []
    collate = Blip2IDCRecipe.collate
    monkeypatch.setattr(Blip2IDCRecipe, "collate", lambda self, rows: seen.append([(r["__epoch"], r["__index"]) for r in rows])
                        or collate(self, rows))
    with caplog.at_level(logging.WARNING, logger="idc_toolkit.training.train"):
        r = train(_args("blip2idc", demo_dataset, tiny_models("blip2"), tmp_path / "run", compile=True, group_by_length=True,
                        max_steps=None, epochs=2, batch_size=4, split="train[:12]"))
    lines = [rec.getMessage() for rec in caplog.records if "--compile" in rec.getMessage()]
    assert lines == ["--compile: this platform cannot compile (RuntimeError: InvalidCxxCompiler: No working C++ compiler "
                     "found); training goes on uncompiled"]
    assert len(r.losses) == 6 and r.adapter.is_dir()
    record = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert record["speed"]["compile"] == {"compiled": False, "reason": "RuntimeError: InvalidCxxCompiler: No working C++ "
                                                                       "compiler found"}
    assert record["fingerprint"]["group_by_length"] is True
    by_epoch = {e: sorted(i for batch in seen for (ep, i) in batch if ep == e) for e in (0, 1)}
    assert by_epoch == {0: list(range(12)), 1: list(range(12))}
    orders = [[i for batch in seen for (ep, i) in batch if ep == e] for e in (0, 1)]
    assert orders[0] != orders[1]


def test_length_grouped_batches_change_the_order_not_the_pairs(tiny_models):
    """Each epoch a permutation of the split, another each epoch, batches of similar text length
    (less padding than the shuffled order), the same on a rerun (seeded by seed and epoch); the
    lengths are those of the reference each pair draws in that epoch, read without any image."""
    import random

    from datasets import Dataset

    from idc_toolkit.models.registry import get_recipe_class

    cls = get_recipe_class("blip2idc")
    facts = DatasetFacts(builder="clevr_change", pair_style="scene")
    settings = resolve_run(cls, facts, TrainArgs("blip2idc", "d", "o", base_model=str(tiny_models("blip2")),
                                                      group_by_length=True))
    recipe = cls(settings, facts)
    recipe.load(torch.float32)
    draw = random.Random(0)
    n, group = 400, 4  # transformers groups within megabatches of up to 50 batches (a quarter of the split here)
    captions = [[" ".join(["cube"] * draw.randint(1, 25)) for _ in range(3)] for _ in range(n)]
    rows = train_module._Rows(Dataset.from_dict({"pair_id": [str(i) for i in range(n)], "captions": captions}))
    sampler = train_module.length_grouped_sampler(rows, recipe, group, seed=0)
    orders = []
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        assert rows.epoch == epoch  # the reference draw of the rows follows the sampler's epoch
        order = list(sampler)
        assert sorted(order) == list(range(n)) and order == list(sampler)  # every pair once; the same on a rerun
        orders.append(order)
        lengths = sampler.lengths()
        assert lengths == recipe.text_lengths([{**rows.ds[i], "__index": i, "__epoch": epoch} for i in range(n)])
        shuffled = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist()

        def padding(o):
            return sum(max(lengths[i] for i in o[k:k + group]) * group - sum(lengths[i] for i in o[k:k + group])
                       for k in range(0, n, group))

        assert padding(order) < 0.5 * padding(shuffled), (padding(order), padding(shuffled))
    assert orders[0] != orders[1]


def test_the_memory_budget_picks_the_largest_batch_that_fits(tiny_models, demo_dataset, tmp_path):
    """--memory-budget: the activations grow linearly with the batch, so the largest batch that
    fits follows from the estimate; the run trains its effective batch as the largest divisor of
    it that fits, the rest accumulated; --dry-run prints both; nothing fitting is one line."""
    from idc_toolkit.errors import IDCError
    from idc_toolkit.training.estimate import Estimate

    e = Estimate({"x": 1}, {"x": 1}, weight_bytes=1000, lora_state_bytes=200, activation_bytes=800, dtype="float32",
                 batch_size=8, budget_bytes=1000 + 200 + 100 * 5 + 50, effective_batch=16)
    assert e.pair_bytes == 100 and e.largest_batch() == 5 and e.split() == (4, 4) and e.total_at(5) == 1700
    assert Estimate({}, {}, 10, 0, 10, "float32", batch_size=1, budget_bytes=15, effective_batch=16).split() == (0, 0)
    kw = dict(val_split=None, device="cpu", progress=False, report_to="none", base_model=str(tiny_models("blip2")))
    dry = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "d", batch_size=4, grad_accum=2, dry_run=True, **kw)).estimate
    budget = dry.total_at(3) / 1024 ** 3  # three pairs fit, four do not
    fitted = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "d", batch_size=4, grad_accum=2, dry_run=True,
                             memory_budget=budget, **kw))
    assert fitted.estimate.largest_batch() == 3 and fitted.estimate.split() == (2, 4)
    assert "batches up to 3 pairs fit; the effective batch of 8 trains as --batch-size 2 --grad-accum 4" in fitted.estimate.render()
    run = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "run", batch_size=4, grad_accum=2, max_steps=1,
                          memory_budget=budget, **kw))
    assert (run.settings.batch_size, run.settings.grad_accum) == (2, 4) and len(run.losses) == 1
    with pytest.raises(IDCError, match="--memory-budget .*: not one pair fits"):
        train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "never", memory_budget=dry.weight_bytes / 1024 ** 3, **kw))


SYNCS = ("item", "tolist", "__float__", "__int__", "__bool__", "cpu", "numpy")


def test_no_read_back_from_the_device_inside_a_step(tiny_models, davir_dataset, tmp_path, monkeypatch):
    """Neither the toolkit's code nor the Trainer's loop reads a tensor back to the host (``.item()``,
    ``float(t)``, ``bool(t)``, ``.tolist()``, ``.cpu()``) during a step, except every ``--log-every``
    steps, where the step log reads its pending values in one transfer and the Trainer logs: on a
    GPU each such read waits for the queued work."""
    import sys

    from transformers import TrainerCallback

    roots = ("/idc_toolkit/", "/transformers/trainer.py", "/transformers/trainer_pt_utils.py", "/accelerate/")
    step = [0]
    calls: dict[int, list[str]] = {}
    for name in SYNCS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            caller = sys._getframe(1).f_code.co_filename.replace("\\", "/")
            if step[0] and any(root in caller for root in roots):
                calls.setdefault(step[0], []).append(f"{_name} in {caller.rsplit('/', 2)[-2:]}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)

    class Steps(TrainerCallback):  # a step runs from its first micro-batch's forward to the next step's
        def on_step_begin(self, args, state, control, **kw):
            step[0] = state.global_step + 1

    train(_args("davir", davir_dataset, tiny_models("iblip"), tmp_path / "run", max_steps=8, log_every=4,
                dataloader_workers=0), callbacks=(Steps(),))
    assert set(calls) <= {4, 8}, {k: v for k, v in calls.items() if k not in (4, 8)}
    assert calls.get(4) and calls.get(8)  # the read-backs of the logged steps

"""Training is what it says, with tokenizers as the real checkpoints ship them: gradient
accumulation is exact, labels do not depend on the padding side, captions are cut, and the
released BLIP2IDC labelling is reproduced on request."""

import json

import pytest

torch = pytest.importorskip("torch")

from idc_toolkit.facts import DatasetFacts  # noqa: E402
from idc_toolkit.training import TrainArgs, resolve_run, train  # noqa: E402


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    from idc_toolkit.demo.tiny import save_tiny_blip2, save_tiny_instructblip

    root = tmp_path_factory.mktemp("exact_bases")
    return {"blip2idc": save_tiny_blip2(root / "blip2"), "left": save_tiny_instructblip(root / "left", padding_side="left"),
            "right": save_tiny_instructblip(root / "right", padding_side="right")}


def _settings(model, base, **kw):
    from idc_toolkit.models.registry import get_recipe_class

    cls = get_recipe_class(model)
    args = dict(base_model=str(base), batch_size=2, dtype="float32", val_split=None)
    args.update(kw)
    return cls, resolve_run(cls, DatasetFacts(builder="clevr_change", pair_style="scene"),
                                 TrainArgs(model, dataset="data", out="run", **args))


def _rows(captions):
    from PIL import Image

    img = Image.new("RGB", (16, 16), (200, 30, 30))
    return [{"pair_id": str(i), "before": img, "after": img, "captions": [c], "entities": ["car"], "change_mask": None,
             "__index": i, "__epoch": 0} for i, c in enumerate(captions)]


def test_tiny_tokenizers_behave_as_the_real_ones(bases):
    from transformers import AutoProcessor

    opt = AutoProcessor.from_pretrained(bases["blip2idc"]).tokenizer
    ids = opt("a car")["input_ids"]
    assert ids[0] == 2 == opt.eos_token_id and opt.pad_token_id == 1  # OPT: </s> prepended as BOS, pad id 1
    vicuna = AutoProcessor.from_pretrained(bases["left"]).tokenizer
    ids = vicuna("a car")["input_ids"]
    assert ids[0] == vicuna.bos_token_id and ids[-1] != vicuna.eos_token_id  # <s> added, no EOS
    assert vicuna.padding_side == "left" and vicuna.pad_token is None


def test_davir_labels_and_first_loss_do_not_depend_on_the_padding_side(bases):
    captions = ["a car left", "the small red rubber cube has been moved to the left of the big cylinder"]
    losses, batches = [], []
    for side in ("left", "right"):
        cls, s = _settings("davir", bases[side])
        recipe = cls(s, DatasetFacts(builder="clevr_change"))
        torch.manual_seed(0)
        model = recipe.load(torch.float32).eval()
        batch = recipe.collate(_rows(captions))
        batches.append(batch)
        tok = recipe.inputs.processor.tokenizer
        for i, caption in enumerate(captions):  # exactly the caption's tokens and EOS are labelled
            labelled = batch["labels"][i][batch["labels"][i] != -100].tolist()
            assert labelled == tok(caption, add_special_tokens=False)["input_ids"][:30] + [tok.eos_token_id]
        from idc_toolkit.models.recipe import caption_loss_sum

        inputs = {k: v for k, v in batch.items() if k not in ("labels",) and not k.startswith("idc_")}
        with torch.no_grad():
            total, count = caption_loss_sum(model(**inputs).logits, batch["labels"])
        losses.append(float(total) / count)
    assert torch.equal(batches[0]["input_ids"], batches[1]["input_ids"])
    assert torch.equal(batches[0]["labels"], batches[1]["labels"])
    assert losses[0] == losses[1]


def test_captions_are_cut_at_max_caption_tokens(bases):
    cls, s = _settings("davir", bases["left"])
    recipe = cls(s, DatasetFacts())
    recipe.load(torch.float32)
    batch = recipe.collate(_rows([" ".join(["car"] * 80)]))
    assert int((batch["labels"] != -100).sum()) == 30 + 1  # 30 caption tokens and EOS


def test_blip2idc_released_labels_pad_with_eos_and_train_on_padding(bases):
    cls, s = _settings("blip2idc", bases["blip2idc"], variant="released")
    recipe = cls(s, DatasetFacts(builder="clevr_change", pair_style="scene"))
    recipe.load(torch.float32)
    tok = recipe.inputs.processor.tokenizer
    batch = recipe.collate(_rows(["a b", " ".join("x" * 40)]))
    labels = batch["labels"]
    # tokenizer.encode(c, add_special_tokens=True, max_length=30, padding="max_length", truncation=True), pad = EOS:
    # 29 label positions after BOS, padding trained on, no EOS after a truncated caption
    assert [int((row != -100).sum()) for row in labels] == [29, 29]
    words = tok("a b", add_special_tokens=False)["input_ids"]
    assert labels[0][labels[0] != -100].tolist() == words + [tok.eos_token_id] * (29 - len(words))
    assert tok.eos_token_id not in labels[1][labels[1] != -100].tolist()
    assert s.weight_decay == 0.01 and s.max_grad_norm == 0.0 and s.lr_schedule == "constant"
    assert s.select_by == "loss" and s.patience == 10 and s.epochs == 100


def test_gradient_accumulation_is_exact(bases, demo_dataset, tmp_path):
    """Same effective batch (8): N = 1, 2, 4 log the same loss and give the same adapter after one step.
    Dropout is off (base and LoRA): with it, the micro-batches draw other masks. Plain SGD: AdamW's
    first step is lr * sign(gradient), which float noise flips where a gradient is ~0."""
    from safetensors.torch import load_file

    from idc_toolkit.demo.tiny import save_tiny_blip2

    base = save_tiny_blip2(tmp_path / "no_dropout", dropout=0.0)

    runs = {}
    for n in (1, 2, 4):
        r = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / f"ga{n}", base_model=str(base), max_steps=1, lora_dropout=0.0,
                  batch_size=8 // n, grad_accum=n, lr=1e-2, val_split=None, device="cpu", progress=False,
                  report_to="none", seed=1, dtype="float32", trainer_args={"optim": "sgd"}))
        steps = [json.loads(line) for line in (tmp_path / f"ga{n}" / "steps.jsonl").read_text().splitlines()]
        assert [row["step"] for row in steps] == [1] and {"loss", "lr", "grad_norm", "epoch", "caption_loss"} <= set(steps[0])
        runs[n] = (steps[0]["loss"], steps[0]["grad_norm"], load_file(str(r.adapter / "adapter_model.safetensors")))
    for n in (2, 4):
        assert runs[n][0] == pytest.approx(runs[1][0], rel=1e-5), (n, runs[n][0], runs[1][0])
        assert runs[n][1] == pytest.approx(runs[1][1], rel=1e-4)
        for key, value in runs[1][2].items():
            assert torch.allclose(runs[n][2][key], value, atol=1e-6), key


def test_meaningless_settings_are_refused_before_any_work(bases, demo_dataset, tmp_path):
    from idc_toolkit.errors import IDCError

    base = dict(base_model=str(bases["blip2idc"]), val_split=None, device="cpu", progress=False, report_to="none")
    for kwargs, message in (({"epochs": 0}, "--epochs 0: must be greater than 0"),
                            ({"epochs": -1}, "--epochs -1: must be greater than 0"),
                            ({"lr": float("inf")}, "--lr inf: must be a finite number"),
                            ({"lr": float("nan")}, "--lr nan: must be a finite number"),
                            ({"batch_size": 0}, "--batch-size 0: must be at least 1"),
                            ({"grad_accum": 0}, "--grad-accum 0: must be at least 1"),
                            ({"val_limit": -1}, "--val-limit -1: must be 0 or more")):
        with pytest.raises(IDCError, match=message.replace("(", r"\(")):
            train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "never", **base, **kwargs))
    assert not (tmp_path / "never").exists()
    import transformers

    def no_loading(*a, **k):
        raise AssertionError("a model was loaded")

    original = transformers.Blip2ForConditionalGeneration.from_pretrained
    transformers.Blip2ForConditionalGeneration.from_pretrained = no_loading
    try:
        with pytest.raises(IDCError, match="--trainer-arg no_such_field: not a TrainingArguments field"):
            train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "t", **base, trainer_args={"no_such_field": 1}))
        with pytest.raises(IDCError, match="TrainingArguments refused the settings"):
            train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "t2", **base, trainer_args={"lr_scheduler_type": "nope"}))
        assert not (tmp_path / "t").exists() and not (tmp_path / "t2").exists()  # nothing written
        # --trainer-arg: the toolkit's own fields name their flag; the others meet the flags' range checks
        for trainer_args, message in (({"output_dir": str(tmp_path / "elsewhere")}, "output_dir: set by idc-train itself; use --out"),
                                      ({"learning_rate": float("inf")}, "learning_rate: set by idc-train itself; use --lr"),
                                      ({"num_train_epochs": 0}, "use --epochs"), ({"max_steps": 0}, "use --max-steps"),
                                      ({"per_device_train_batch_size": 0}, "use --batch-size"),
                                      ({"resume_from_checkpoint": "x"}, "it resumes by itself"),
                                      ({"warmup_ratio": 2}, "warmup_ratio 2: must lie in"),
                                      ({"adam_epsilon": 0}, "adam_epsilon 0: must be greater than 0"),
                                      ({"label_smoothing_factor": float("nan")}, "must be a finite number")):
            with pytest.raises(IDCError, match=message):
                train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "t3", **base, trainer_args=trainer_args))
        assert not (tmp_path / "t3").exists() and not (tmp_path / "elsewhere").exists()
    finally:
        transformers.Blip2ForConditionalGeneration.from_pretrained = original


def test_a_second_run_on_the_same_out_is_refused_naming_the_holder(bases, demo_dataset, tmp_path):
    """idc-train holds the run folder's job lock while it trains, as every other command does."""
    import os

    from idc_toolkit.errors import IDCError

    kwargs = dict(base_model=str(bases["blip2idc"]), val_split=None, device="cpu", progress=False, report_to="none",
                  max_steps=1, batch_size=2)
    seen = {}
    from transformers import TrainerCallback

    class SecondRun(TrainerCallback):  # while the first run trains, a second one on the same folder
        def on_step_end(self, args, state, control, **kw):
            if "refusal" not in seen:
                try:
                    train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "run", **kwargs))
                except IDCError as exc:
                    seen["refusal"] = str(exc)

    train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "run", **kwargs), callbacks=(SecondRun(),))
    assert "is in use by pid" in seen["refusal"] and str(os.getpid()) in seen["refusal"]
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "steps.jsonl").read_text().splitlines()]
    assert steps == [1]


def test_blip2idc_training_refuses_a_dataset_without_pair_style(bases, demo_dataset, tmp_path):
    """idc-eval refuses it; idc-train must not train it under the wrong preprocessing."""
    import shutil

    from idc_toolkit.errors import IDCError

    copy = tmp_path / "elsewhere"
    shutil.copytree(demo_dataset, copy)
    card = (copy / "README.md").read_text()
    start = card.index("idc_toolkit:\n")
    end = card.index("idc_toolkit_run:")
    (copy / "README.md").write_text(card[:start] + card[end:])
    with pytest.raises(IDCError, match="records no pair style"):
        train(TrainArgs("blip2idc", str(copy), tmp_path / "run", base_model=str(bases["blip2idc"]), val_split=None, device="cpu",
              progress=False, report_to="none"))
    r = train(TrainArgs("blip2idc", str(copy), tmp_path / "run", base_model=str(bases["blip2idc"]), val_split=None, device="cpu",
              progress=False, report_to="none", max_steps=1, options={"pair_style": "scene"}))
    assert r.adapter.is_dir()


def test_dry_run_counts_parameters_exactly_and_loads_no_weights(bases, demo_dataset, tmp_path, monkeypatch, capsys):
    """--dry-run builds the model on the meta device: counts equal the real model's, no weights
    are read, nothing is written."""
    import transformers
    from peft import get_peft_model

    from idc_toolkit.cli.train import main as train_main
    from idc_toolkit.models.registry import get_recipe_class

    cls, s = _settings("blip2idc", bases["blip2idc"])
    recipe = cls(s, DatasetFacts(builder="clevr_change", pair_style="scene"))
    real = recipe.load(torch.float32)
    net = get_peft_model(real, recipe.lora_config(real))
    n_total = sum(p.numel() for p in net.parameters())
    n_train = sum(p.numel() for p in net.parameters() if p.requires_grad)

    def no_loading(*a, **k):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(transformers.Blip2ForConditionalGeneration, "from_pretrained", no_loading)
    r = train(TrainArgs("blip2idc", str(demo_dataset), tmp_path / "never", base_model=str(bases["blip2idc"]), dry_run=True,
              device="cpu", val_split=None, lora_rank=s.lora_rank))
    assert sum(r.estimate.parameters.values()) == n_total and sum(r.estimate.trainable.values()) == n_train
    assert set(r.estimate.trainable) == {"vision_model", "qformer", "language_model"}
    assert r.estimate.total_bytes > r.estimate.weight_bytes > 0 and not (tmp_path / "never").exists()
    assert get_recipe_class("davir").model_class == "InstructBlipForConditionalGeneration"
    assert train_main(["--model", "blip2idc", "--dataset", str(demo_dataset), "--out", str(tmp_path / "n2"), "--base-model",
                       str(bases["blip2idc"]), "--dry-run", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "| language_model |" in out and "Estimated memory of one optimizer step" in out and not (tmp_path / "n2").exists()


def test_a_corrupt_or_pickled_checkpoint_is_refused_in_one_line(tmp_path):
    import pickle

    from idc_toolkit.errors import IDCError
    from idc_toolkit.training.train import verify_checkpoint

    ckpt = tmp_path / "checkpoint-4"
    ckpt.mkdir()
    torch.save({"state": {}, "param_groups": []}, ckpt / "optimizer.pt")
    verify_checkpoint(str(ckpt))

    class Payload:
        def __reduce__(self):
            return (print, ("code ran",))

    (ckpt / "scheduler.pt").write_bytes(pickle.dumps(Payload(), protocol=2))  # torch.save's protocol: no protocol warning
    with pytest.raises(IDCError, match="scheduler.pt: not a plain tensor file .*pickled code"):
        verify_checkpoint(str(ckpt))
    (ckpt / "scheduler.pt").write_bytes(b"\x00garbage")
    with pytest.raises(IDCError, match="scheduler.pt: not a plain tensor file"):
        verify_checkpoint(str(ckpt))


def test_the_consensus_reference_is_the_one_closest_to_the_others():
    """``--train-reference consensus``: mean ROUGE-L against the pair's other references, computed
    here by hand from the longest common subsequences (coco's beta 1.2)."""
    from idc_toolkit.models.recipe import consensus_reference

    def rouge(a: str, b: str) -> float:
        x, y = a.split(), b.split()
        table = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
        for i in range(len(x)):
            for j in range(len(y)):
                table[i + 1][j + 1] = table[i][j] + 1 if x[i] == y[j] else max(table[i][j + 1], table[i + 1][j])
        lcs = table[-1][-1]
        if not lcs:
            return 0.0
        p, r = lcs / len(x), lcs / len(y)
        return (1 + 1.2 ** 2) * p * r / (r + 1.2 ** 2 * p)

    refs = ("The two scenes seem identical.", "there is no change", "no change was made")
    words = ["the two scenes seem identical", "there is no change", "no change was made"]
    means = [sum(rouge(w, o) for o in words if o != w) / 2 for w in words]
    assert means[0] == 0.0 and means[1] > 0
    assert consensus_reference(refs) == refs[max(range(3), key=lambda i: (means[i], -i))] == "there is no change"
    assert consensus_reference(("only one",)) == "only one"
    from types import SimpleNamespace

    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.recipe import Recipe
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run

    ier = DatasetFacts(builder="ier", train_reference="shortest")
    given = {None: "shortest", "consensus": "consensus", "random": "random"}  # the flag, else the dataset's facts
    for flag, expected in given.items():
        s = resolve_run(get_recipe_class("blip2idc"), ier, TrainArgs("blip2idc", "d", "o", train_reference=flag))
        assert s.train_reference == expected
    recipe = SimpleNamespace(run=SimpleNamespace(train_reference="consensus", seed=0))
    assert {Recipe.reference(recipe, list(refs), k, epoch) for k in range(3) for epoch in range(3)} == {"there is no change"}

"""The checkpoints users bring, at their real layout, built on the meta device (no weights).

Reference values are the published ones: parameter counts as the checkpoints' model cards and
the GPU measurement of issue 35 state them (BLIP-2 OPT-2.7B 3.74 B, InstructBLIP-Vicuna-7B 7.91 B),
the Q-Former's cross-attention on every 2nd layer, BLIP2IDC's released 18-entry target list.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from idc_toolkit.errors import IDCError  # noqa: E402
from idc_toolkit.models.published_configs import LAYOUTS, meta_model, real_config, structure_of  # noqa: E402


@pytest.fixture(scope="module")
def blip2_meta():
    return meta_model("Salesforce/blip2-opt-2.7b")


def _count(model) -> float:
    return sum(p.numel() for p in model.parameters()) / 1e9


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_published_layout_builds_on_the_meta_device(name):
    model = meta_model(name)
    assert all(p.device.type == "meta" for p in model.parameters())
    # Qwen2-VL-2B and OPT tie their output to their input embeddings (transformers 5.0 did not: the floor is 5.2)
    expected = {"Salesforce/blip2-opt-2.7b": 3.74, "Salesforce/instructblip-vicuna-7b": 7.91, "Qwen/Qwen2-VL-2B-Instruct": 2.21}
    if name in expected:
        assert _count(model) == pytest.approx(expected[name], abs=0.01)


def test_the_real_qformer_has_cross_attention_on_every_second_layer(blip2_meta):
    layers = [n.split(".")[3] for n, _ in blip2_meta.named_modules() if n.endswith("crossattention.attention.query")]
    assert layers == ["0", "2", "4", "6", "8", "10"]


def _released_adapter(model, targets, r: int = 4):
    """A BLIP2IDC-style adapter made on ``model`` (meta tensors: only shapes matter to the check)."""
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict

    net = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets))
    state = get_peft_model_state_dict(net)
    config = {"peft_type": "LORA", "target_modules": targets, "base_model_name_or_path": "Salesforce/blip2-opt-2.7b"}
    return net.get_base_model(), config, state


def test_the_released_blip2idc_target_list_is_accepted_on_the_real_layout():
    """The released adapter_config.json names layers 0..11; the real Q-Former has 6 of them: peft
    accepts that, and so does the check. A wrong shape or another architecture is still refused."""
    from idc_toolkit.models.adapters import check_adapter
    from idc_toolkit.demo.tiny import blip2idc_targets

    targets = blip2idc_targets(12)
    assert len(targets) == 18
    base, config, state = _released_adapter(meta_model("Salesforce/blip2-opt-2.7b"), targets)
    queries = {k for k in state if "crossattention.attention.query" in k}
    assert len(queries) == 12  # lora_A and lora_B of 6 layers
    check_adapter(base, config, state, "Salesforce/blip2-opt-2.7b", "released")
    key = next(k for k in state if "q_proj.lora_A" in k)
    with pytest.raises(IDCError, match="does not fit input size 2560"):
        check_adapter(base, config, {**state, key: torch.zeros(4, 7, device="meta")}, "base", "released")
    with pytest.raises(IDCError, match="no lora_B tensor"):
        check_adapter(base, config, {k: v for k, v in state.items() if not k.endswith(key.replace("lora_A", "lora_B").split(".", 1)[1])},
                      "base", "released")
    qwen = meta_model("Qwen/Qwen2-VL-2B-Instruct")
    with pytest.raises(IDCError, match="does not fit the base model"):
        check_adapter(qwen, config, state, "Qwen/Qwen2-VL-2B-Instruct", "released")
    with pytest.raises(IDCError, match="none of its target modules"):
        check_adapter(qwen, {**config, "target_modules": ["crossattention.attention.query"]}, state, "qwen", "released")


@pytest.mark.parametrize("model,name", [("blip2idc", "Salesforce/blip2-opt-2.7b"), ("davir", "Salesforce/instructblip-vicuna-7b")])
def test_recipes_resolve_their_lora_targets_on_the_real_layout(model, name):
    """What each recipe wraps on the real base: BLIP2IDC the 6 cross-attention queries the real
    Q-Former has; DAVIR the ViT and Q-Former QKV and the LLM's q/k/v projections of every layer."""
    from peft import get_peft_model

    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run

    cls = get_recipe_class(model)
    facts = DatasetFacts(builder="clevr_change", pair_style="scene")
    settings = resolve_run(cls, facts, TrainArgs(model, dataset="data", out="run", base_model=name, val_split=None))
    base = meta_model(name)
    net = get_peft_model(base, cls(settings, facts).lora_config(base))
    wrapped = {n.split(".lora_A.")[0] for n, _ in net.named_parameters() if ".lora_A." in n}
    if model == "blip2idc":
        assert len([w for w in wrapped if "crossattention.attention.query" in w]) == 6
        assert len([w for w in wrapped if w.endswith("q_proj")]) == 32  # OPT-2.7B's 32 layers
    else:
        assert len([w for w in wrapped if w.endswith("self_attn.q_proj")]) == 32
        assert len([w for w in wrapped if w.endswith(".qkv")]) == 39  # the ViT-g's 39 layers


@pytest.mark.parametrize("model,name", [("blip2idc", "Salesforce/blip2-opt-2.7b"), ("davir", "Salesforce/instructblip-vicuna-7b")])
def test_dry_run_on_the_real_layout(model, name, tmp_path, demo_dataset, davir_dataset):
    """``idc-train --dry-run`` against a folder holding only the real config.json: exact parameter
    counts, no weights read."""
    from idc_toolkit.training import TrainArgs, train

    base = tmp_path / "base"
    real_config(name).save_pretrained(base)
    dataset = davir_dataset if model == "davir" else demo_dataset
    result = train(TrainArgs(model, str(dataset), tmp_path / "out", base_model=str(base), val_split=None, device="cpu",
                   progress=False, report_to="none", dry_run=True))
    total = sum(result.estimate.parameters.values()) / 1e9
    assert total == pytest.approx({"blip2idc": 3.74, "davir": 7.91}[model], abs=0.02)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", [n for n, (cls, _) in LAYOUTS.items() if not cls.startswith(("Blip2", "InstructBlip"))])
def test_the_vlm_runner_loads_every_published_vlm_through_its_auto_class(name):
    """``idc-eval --model vlm`` loads a base with AutoModelForImageTextToText: every VLM layout maps to
    its own class there (the one the meta-device test builds), with an image token in its vocabulary."""
    from transformers import AutoModelForImageTextToText

    config = real_config(name)
    assert AutoModelForImageTextToText._model_mapping[type(config)].__name__ == LAYOUTS[name][0]
    token = getattr(config, "image_token_id", None) or getattr(config, "image_token_index", None)
    assert token is not None and token < config.get_text_config().vocab_size


@pytest.mark.parametrize("model,name", [("blip2idc", "Salesforce/blip2-flan-t5-xl"), ("davir", "Salesforce/instructblip-flan-t5-xl")])
def test_training_refuses_an_encoder_decoder_base_in_one_line(model, name, tmp_path, demo_dataset, davir_dataset):
    from idc_toolkit.training import TrainArgs, train

    base = tmp_path / "base"
    real_config(name).save_pretrained(base)
    with pytest.raises(IDCError, match="has a t5 \\(encoder-decoder\\) language model"):
        train(TrainArgs(model, str(davir_dataset if model == "davir" else demo_dataset), tmp_path / "out", base_model=str(base),
              val_split=None, device="cpu", progress=False, report_to="none", dry_run=True))


@pytest.mark.parametrize("tiny,real", [("blip2", "Salesforce/blip2-opt-2.7b"), ("iblip", "Salesforce/instructblip-vicuna-7b"),
                                       ("qwen2_vl", "Qwen/Qwen2-VL-2B-Instruct"),
                                       ("llava_onevision", "llava-hf/llava-onevision-qwen2-0.5b-ov-hf"),
                                       ("idefics3", "HuggingFaceM4/Idefics3-8B-Llama3")])
def test_tiny_models_keep_their_real_models_structure(tiny_models, tiny, real):
    from transformers import AutoConfig

    config = json.loads((tiny_models(tiny) / "config.json").read_text())
    assert structure_of(AutoConfig.for_model(**config)) == structure_of(real_config(real))


#: the H100 peaks (random weights of the real size; figures and setup in benchmarks/README.md); DAVIR without
#: checkpointing at --fac-weight 0, the path its attention capture does not change
MEASURED_GIB = {("blip2idc", False): 17.16, ("davir", False): 39.8, ("davir", True): 20.94}


@pytest.fixture(scope="module")
def measured_setups(tmp_path_factory):
    """The real configurations with the tiny tokenizers beside them, as the GPU runs had them."""
    import shutil

    from idc_toolkit.demo import tiny

    root = tmp_path_factory.mktemp("gpu_setups")
    folders = {}
    for model, name, save in (("blip2idc", "Salesforce/blip2-opt-2.7b", tiny.save_tiny_blip2),
                              ("davir", "Salesforce/instructblip-vicuna-7b", tiny.save_tiny_instructblip)):
        small = save(root / f"{model}_tiny")
        folder = root / model
        real_config(name).save_pretrained(folder)
        for f in small.iterdir():
            if f.is_file() and f.name not in ("config.json", "model.safetensors", "generation_config.json"):
                shutil.copy(f, folder / f.name)
            elif f.is_dir():
                shutil.copytree(f, folder / f.name)
        folders[model] = folder
    return folders


def _measured_version() -> bool:
    import transformers
    from packaging.version import Version

    return Version(transformers.__version__) >= Version("5.24")


@pytest.mark.skipif(not _measured_version(), reason="the H100 figures were measured under transformers 5.24; earlier "
                                                     "releases checkpoint differently (their peak was not measured)")
@pytest.mark.parametrize("model,checkpointing", sorted(MEASURED_GIB))
def test_the_memory_estimate_is_within_10_percent_of_the_gpu(model, checkpointing, measured_setups, monkeypatch):
    """--dry-run's estimate (weights + LoRA state + the activations measured on a slice of the model)
    against the H100's peak for the same run."""
    from idc_toolkit.facts import DatasetFacts
    from idc_toolkit.models.registry import get_recipe_class
    from idc_toolkit.training import TrainArgs, resolve_run
    from idc_toolkit.training.estimate import estimate

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # the estimate for an H100, here
    cls = get_recipe_class(model)
    facts = DatasetFacts(builder="clevr_change", pair_style="scene")
    options = {"fac_weight": 0.0} if (model, checkpointing) == ("davir", False) else {}
    settings = resolve_run(cls, facts, TrainArgs(model, dataset="data", out="run", base_model=str(measured_setups[model]),
                                                      batch_size=16, val_split=None, gradient_checkpointing=checkpointing,
                                                      options=options))
    result = estimate(cls, settings, facts, "cuda")
    gib = result.total_bytes / 1024 ** 3
    assert result.dtype == "bfloat16"
    assert gib == pytest.approx(MEASURED_GIB[(model, checkpointing)], rel=0.10), gib
    if options:  # DAVIR's attention capture: one eager ViT layer on top (the whole eager ViT was 6.4 GiB on the H100)
        captured = estimate(cls, resolve_run(cls, facts, TrainArgs(model, dataset="data", out="run", batch_size=16,
                                                                         base_model=str(measured_setups[model]), val_split=None)),
                            facts, "cuda")
        assert 0 < captured.total_bytes - result.total_bytes < 0.5 * 1024 ** 3

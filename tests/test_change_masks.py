"""Change masks: exact DBSCAN, distractor robustness, quality on demo pairs, SAM through the
CLI with a tiny random model, determinism, resume and sharding of the pass, FAC helpers."""

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasets import load_dataset
from PIL import Image, ImageChops, ImageEnhance, ImageFilter

from idc_toolkit.masks.clustering import grid_dbscan, prune_clusters
from idc_toolkit.masks.diff import compute_change_mask
from idc_toolkit.masks.distances import grouped_medians, texture_level
from idc_toolkit.masks.params import MaskParams
from idc_toolkit.cli.precompute import main as precompute_main
from idc_toolkit.errors import IDCError
from idc_toolkit.masks.column import add_change_masks
from idc_toolkit.runs import EngineArgs


@pytest.mark.parametrize("seed", range(12))
def test_grid_dbscan_equals_sklearn(seed):
    from sklearn.cluster import DBSCAN

    rng = np.random.default_rng(seed)
    h, w = rng.integers(15, 70, 2)
    mask = rng.random((h, w)) < rng.uniform(0.02, 0.35)
    eps, min_samples = float(rng.choice([1.0, 1.5, 2.0, 3.0])), int(rng.integers(2, 9))
    expected = DBSCAN(eps=eps, min_samples=min_samples).fit(np.argwhere(mask)).labels_
    assert np.array_equal(grid_dbscan(mask, eps, min_samples)[mask], expected)


@pytest.mark.parametrize("min_samples", [1, 2])
def test_grid_dbscan_equals_sklearn_under_one_pixel(min_samples):
    """eps under one pixel: a pixel's only neighbour is itself (every pixel its own cluster, or
    all noise), and the grid has no edges to join."""
    from sklearn.cluster import DBSCAN

    mask = np.random.default_rng(0).random((20, 30)) < 0.3
    expected = DBSCAN(eps=0.5, min_samples=min_samples).fit(np.argwhere(mask)).labels_
    assert np.array_equal(grid_dbscan(mask, 0.5, min_samples)[mask], expected)


def _demo_pair(raw, sid):
    return (Image.open(raw / "images" / f"CLEVR_default_{sid}.png"), Image.open(raw / "sc_images" / f"CLEVR_semantic_{sid}.png"),
            np.asarray(Image.open(raw / "masks" / f"{sid}.png")) > 127)


def test_grouped_medians_equal_numpy_median_per_group():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 9, 4001)
    groups[groups == 4] = 5  # an empty group
    values = np.round(rng.gamma(2.0, 5.0, 4001), 1).astype(np.float32)  # ties, as levels have
    out = grouped_medians(groups, values, 10)
    for g in range(10):
        expected = np.median(values[groups == g].astype(np.float64)) if (groups == g).any() else np.nan
        assert (np.isnan(out[g]) and np.isnan(expected)) or out[g] == expected, (g, out[g], expected)


def test_texture_level_is_the_median_of_each_pixels_texture_class():
    """Each pixel's level is the median plain difference of the sampled pixels (every 4th) in
    its texture class, the classes cut at the sample's 1/16 .. 15/16 quantiles: checked with
    np.searchsorted and np.median against the in-place comparisons and the one sort."""
    rng = np.random.default_rng(1)
    tex = np.round(rng.gamma(1.5, 12.0, (60, 70))).astype(np.float32)  # many ties, as 3x3 ranges
    plain = (rng.random((60, 70)) * (1 + tex)).astype(np.float32)  # grows with the texture
    level = texture_level(plain, tex)
    ts, ps = tex[::2, ::2].ravel(), plain[::2, ::2].ravel()
    edges = np.unique(np.sort(ts)[(np.arange(1, 16) * len(ts)) // 16])
    sample_class, pixel_class = np.searchsorted(edges, ts, side="right"), np.searchsorted(edges, tex, side="right")
    expected = np.array([np.median(ps[sample_class == c]) if (sample_class == c).any() else np.median(ps)
                         for c in range(len(edges) + 1)], dtype=np.float32)[pixel_class]
    assert len(edges) >= 10 and np.array_equal(level, expected)
    assert level[tex >= np.percentile(tex, 90)].mean() > 3 * level[tex <= np.percentile(tex, 10)].mean()


def test_prune_clusters_drops_only_small_clusters_that_stand_no_clearer_than_their_texture():
    labels = np.full((40, 40), -1, dtype=np.int32)
    excess = np.zeros((40, 40), dtype=np.float32)
    labels[2:6, 2:6], excess[2:6, 2:6] = 0, 2.0  # 16 pixels at 2x their texture's level
    labels[10:14, 2:6], excess[10:14, 2:6] = 1, 5.0  # 16 pixels at 5x
    labels[20:36, 2:18], excess[20:36, 2:18] = 2, 2.0  # 256 pixels at 2x
    labels[2:6, 20:24], excess[2:6, 20:24] = 3, 1.0  # 16 pixels: 9 at 1x, 7 at 9x (mean 4.5, median 1)
    excess[2, 20:24], excess[3, 20:23] = 9.0, 9.0

    def kept(**kw):
        out = prune_clusters(labels, excess, MaskParams(**kw))
        assert all((out[labels == k] == k).all() or (out[labels == k] == -1).all() for k in range(4))
        return [k for k in range(4) if (out[labels == k] == k).all()]

    assert kept(prune_k=3.0, prune_pixels=200) == [1, 2]
    assert kept(prune_k=6.0, prune_pixels=200) == [2]
    assert kept(prune_k=3.0, prune_pixels=300) == [1]
    assert kept(prune_k=0.0, prune_pixels=300) == [0, 1, 2, 3]


def test_quality_on_demo_pairs_with_ground_truth(demo_raw):
    types = json.loads((demo_raw / "type_mapping.json").read_text())
    ious = {}
    for change_type, names in types.items():
        vals = []
        for name in names:
            before, after, gt = _demo_pair(demo_raw, name.split(".")[0])
            pred = compute_change_mask(before, after).mask
            vals.append((gt & pred).sum() / max(1, (gt | pred).sum()))
        ious[change_type] = float(np.mean(vals))
    for change_type in ("add", "drop", "color", "move"):
        assert ious[change_type] >= 0.7, ious


def test_filled_holes_make_an_object_whose_outline_changed_one_region(demo_raw):
    """The demo draws a material change at the object's outline: the pixels inside do not
    change, and the ground truth is the object. Filled regions cover it; per-pixel ones
    (``fill_holes=False``) leave its inside out (measured 0.784 and 0.446)."""
    types = json.loads((demo_raw / "type_mapping.json").read_text())
    ious = {}
    for fill in (True, False):
        vals = []
        for name in types["material"]:
            before, after, gt = _demo_pair(demo_raw, name.split(".")[0])
            pred = compute_change_mask(before, after, MaskParams(fill_holes=fill)).mask
            vals.append((gt & pred).sum() / max(1, (gt | pred).sum()))
        ious[fill] = float(np.mean(vals))
    assert ious[True] >= 0.75 and ious[False] < 0.6, ious


def test_distractors_do_not_light_up_the_image(demo_raw):
    areas = []
    for f in sorted((demo_raw / "nsc_images").iterdir()):
        sid = f.stem.split("_")[-1]
        areas.append(compute_change_mask(Image.open(demo_raw / "images" / f"CLEVR_default_{sid}.png"), Image.open(f)).mask.mean())
    assert np.mean(areas) <= 0.02


@pytest.mark.parametrize("factor", [0.7, 1.3])
def test_global_brightness_change_alone_gives_no_mask(demo_raw, factor):
    before = Image.open(demo_raw / "images" / "CLEVR_default_000000.png").convert("RGB")
    after = ImageEnhance.Brightness(before).enhance(factor)
    assert compute_change_mask(before, after).mask.mean() < 0.005
    naive = np.abs(np.asarray(after, dtype=int) - np.asarray(before, dtype=int)).max(axis=2) > MaskParams().delta
    assert naive.mean() > 0.5  # without relighting, the threshold alone would flag most of the image


def test_small_camera_shift_is_compensated(demo_raw):
    before = Image.open(demo_raw / "images" / "CLEVR_default_000001.png").convert("RGB")
    after = ImageChops.offset(before, 3, -2)
    cm = compute_change_mask(before, after)
    assert cm.shift == (-2, 3) and cm.mask.mean() < 0.005


def _column(out, name):
    return [v for f in sorted((out / "data").glob("*.parquet")) for v in pq.read_table(f, columns=["pair_id", name]).to_pylist()]


def test_diff_fallback_through_the_cli(demo_dataset, tmp_path):
    out = tmp_path / "masks"
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--no-progress"]) == 0
    ds = load_dataset(str(out), split="test")
    assert set(ds["mask_source"]) == {"diff"}
    row = ds[0]
    assert row["change_mask"].size == row["after"].size and row["change_mask"].mode == "L"
    card = (out / "README.md").read_text()
    assert "## Change masks" in card and '"delta": 10.0' in card and "name: change_mask" in card
    assert len(ds) == len(load_dataset(str(demo_dataset), split="test"))


def test_diff_only_masks_import_no_torch(demo_dataset, tmp_path, monkeypatch):
    """Without a SAM checkpoint no model is loaded, so the default ``--device auto`` is not
    resolved either: torch (1.5 s of a fresh command) is never imported."""
    import sys

    from idc_toolkit.devices import resolve_device

    monkeypatch.setitem(sys.modules, "torch", None)  # from here on, ``import torch`` fails
    assert add_change_masks(demo_dataset, tmp_path / "masks", progress=False).complete
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ImportError):
        resolve_device("auto")


def test_tiny_sam_checkpoint_through_the_cli_is_deterministic(demo_dataset, tmp_path):
    import torch

    from idc_toolkit.masks.sam import build_tiny_sam

    torch.manual_seed(0)
    ckpt = tmp_path / "sam_tiny.pth"
    torch.save(build_tiny_sam().state_dict(), ckpt)
    args = ["masks", "--dataset", str(demo_dataset), "--sam-checkpoint", str(ckpt), "--sam-type", "tiny", "--device", "cpu",
            "--tau", "0.0", "--no-progress"]
    assert precompute_main([*args, "--out", str(tmp_path / "a")]) == 0
    assert precompute_main([*args, "--out", str(tmp_path / "b")]) == 0
    a, b = _column(tmp_path / "a", "change_mask"), _column(tmp_path / "b", "change_mask")
    assert a == b
    sources = {r["mask_source"] for r in _column(tmp_path / "a", "mask_source")}
    assert "sam" in sources  # tau 0: every cluster takes its SAM mask
    assert "Segment Anything (`tiny`" in (tmp_path / "a" / "README.md").read_text()


def test_bad_sam_inputs_fail_before_any_work(demo_dataset, tmp_path, capsys):
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(tmp_path / "o"),
                            "--sam-checkpoint", str(tmp_path / "missing.pth")]) == 1
    assert "SAM checkpoint not found" in capsys.readouterr().err
    bad = tmp_path / "bad.pth"
    import torch

    torch.save({"not": torch.zeros(1)}, bad)
    with pytest.raises(IDCError, match="is not a tiny Segment Anything checkpoint"):
        add_change_masks(demo_dataset, tmp_path / "o2", sam_checkpoint=str(bad), sam_type="tiny", device="cpu")
    assert not (tmp_path / "o2" / "data").exists() or not list((tmp_path / "o2" / "data").glob("*.parquet"))


def _parts(out):
    return sorted(p.name for p in (out / ".idc_run" / "parts").rglob("*.json"))


def _interrupt_masks_at(monkeypatch, call: int):
    """The masks pass raises KeyboardInterrupt at its ``call``-th pair (a Ctrl-C mid-run);
    returns the real ``compute_change_mask`` to put back."""
    import idc_toolkit.masks.column as mp

    original, calls = mp.compute_change_mask, {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == call:
            raise KeyboardInterrupt
        return original(*a, **k)

    monkeypatch.setattr(mp, "compute_change_mask", flaky)
    return original


def test_interrupted_pass_resumes_and_shards_combine(demo_dataset, tmp_path, monkeypatch):
    import idc_toolkit.masks.column as mp

    full = add_change_masks(demo_dataset, tmp_path / "full", rows_per_part=8, progress=False)
    assert full.complete and full.parts_total > 3
    original = _interrupt_masks_at(monkeypatch, 20)
    with pytest.raises(KeyboardInterrupt):
        add_change_masks(demo_dataset, tmp_path / "resumed", rows_per_part=8, progress=False)
    done_before = _parts(tmp_path / "resumed")
    assert 0 < len(done_before) < full.parts_total and not (tmp_path / "resumed" / "data").exists()
    monkeypatch.setattr(mp, "compute_change_mask", original)
    result = add_change_masks(demo_dataset, tmp_path / "resumed", rows_per_part=8, progress=False)
    assert result.complete and result.parts_written == full.parts_total - len(done_before)
    assert _column(tmp_path / "resumed", "change_mask") == _column(tmp_path / "full", "change_mask")

    first = add_change_masks(demo_dataset, tmp_path / "sharded", rows_per_part=8, engine=EngineArgs(shard=(0, 2)), progress=False)
    assert not first.complete and not (tmp_path / "sharded" / "README.md").exists()
    second = add_change_masks(demo_dataset, tmp_path / "sharded", rows_per_part=8, engine=EngineArgs(shard=(1, 2)), progress=False)
    assert second.complete and (tmp_path / "sharded" / "README.md").is_file()
    assert _column(tmp_path / "sharded", "change_mask") == _column(tmp_path / "full", "change_mask")


def test_rerun_with_other_parameters_is_refused_naming_them(demo_dataset, tmp_path, capsys):
    out = tmp_path / "masks"
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--no-progress"]) == 0
    before = {p.name: p.read_bytes() for p in (out / "data").glob("*.parquet")}
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--no-progress"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--delta", "200", "--eps", "5",
                            "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "delta: 10.0 -> 200.0" in err and "eps: 2.0 -> 5.0" in err and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in (out / "data").glob("*.parquet")} == before  # untouched
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--delta", "200", "--eps", "5",
                            "--no-progress", "--overwrite"]) == 0
    assert '"delta": 200.0' in (out / "README.md").read_text()
    assert {p.name: p.read_bytes() for p in (out / "data").glob("*.parquet")} != before


def test_a_half_done_run_of_another_pipeline_revision_is_refused(demo_dataset, tmp_path, monkeypatch, capsys):
    """The same MaskParams give other masks in another pipeline revision: resuming a folder
    begun by an older toolkit would mix two revisions' masks, so it is refused, naming it."""
    import idc_toolkit.masks.column as mp
    from idc_toolkit.masks.params import PIPELINE_REVISION

    out = tmp_path / "masks"
    monkeypatch.setattr(mp, "PIPELINE_REVISION", PIPELINE_REVISION - 1)
    _interrupt_masks_at(monkeypatch, 20)
    with pytest.raises(KeyboardInterrupt):
        add_change_masks(demo_dataset, out, rows_per_part=8, progress=False)
    monkeypatch.undo()
    parts = _parts(out)
    assert parts
    assert precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(out), "--rows-per-part", "8",
                            "--no-progress"]) == 1
    assert f"pipeline_revision: {PIPELINE_REVISION - 1} -> {PIPELINE_REVISION}" in capsys.readouterr().err
    assert _parts(out) == parts and not (out / "data").exists()


@pytest.mark.parametrize("option, value, message", [
    ("--eps", "-3", "must be greater than 0"), ("--tau", "2", "must lie in [0, 1]"), ("--resize", "0", "must be at least 1"),
    ("--noise-k", "-1", "must be 0 or more"), ("--min-samples", "1.5", "expected an integer"),
])
def test_mask_parameters_out_of_range_are_refused_where_parsed(demo_dataset, tmp_path, capsys, option, value, message):
    with pytest.raises(SystemExit) as exc:
        precompute_main(["masks", "--dataset", str(demo_dataset), "--out", str(tmp_path / "m"), option, value])
    assert exc.value.code == 2 and f"argument {option}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    field = option[2:].replace("-", "_")
    with pytest.raises(IDCError, match=f"{option} .*{re.escape(message)}"):
        MaskParams(**{field: float(value)})


def test_the_command_line_takes_the_papers_knobs_and_four_more_and_python_all():
    """DAVIR's knobs and four more are flags; every other parameter is set from Python, range-checked."""
    from dataclasses import fields

    from idc_toolkit.cli.precompute import make_parser

    help_text = make_parser()._subparsers._group_actions[0].choices["masks"].format_help()
    flags = {f.name for f in fields(MaskParams) if f"--{f.name.replace('_', '-')}" in help_text
             or f"--no-{f.name.replace('_', '-')}" in help_text}
    assert flags == {"resize", "delta", "eps", "min_samples", "tau", "noise_k", "max_shift", "keep_unmatched", "fill_holes"}
    for field, value, message in (("clean_noise", -1.0, "must be 0 or more"), ("grow", 1.5, "integer")):
        with pytest.raises(IDCError, match=message):
            MaskParams(**{field: value})


def test_soft_patch_mask_and_fac_loss():
    import torch

    from idc_toolkit.masks.patch_masks import soft_patch_mask
    from idc_toolkit.models.davir_fac import fac_kl_loss

    mask = torch.zeros(2, 64, 64)
    mask[0, 8:24, 8:24] = 1
    soft = soft_patch_mask(mask, 8, sigma=1.0)
    assert soft.shape == (2, 8, 8) and float(soft[1].sum()) == 0.0
    assert soft[0, 2, 2] > soft[0, 6, 6] and 0 <= float(soft.min()) and float(soft.max()) <= 1
    attention = soft.clone().requires_grad_(True)
    assert float(fac_kl_loss(attention + 1e-12, soft).detach()) == pytest.approx(0.0, abs=1e-5)
    uniform = torch.full((2, 8, 8), 1 / 64, requires_grad=True)
    loss = fac_kl_loss(uniform, soft)
    loss.backward()
    assert float(loss.detach()) > 0.5 and uniform.grad is not None
    assert float(fac_kl_loss(uniform, torch.zeros(2, 8, 8)).detach()) == 0.0


@pytest.mark.parametrize("name", ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry"])
def test_one_pixel_camera_shifts_on_real_photographs_are_found(name):
    """Real photographs (scikit-image's data folder): a 1-pixel shift right, down or diagonal is
    compensated and masks nothing (the coarse search alone only sees even shifts)."""
    skd = pytest.importorskip("skimage.data")
    img = np.asarray(Image.fromarray(getattr(skd, name)()).resize((240, 240)))
    big = np.pad(img, ((2, 2), (2, 2), (0, 0)), mode="edge")
    for dy, dx in ((0, 1), (1, 0), (-1, 1)):
        before = Image.fromarray(big[2:-2, 2:-2])
        after = Image.fromarray(big[2 - dy:big.shape[0] - 2 - dy, 2 - dx:big.shape[1] - 2 - dx])
        m = compute_change_mask(before, after, MaskParams(resize=240))
        assert m.shift == (dy, dx) and m.mask.mean() < 0.001, (name, dy, dx, m.shift, m.mask.mean())


class _StubRefiner:
    """A SAM stand-in whose answer is known: the cluster's own region (IoU 1) for the first
    cluster, nothing that overlaps (IoU 0) for the others."""

    def refine(self, before, after, clusters, size, tau, alignment=None):
        out = []
        for k, c in enumerate(clusters):
            mask = c.region if k == 0 else np.zeros_like(c.region)
            out.append(mask if (1.0 if k == 0 else 0.0) >= tau else None)
        return out


class _RejectAllRefiner:
    """A SAM stand-in that confirms no cluster (tau is a probability: at most 1)."""

    def refine(self, before, after, clusters, size, tau, alignment=None):
        return [None for _ in clusters]


def test_clusters_sam_does_not_confirm_are_dropped_as_the_paper_says_or_kept_on_request():
    rng = np.random.default_rng(3)
    base = rng.integers(60, 200, (96, 96, 3)).astype(np.uint8)
    base = np.asarray(Image.fromarray(base).filter(ImageFilter.GaussianBlur(3)))
    after = base.copy()
    after[10:30, 10:30] = (255, 0, 0)  # two separate changes
    after[60:85, 55:80] = (0, 0, 255)
    before_img, after_img = Image.fromarray(base), Image.fromarray(after)
    diff_only = compute_change_mask(before_img, after_img, MaskParams(resize=96))
    assert len(diff_only.boxes) == 2 and diff_only.source == "diff"
    dropped = compute_change_mask(before_img, after_img, MaskParams(resize=96), _StubRefiner())
    assert len(dropped.boxes) == 1 and dropped.source == "sam"
    assert dropped.mask[20, 20] and not dropped.mask[70, 65]  # the unconfirmed cluster is gone
    kept = compute_change_mask(before_img, after_img, MaskParams(resize=96, keep_unmatched=True), _StubRefiner())
    assert len(kept.boxes) == 2 and kept.mask[20, 20] and kept.mask[70, 65]
    nothing = compute_change_mask(before_img, after_img, MaskParams(resize=96), _RejectAllRefiner())
    assert not nothing.mask.any() and nothing.boxes == [] and nothing.source == "diff"

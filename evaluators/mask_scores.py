"""``idc-eval masks``: change masks scored against ground truth, per class and per category.

As the change-detection papers score them (Change-Agent's ``test.py`` and its ``Evaluator``):
one confusion matrix over every pixel of the split (rows: ground truth, columns: prediction);
each class's IoU = TP / (TP + FP + FN), precision, recall and F1 from it, and mIoU the mean of
the classes' IoUs (a class absent from both is skipped, as ``np.nanmean`` skips it). Each
category of the dataset is its own matrix; 95% intervals come from resampling the pairs.

The prediction is a mask column of the dataset (``idc-precompute masks``' ``change_mask``) or a
folder of PNGs named ``<pair_id>.png`` (a model's masks); so is the reference (a release's
labels: LEVIR-MCI's ``change_classes``, SECOND-CC's, the folder builder's ``label/``). Only label
maps are read: the pair's photographs, text columns and files that are not PNG are refused, and
values beyond :data:`MAX_CLASSES` classes need ``--class-names``. ``--out`` follows the run
folder rule of every other command. Where
either side is a change mask (values 0 and 255 only) both are read as change / no change;
where both are class maps (values 0..K-1, e.g. ``change_classes``), class by class.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from idc_toolkit import checks
from idc_toolkit.errors import EvaluationError
from idc_toolkit.options import check_fields, option, required
from idc_toolkit.stores import STORE_DATASET

BINARY_CLASSES = ("no change", "change")


@dataclass
class MaskEvalArgs:
    """``idc-eval masks``: what is scored against what."""

    dataset: str = required("an idc-build folder (with its mask columns) or a Hub dataset id" + STORE_DATASET)
    reference: str = required("the ground truth: a column of the dataset or a folder of <pair_id>.png")
    split: str = option("test", "dataset split")
    column: str = option("change_mask", "the predicted masks: a column of the dataset")
    predicted: Optional[str] = option(None, "the predicted masks as a folder of <pair_id>.png (instead of --column)")
    class_names: Optional[list[str]] = option(None, "names of class values 0..K-1 when both sides are class maps", nargs="+")
    binary: bool = option(False, "score change / no change even when both sides are class maps")
    allow_missing: bool = option(False, "score the pairs that have both masks (else a missing one is an error)")
    bootstrap: int = option(0, "95%% bootstrap intervals from N resamples of the pairs", check=checks.non_negative_int,
                            metavar="N")
    seed: int = option(0, "bootstrap seed", check=checks.non_negative_int)
    out: Optional[str] = option(None, "folder for masks.json and masks.md (the run folder rule: docs/run-engine.md)")
    overwrite: bool = option(False, "replace --out when it holds a mask evaluation with other settings")

    def __post_init__(self) -> None:
        check_fields(self)


def confusion(truth: np.ndarray, predicted: np.ndarray, k: int) -> np.ndarray:
    """``k x k`` pixel counts, rows the true class, columns the predicted one."""
    return np.bincount(k * truth.astype(np.int64).ravel() + predicted.astype(np.int64).ravel(),
                       minlength=k * k).reshape(k, k)


def scores(cm: np.ndarray) -> dict[str, Any]:
    """IoU, precision, recall and F1 per class, mIoU (nan-mean over classes) and pixel accuracy."""
    tp = np.diag(cm).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = tp / (cm.sum(0) + cm.sum(1) - tp)
        precision = tp / cm.sum(0)
        recall = tp / cm.sum(1)
        f1 = 2 * precision * recall / (precision + recall)
    return {"mIoU": float(np.nanmean(iou)) if not np.isnan(iou).all() else None, "accuracy": float(tp.sum() / cm.sum()),
            "IoU": iou, "precision": precision, "recall": recall, "F1": f1}


def _number(v: float) -> Optional[float]:
    return None if np.isnan(v) else float(v)


def _group(cms: np.ndarray, idx: list[int], names: tuple[str, ...], resamples: int, rng) -> dict[str, Any]:
    s = scores(cms[idx].sum(0))
    out: dict[str, Any] = {"n": len(idx), "mIoU": s["mIoU"], "accuracy": s["accuracy"],
                           "per_class": {name: {m: _number(s[m][c]) for m in ("IoU", "precision", "recall", "F1")}
                                         for c, name in enumerate(names)}}
    if resamples and len(idx) > 1:
        draws = rng.integers(0, len(idx), size=(resamples, len(idx)))
        sub = cms[idx]
        samples = [scores(sub[d].sum(0)) for d in draws]
        miou = [x["mIoU"] for x in samples if x["mIoU"] is not None]
        out["ci"] = {"mIoU": [float(np.percentile(miou, 2.5)), float(np.percentile(miou, 97.5))] if miou else None}
        for c, name in enumerate(names):
            vals = np.array([x["IoU"][c] for x in samples])
            vals = vals[~np.isnan(vals)]
            out["ci"][f"IoU {name}"] = [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))] if len(vals) else None
    return out


#: the most classes a class map is read with unless --class-names names them (a photograph read as one had 250)
MAX_CLASSES = 64
#: the dataset's own photographs: never label maps
PAIR_IMAGES = ("before", "after")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _array(cell: Any, where: str) -> Optional[np.ndarray]:
    from idc_toolkit.building.labels import first_channel
    from idc_toolkit.runs.rows import decode_image

    if cell is None:
        return None
    try:
        return first_channel(np.asarray(decode_image(cell)))
    except Exception as exc:  # PIL's errors come in several types
        raise EvaluationError(f"{where}: not a readable image ({type(exc).__name__})") from None


def _from_folder(folder: Path, pid: str, option: str) -> Optional[np.ndarray]:
    from idc_toolkit.building.labels import first_channel, read_label

    path = folder / f"{pid}.png"
    if not path.is_file():
        return None
    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE):
        raise EvaluationError(f"{option} {folder}: {path.name} (pair {pid!r}) is not a PNG file; masks are read as "
                              "lossless PNG label maps")
    try:
        return first_channel(read_label(data))
    except Exception as exc:  # a PNG cut short or corrupt
        raise EvaluationError(f"{option} {folder}: {path.name} (pair {pid!r}) cannot be read ({type(exc).__name__})") from None


def _check_mask_column(ds, column: str, option: str, where: str) -> None:
    """A column of label maps: an image column, and not the pair's own photographs."""
    from datasets import Image

    if column in PAIR_IMAGES:
        raise EvaluationError(f"{option} {column}: the pair's {column} photograph, not a label map; name a mask column "
                              "(change_mask, change_classes) or a folder of <pair_id>.png")
    feature = ds.features.get(column)
    if not isinstance(feature, Image):
        raise EvaluationError(f"{option} {column}: {where} holds {type(feature).__name__} values there, not label maps "
                              "(images); name a mask column (change_mask, change_classes) or a folder of <pair_id>.png")


def _fit(predicted: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A prediction at another size than its reference, resized to it (nearest neighbour)."""
    from PIL import Image

    return np.asarray(Image.fromarray(predicted).resize((shape[1], shape[0]), Image.NEAREST))


def load_mask_pairs(a: MaskEvalArgs) -> tuple[list[str], list[Optional[str]], list[np.ndarray], list[np.ndarray], list[str]]:
    """Pair ids, categories, references, predictions (same sizes) and notes."""
    from datasets import load_dataset

    from idc_toolkit.schema import category_names

    from idc_toolkit.stores import input_folder

    from idc_toolkit.runs.rows import check_built

    dataset = input_folder(a.dataset, EvaluationError)
    check_built(dataset)
    try:
        ds = load_dataset(dataset, split=a.split)
    except (ValueError, FileNotFoundError) as exc:
        raise EvaluationError(f"--dataset {a.dataset}: cannot load split {a.split!r}: {str(exc).splitlines()[0]}") from None
    where = f"{a.dataset} [{a.split}]"
    ref_folder = None if a.reference in ds.column_names else Path(a.reference)
    if ref_folder is not None and not ref_folder.is_dir():
        raise EvaluationError(f"--reference {a.reference}: neither a column of {a.dataset} ({', '.join(ds.column_names)}) "
                              "nor a folder")
    if ref_folder is None:
        _check_mask_column(ds, a.reference, "--reference", where)
    pred_folder = Path(a.predicted) if a.predicted else None
    if pred_folder is None and a.column not in ds.column_names:
        raise EvaluationError(f"--column {a.column}: {a.dataset} [{a.split}] has no such column "
                              "(idc-precompute masks writes change_mask; or give --predicted FOLDER)")
    if pred_folder is None:
        _check_mask_column(ds, a.column, "--column", where)
    if pred_folder is not None and not pred_folder.is_dir():
        raise EvaluationError(f"--predicted {a.predicted}: no such folder")
    names = category_names(ds.features) if "category" in ds.column_names else None
    columns = ["pair_id", *(["category"] if names else []), *([a.reference] if ref_folder is None else []),
               *([a.column] if pred_folder is None else [])]
    ids, cats, refs, preds, missing, resized = [], [], [], [], [], 0
    for row in ds.select_columns(list(dict.fromkeys(columns))):
        pid = row["pair_id"]
        ref = (_from_folder(ref_folder, pid, "--reference") if ref_folder
               else _array(row[a.reference], f"--reference {a.reference}, pair {pid!r}"))
        pred = (_from_folder(pred_folder, pid, "--predicted") if pred_folder
                else _array(row[a.column], f"--column {a.column}, pair {pid!r}"))
        if ref is None or pred is None:
            missing.append(pid)
            continue
        if pred.shape != ref.shape:
            pred, resized = _fit(pred, ref.shape), resized + 1
        ids.append(pid)
        cats.append(names[row["category"]] if names and row["category"] is not None else None)
        refs.append(ref)
        preds.append(pred)
    notes = [f"{resized} prediction(s) at another size than their reference: resized to it (nearest neighbour)"] if resized else []
    if missing:
        from .groups import listed_ids

        if not a.allow_missing:
            raise EvaluationError(f"{len(missing)} pair(s) lack a predicted or a reference mask: {listed_ids(missing)} "
                                  "(--allow-missing scores the others)")
        notes.append(f"{len(missing)} pair(s) without both masks were left out: {listed_ids(missing)}")
    if not ids:
        raise EvaluationError(f"no pair of {a.dataset} [{a.split}] has both masks")
    return ids, cats, refs, preds, notes


def _is_mask(arrays: list[np.ndarray]) -> bool:
    return set(np.unique(np.concatenate([np.unique(x) for x in arrays])).tolist()) <= {0, 255}


def evaluate_masks(args: Optional[MaskEvalArgs] = None, **fields: Any) -> dict[str, Any]:
    """Score the masks (module docstring); returns what ``masks.json`` holds."""
    a = args if args is not None else MaskEvalArgs(**fields)
    ids, cats, refs, preds, notes = load_mask_pairs(a)
    if a.binary or _is_mask(refs) or _is_mask(preds):
        refs, preds, names = [r > 0 for r in refs], [p > 0 for p in preds], BINARY_CLASSES
    else:
        k = max(int(max(r.max() for r in refs)), int(max(p.max() for p in preds))) + 1
        if k > MAX_CLASSES and not a.class_names:
            side = "--reference" if max(int(r.max()) for r in refs) + 1 == k else "--predicted / --column"
            raise EvaluationError(f"{side}: values up to {k - 1}, not a label map of a few classes (a photograph?); "
                                  "name the classes with --class-names, or score change / no change with --binary")
        names = tuple(a.class_names) if a.class_names else tuple(f"class {i}" for i in range(k))
        if len(names) < k:
            raise EvaluationError(f"--class-names names {len(names)} classes, the masks hold values up to {k - 1}")
    folder = _open_out(a)  # the inputs are checked: an --out we may not write into is refused before the scoring
    k = len(names)
    cms = np.stack([confusion(r, p, k) for r, p in zip(refs, preds)])
    rng = np.random.default_rng(a.seed)
    groups = {"overall": list(range(len(ids)))}
    for c in dict.fromkeys(c for c in cats if c is not None):
        groups[c] = [i for i, x in enumerate(cats) if x == c]
    result = {name: _group(cms, idx, names, a.bootstrap, rng) for name, idx in groups.items()}
    out = {"overall": result.pop("overall"), "by_category": result, "classes": list(names), "notes": notes,
           "meta": {"dataset": a.dataset, "split": a.split, "reference": a.reference,
                    "predicted": a.predicted or f"column {a.column}", "pairs": len(ids), "bootstrap": a.bootstrap,
                    "seed": a.seed, "confusion_matrix": cms.sum(0).tolist()}}
    if folder is not None:
        import json

        def stage(final: Path) -> None:
            (final / "masks.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
            (final / "masks.md").write_text(markdown(out) + "\n", encoding="utf-8")

        folder.finalise(stage, order=OWNED)
    return out


#: what a mask evaluation writes into --out (the only names --overwrite replaces)
OWNED = ("masks.json", "masks.md")


def _open_out(a: MaskEvalArgs):
    """``--out`` under the run engine's rule (:class:`~idc_toolkit.runs.RunFolder`): files no run of
    ours wrote (a user's own masks.json) are refused, another mask evaluation is replaced only with
    --overwrite, an evaluation's or a generation's files beside it stay."""
    if not a.out:
        return None
    from idc_toolkit import __version__
    from idc_toolkit.judge import JUDGE_DIR, JUDGES_DIR
    from idc_toolkit.runs import RunFolder
    from idc_toolkit.runs.fingerprint import path_content
    from idc_toolkit.stores import output_folder

    from .outputs import COMPARE_FILE, MODEL_RUN_FILES, OUTPUT_FILES

    fields = {"dataset": a.dataset, "dataset_content": path_content(a.dataset), "split": a.split,
              "reference": a.reference, "reference_content": None if a.reference in ("", None) else path_content(a.reference),
              "column": None if a.predicted else a.column, "predicted": a.predicted,
              "predicted_content": path_content(a.predicted) if a.predicted else None, "class_names": a.class_names,
              "binary": a.binary, "allow_missing": a.allow_missing, "bootstrap": a.bootstrap, "seed": a.seed,
              "toolkit": __version__}
    out = output_folder(a.out, EvaluationError)
    folder = RunFolder(out, "mask evaluation", fields, owned=OWNED, card_record=False, record_file="masks_eval.json",
                       tolerated=(*OUTPUT_FILES, *MODEL_RUN_FILES, COMPARE_FILE, "compare.md", "compare.tex", JUDGE_DIR,
                                  JUDGES_DIR), progress=False).open(a.overwrite)
    return folder


def markdown(out: dict[str, Any]) -> str:
    """One row per group: n, mIoU, pixel accuracy and each class's IoU / F1 (x100)."""
    def pct(v: Optional[float]) -> str:
        return "n/a" if v is None else f"{100 * v:.1f}"

    names = out["classes"]
    head = ["group", "n", "mIoU", "accuracy", *(f"IoU {c}" for c in names), *(f"F1 {c}" for c in names)]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for group, g in {"overall": out["overall"], **out["by_category"]}.items():
        ci = (g.get("ci") or {}).get("mIoU")
        miou = pct(g["mIoU"]) + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")
        cells = [group, str(g["n"]), miou, pct(g["accuracy"]), *(pct(g["per_class"][c]["IoU"]) for c in names),
                 *(pct(g["per_class"][c]["F1"]) for c in names)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

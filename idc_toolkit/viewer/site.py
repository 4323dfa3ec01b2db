"""``idc-view``: a static, self-contained site for browsing pairs and evaluation runs.

The site is ``OUT/index.html`` with ``OUT/assets/`` (the page's script and style, written by
us and shipped in the package: no CDN, no network) and ``OUT/img/`` (one file per picture,
loaded lazily by the page, only for the pairs on screen). The pairs travel as a script,
``assets/pairs.js``, rather than JSON fetched at run time, because a page opened from a file
(``file://``) may not fetch; so the site works opened directly and through
``python -m http.server`` alike. Every text (captions, ids, categories) reaches the page as
JSON data and is put on screen with ``textContent``, never parsed as HTML.

The folder follows the run engine's rule (:class:`~idc_toolkit.runs.RunFolder`, kind
``view``): the same site again is a no-op, other settings are refused unless ``--overwrite``,
a folder holding anyone else's files is refused, and a killed run resumes (pictures already
written are kept: each was written atomically).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from ..errors import IDCError
from ..stores import input_folder, output_folder
from ..options import with_fields
from .args import ViewArgs
from .sources import Evaluation, check_card, read_evaluation, unique_names

#: what a finished site holds (the only names --overwrite removes)
OWNED = ("index.html", "assets", "img")
#: the page's own files, shipped in idc_toolkit/viewer/static
STATIC = ("index.html", "app.js", "style.css", "favicon.svg")
#: columns shown as pictures or already shown elsewhere on a pair's card
SHOWN_ELSEWHERE = ("pair_id", "before", "after", "captions", "category", "change_mask", "change_boxes")


@dataclass(frozen=True)
class SiteResult:
    out_dir: Path
    n_pairs: int
    splits: tuple[str, ...]
    systems: tuple[str, ...]
    already_written: bool

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"


def write_site(out: Optional[Path | str] = None, args: Optional[ViewArgs] = None, **fields: Any) -> SiteResult:
    """Write the site (see the module docstring) into ``out`` (else ``args.out``); returns where
    it is and what it shows. The options are :class:`~.args.ViewArgs`, given as one or field by
    field; ``leaderboard``: an ``idc-eval leaderboard --out`` folder, shown as the page's first table."""
    from .. import __version__
    from ..runs import RunFolder
    from .sources import read_leaderboard

    a = with_fields(ViewArgs, args, **fields, **({} if out is None else {"out": out}))
    if a.out is None:
        raise IDCError("name the site's folder: out=")
    if a.dataset is None and not a.evaluations and a.leaderboard is None:
        raise IDCError("nothing to show: pass --dataset, one or more --eval folders, a --leaderboard, or several")
    board = None if a.leaderboard is None else read_leaderboard(a.leaderboard)
    runs = unique_names([read_evaluation(e) for e in a.evaluations])
    dataset = None if a.dataset is None else input_folder(a.dataset, IDCError, a.progress)  # a store's: its local copy
    if dataset is not None:
        check_card(dataset)
    chosen = _splits(dataset, list(a.splits), runs) if dataset is not None or runs else []
    sources = {}
    if dataset is not None:
        from ..runs.rows import open_split

        sources = {split: open_split(dataset, split, a.progress) for split in chosen}
    recorded = {"dataset": {s: fp for s, (_rows, _features, fp) in sources.items()}, "splits": chosen,
                "evaluations": [[ev.name, ev.content_hash] for ev in runs], "image_size": a.image_size, "limit": a.limit,
                "title": a.title, "toolkit": __version__, "page": _static_hash(), **({"leaderboard": board} if board else {})}
    out_dir = output_folder(a.out, IDCError)
    folder = RunFolder(out_dir, "view", recorded, owned=OWNED, card_record=False, record_file="view.json",
                       progress=a.progress).open(a.overwrite)
    systems = tuple(ev.name for ev in runs)
    if folder.complete:
        n = json.loads((folder.state_dir / "view.json").read_text()).get("n_pairs", 0)
        return SiteResult(out_dir, n, tuple(chosen), systems, already_written=True)

    records: list[dict[str, Any]] = []
    for split in chosen:
        on_split = [ev for ev in runs if ev.split in (split, None)]
        if split in sources:
            rows, features, _fp = sources[split]
            records += _dataset_records(out_dir, split, rows, features, on_split, runs, a.image_size, a.limit, a.progress)
        else:
            records += _evaluation_records(split, on_split, runs)
    page = {"title": a.title or _default_title(dataset, runs) or "leaderboard", "dataset": _dataset_label(dataset),
            "splits": chosen, "systems": [ev.table() for ev in runs], "metrics": _score_names(runs), "n_pairs": len(records),
            "shown_metrics": shown_metrics(), "leaderboard": board, "toolkit": __version__}

    def stage(final: Path) -> None:
        assets = final / "assets"
        assets.mkdir()
        static = resources.files("idc_toolkit.viewer").joinpath("static")
        for name in STATIC:
            target = final / name if name == "index.html" else assets / name
            target.write_bytes(static.joinpath(name).read_bytes())
        (assets / "site.js").write_text("window.IDC_SITE = " + json.dumps(page, ensure_ascii=True) + ";\n", encoding="ascii")
        (assets / "pairs.js").write_text("window.IDC_PAIRS = " + json.dumps(records, ensure_ascii=True) + ";\n", encoding="ascii")

    folder.state["n_pairs"] = len(records)
    folder.save_state()
    folder.finalise(stage, order=("assets", "index.html"))
    return SiteResult(out_dir, len(records), tuple(chosen), systems, already_written=False)


def shown_metrics() -> list[str]:
    """The columns the page's tables and pair cards show where an evaluation has them: those of
    the papers' table shapes, in their order."""
    from ..metrics.registry import table_columns

    return list(table_columns())


def _splits(dataset: Optional[str], asked: list[str], runs: list[Evaluation]) -> list[str]:
    """The splits to show: those asked for; else those of the evaluations; else all of the dataset's."""
    if dataset is not None:
        from ..runs.columns import source_splits

        present = source_splits(dataset)
        for split in asked:
            if split not in present:
                raise IDCError(f"--split {split!r}: {dataset} has {', '.join(present)}")
    if asked:
        chosen = list(dict.fromkeys(asked))
    elif any(ev.split for ev in runs):
        chosen = list(dict.fromkeys(ev.split for ev in runs if ev.split))
    else:
        chosen = present if dataset is not None else [""]
    for ev in runs:
        if ev.split is None and len(chosen) > 1:
            raise IDCError(f"{ev.folder} was scored against reference files, not a dataset split; pass the --split it belongs to")
        if ev.split is not None and ev.split not in chosen:
            raise IDCError(f"{ev.folder} evaluates split {ev.split!r}, which is not among --split {', '.join(chosen)}")
    return chosen


def _dataset_records(out_dir: Path, split: str, rows, features, on_split: list[Evaluation], runs: list[Evaluation],
                     image_size: int, limit: Optional[int], progress: bool) -> list[dict[str, Any]]:
    from tqdm.auto import tqdm

    from ..files import file_name_for
    from ..runs.rows import decode_image
    from .images import difference, save_atomic, thumbnail

    n = len(rows) if limit is None else min(limit, len(rows))
    category = features.get("category") if hasattr(features, "get") else None
    names = getattr(category, "names", None)
    shown = [c for c in features if c not in SHOWN_ELSEWHERE and not _is_image(features[c])]
    known: set[str] = set()
    records = []
    bar = tqdm(total=n, desc=f"view {split}", unit="pair", disable=not progress)
    for start in range(0, n, 64):
        for row in rows.read(start, min(start + 64, n)):
            pid = str(row["pair_id"])
            known.add(pid)
            stem = f"img/{file_name_for(split or 'pairs')}/{file_name_for(pid)}"
            paths = {"before": f"{stem}_b.jpg", "after": f"{stem}_a.jpg", "diff": f"{stem}_d.png"}
            if not all((out_dir / p).is_file() for p in paths.values()):  # a resumed run keeps what it wrote
                before, after = decode_image(row["before"]), decode_image(row["after"])
                mask = decode_image(row["change_mask"]) if row.get("change_mask") else None
                save_atomic(thumbnail(before, image_size), out_dir / paths["before"], "JPEG")
                save_atomic(thumbnail(after, image_size), out_dir / paths["after"], "JPEG")
                save_atomic(difference(before, after, image_size, mask, row.get("change_boxes")), out_dir / paths["diff"], "PNG")
            cat = row.get("category")
            record = _record(split, pid, names[cat] if names is not None and isinstance(cat, int) else cat,
                             list(row.get("captions") or []), paths, on_split, runs)
            record["fields"] = [[c, text] for c, text in ((c, _text(row.get(c))) for c in shown) if text]
            record["att"] = _attention(out_dir, split, pid, runs, image_size)
            records.append(record)
            bar.update(1)
    bar.close()
    for ev in on_split:
        unknown = [pid for pid in ev.pairs if pid not in known]
        if unknown and limit is None:
            raise IDCError(f"{ev.folder}: {len(unknown)} pair id(s) are not in split {split!r} of the dataset "
                           f"(e.g. {', '.join(map(repr, unknown[:3]))}); was it scored on another dataset or split?")
    return records


def _evaluation_records(split: str, on_split: list[Evaluation], runs: list[Evaluation]) -> list[dict[str, Any]]:
    """Pairs known only from evaluations (no --dataset): their references and categories as scored."""
    ids: dict[str, Any] = {}
    for ev in on_split:
        for pid, result in ev.pairs.items():
            ids.setdefault(pid, result)
    return [_record(split, pid, result.category or None, list(result.references), None, on_split, runs) for pid, result in ids.items()]


def _record(split: str, pid: str, category: Optional[str], references: list[str], images: Optional[dict[str, str]],
            on_split: list[Evaluation], runs: list[Evaluation]) -> dict[str, Any]:
    systems, groups = [], []
    for ev in runs:
        result = ev.pairs.get(pid) if ev in on_split else None
        systems.append(None if result is None else {"caption": result.caption, "scores": result.scores,
                                                    **({"judgement": result.judgement} if result.judgement else {}),
                                                    **({"choice": result.choice} if result.choice else {})})
        if result is not None:
            groups += [g for g in result.groups if g not in groups]
    return {"key": f"{split}/{pid}", "id": pid, "split": split, "category": category, "refs": references,
            "groups": groups, "img": images, "sys": systems, "fields": [], "att": {}}


def _attention(out_dir: Path, split: str, pid: str, runs: list[Evaluation], image_size: int) -> dict[str, str]:
    """The attention pictures ``--save-attention`` wrote into an evaluation's ``attention/``, copied beside the pair's."""
    from PIL import Image

    from ..files import file_name_for
    from .images import save_atomic, thumbnail

    found = {}
    for k, ev in enumerate(runs):
        if ev.attention_dir is None or ev.split not in (split, None):
            continue
        source = ev.attention_dir / file_name_for(pid, ".png")
        if source.is_file():
            rel = f"img/{file_name_for(split or 'pairs')}/{file_name_for(pid)}_att{k}.png"
            if not (out_dir / rel).is_file():
                with Image.open(source) as picture:
                    save_atomic(thumbnail(picture, image_size * 2), out_dir / rel, "PNG")
            found[str(k)] = rel
    return found


def _is_image(feature: Any) -> bool:
    return type(feature).__name__ == "Image"


def _text(value: Any) -> str:
    """A column value as one line of text (lists joined with ``; ``; floats to 3 decimals)."""
    if value is None or isinstance(value, (bytes, dict)):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return "; ".join(t for t in (_text(v) for v in value) if t)
    return str(value)


def _score_names(runs: list[Evaluation]) -> list[str]:
    names: list[str] = []
    for ev in runs:
        names += [m for m in ev.score_names if m not in names]
    return names


def _dataset_label(dataset: Optional[str]) -> Optional[str]:
    if dataset is None:
        return None
    from ..card_data import source_label

    return source_label(dataset)


def _default_title(dataset: Optional[str], runs: list[Evaluation]) -> str:
    if dataset is not None:
        return Path(str(dataset)).name if Path(str(dataset)).exists() else str(dataset)
    return ", ".join(ev.name for ev in runs)


def _static_hash() -> str:
    static = resources.files("idc_toolkit.viewer").joinpath("static")
    digest = hashlib.sha256()
    for name in STATIC:
        digest.update(static.joinpath(name).read_bytes())
    return digest.hexdigest()[:16]


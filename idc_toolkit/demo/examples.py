"""The inputs the docs' examples name, written by ``idc-demo`` beside its own outputs.

* ``spot-the-diff/``: a small procedural release in Spot-the-Diff's own layout (``data/annotations/
  {train,val,test}.json``, ``data/resized_images/<img_id>.png``, ``<img_id>_2.png`` and the
  ``<img_id>_diff.jpg`` maps), with the release's quirks: unpadded ids in no order, several
  annotators' items for one id, lower-case sentences without punctuation, an empty sentence;
* ``my_pairs/``: a folder of your own photographs (``before/``, ``after/``, ``captions.csv``);
* ``coco/`` and ``rcc/``: the baseline's test predictions and the references as coco-caption
  files and as RobustChangeCaptioning's own (``000123.png`` / ``000123.png_n`` ids).

The images are drawings (a parking lot seen from a fixed camera, a garden), never real photographs.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image, ImageChops, ImageDraw

#: Spot-the-Diff's frame size ("All images have been resized to 224,224", the release's README)
FRAME = (224, 224)
#: img_ids per split of the procedural release (the real one: 8,566 / 1,493 / 1,270)
SPLIT_SIZES = {"train": 12, "val": 4, "test": 4}

CAR_COLOURS = {"white": (232, 232, 228), "black": (28, 28, 30), "silver": (168, 170, 175), "red": (170, 30, 30),
               "blue": (35, 60, 150), "green": (40, 95, 50)}
SHIRT_COLOURS = {"red": (200, 40, 40), "blue": (40, 70, 190), "black": (25, 25, 25), "white": (240, 240, 240),
                 "yellow": (230, 200, 40), "green": (40, 140, 60)}

CHANGE_SENTENCES = {
    "car_gone": ["the {colour} car is gone", "the {colour} car parked in the {row} row {at} is no longer there",
                 "{colour} car missing from the {row} {side} of the lot"],
    "car_new": ["there is a {colour} car parked in the {row} row {at} now",
                "a {colour} car has pulled into the {row} row of the lot", "a {colour} car appears {at}"],
    "person_gone": ["the person in the {colour} shirt is gone", "the person walking on the {place} is no longer there",
                    "the man in {colour} {at} has left"],
    "person_new": ["there is a person in a {colour} shirt walking on the {place}",
                   "a person in {colour} appears on the {place} {at}",
                   "in the after image there is an additional person on the {place}"],
    "person_moved": ["the person in the {colour} shirt has moved", "the person in {colour} walked further along the {place}"],
}
NO_CHANGE_SENTENCES = ["i see no differences between the two images", "there are no differences",
                       "nothing has changed", "i do not see any differences between the two images"]


def _side(x: float, w: int) -> dict[str, str]:
    side = "left" if x < w / 3 else "middle" if x < 2 * w / 3 else "right"
    return {"side": side, "at": "in the middle" if side == "middle" else f"on the {side}"}


def _stalls(w: int, h: int) -> list[tuple[int, int, int, int, str]]:
    """The parking lot's stalls: (x0, y0, x1, y1, row), two rows of five."""
    out = []
    for row, (top, bottom) in (("top", (0.44, 0.62)), ("bottom", (0.78, 0.96))):
        for k in range(5):
            x0 = int(w * (0.04 + 0.19 * k))
            out.append((x0, int(h * top), x0 + int(w * 0.17), int(h * bottom), row))
    return out


def _lot(w: int, h: int, rng: np.random.Generator) -> Image.Image:
    """A building, a sidewalk and a parking lot seen from a fixed camera."""
    img = Image.new("RGB", (w, h), (84, 86, 90))
    d = ImageDraw.Draw(img)
    facade = tuple(int(c) for c in rng.integers(140, 190, 3))
    d.rectangle((0, 0, w, int(h * 0.26)), fill=facade)
    for x in range(6, w, 22):  # windows
        d.rectangle((x, int(h * 0.05), x + 10, int(h * 0.18)), fill=tuple(c // 2 for c in facade))
    d.rectangle((0, int(h * 0.26), w, int(h * 0.38)), fill=(186, 186, 180))
    for x0, y0, x1, y1, _ in _stalls(w, h):
        d.line((x0 - 2, y0, x0 - 2, y1), fill=(235, 235, 225), width=2)
        d.line((x1 + 2, y0, x1 + 2, y1), fill=(235, 235, 225), width=2)
    return img


def _car(d: ImageDraw.ImageDraw, stall: tuple, colour: str) -> None:
    x0, y0, x1, y1, _ = stall
    d.rounded_rectangle((x0 + 4, y0 + 3, x1 - 4, y1 - 3), radius=5, fill=CAR_COLOURS[colour])
    d.rectangle((x0 + 8, y0 + 8, x1 - 8, y0 + (y1 - y0) // 3), fill=(60, 70, 85))  # windscreen


def _person(d: ImageDraw.ImageDraw, x: int, y: int, colour: str) -> None:
    d.ellipse((x - 3, y - 14, x + 3, y - 8), fill=(205, 160, 125))
    d.rectangle((x - 4, y - 8, x + 4, y + 4), fill=SHIRT_COLOURS[colour])
    d.rectangle((x - 3, y + 4, x + 3, y + 11), fill=(45, 45, 60))


def _frame(base: Image.Image, cars: dict[int, str], people: list[tuple[int, int, str]], rng: np.random.Generator) -> Image.Image:
    img = base.copy()
    d = ImageDraw.Draw(img)
    stalls = _stalls(*img.size)
    for k, colour in cars.items():
        _car(d, stalls[k], colour)
    for x, y, colour in people:
        _person(d, x, y, colour)
    noisy = np.asarray(img, dtype=np.float32) + rng.normal(0, 3, (img.size[1], img.size[0], 3))  # sensor noise: no two frames are equal
    return Image.fromarray(noisy.clip(0, 255).astype(np.uint8), "RGB")


def _walk_spot(w: int, h: int, rng: np.random.Generator) -> tuple[int, int, str]:
    place = str(rng.choice(["sidewalk", "lane"]))
    y = int(h * (0.36 if place == "sidewalk" else 0.74))
    return int(rng.integers(12, w - 12)), y, place


def street_pair(rng: np.random.Generator, size: tuple[int, int] = FRAME) -> tuple[Image.Image, Image.Image, list[dict]]:
    """Before and after frames of the lot and the changes between them (``kind`` and words)."""
    w, h = size
    base = _lot(w, h, rng)
    n_stalls = len(_stalls(w, h))
    taken = rng.permutation(n_stalls)[: int(rng.integers(3, 7))]
    cars = {int(k): str(rng.choice(list(CAR_COLOURS))) for k in taken}
    people = []
    for _ in range(int(rng.integers(1, 4))):
        x, y, place = _walk_spot(w, h, rng)
        people.append([x, y, str(rng.choice(list(SHIRT_COLOURS))), place])
    after_cars, after_people = dict(cars), [list(p) for p in people]
    untouched = list(range(len(people)))  # one change per person: none both moves and leaves
    n = int(rng.choice([0, 1, 1, 1, 2]))  # the release has no-change pairs too
    done: list[dict] = []
    stalls = _stalls(w, h)
    for kind in map(str, rng.permutation(list(CHANGE_SENTENCES))[:n]):
        if kind == "car_gone" and after_cars:
            k = int(rng.choice(sorted(after_cars)))
            colour = after_cars.pop(k)
            done.append({"kind": kind, "colour": colour, "row": stalls[k][4], **_side(stalls[k][0], w)})
        elif kind == "car_new" and len(after_cars) < n_stalls:
            k = int(rng.choice([s for s in range(n_stalls) if s not in after_cars]))
            after_cars[k] = colour = str(rng.choice(list(CAR_COLOURS)))
            done.append({"kind": kind, "colour": colour, "row": stalls[k][4], **_side(stalls[k][0], w)})
        elif kind == "person_new":
            x, y, place = _walk_spot(w, h, rng)
            colour = str(rng.choice(list(SHIRT_COLOURS)))
            after_people.append([x, y, colour, place])
            done.append({"kind": kind, "colour": colour, "place": place, **_side(x, w)})
        elif kind in ("person_gone", "person_moved") and untouched:
            i = untouched.pop(int(rng.integers(len(untouched))))
            x, _, colour, place = after_people[i]
            if kind == "person_gone":
                after_people[i][2] = None
            else:
                x = after_people[i][0] = int((x + w // 2) % (w - 24) + 12)
            done.append({"kind": kind, "colour": colour, "place": place, **_side(x, w)})
    before = _frame(base, cars, [(x, y, c) for x, y, c, _ in people], rng)
    after = _frame(base, after_cars, [(x, y, c) for x, y, c, _ in after_people if c is not None], rng)
    return before, after, done


def _sentences(changes: list[dict], picks: list[int]) -> list[str]:
    """One annotator's item: a sentence per change, lower case and without punctuation as released."""
    if not changes:
        return [NO_CHANGE_SENTENCES[picks[0] % len(NO_CHANGE_SENTENCES)]]
    return [CHANGE_SENTENCES[c["kind"]][k % len(CHANGE_SENTENCES[c["kind"]])].format(**c) for c, k in zip(changes, picks)]


#: the file that marks a ``.partial`` folder as the demo's own (removed before it is renamed into place)
PARTIAL_MARK = ".idc-demo-partial"


def _fresh(folder: Path) -> Path:
    """A ``.partial`` folder beside ``folder``, renamed into place once complete (a kill leaves
    nothing that looks finished). A leftover one is removed only if the demo wrote it."""
    from ..errors import IDCError

    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():
        if not (partial / PARTIAL_MARK).is_file():
            raise IDCError(f"{partial}: exists and was not written by idc-demo; move it away and run again")
        shutil.rmtree(partial)  # an earlier demo's: it holds the mark only the demo writes
    partial.mkdir(parents=True)
    (partial / PARTIAL_MARK).touch()
    return partial


def _finish(partial: Path, folder: Path) -> None:
    (partial / PARTIAL_MARK).unlink()  # the mark _fresh wrote, nothing else
    partial.rename(folder)


def write_spot_the_diff_release(folder: Path | str, seed: int = 0) -> Path:
    """A procedural release in Spot-the-Diff's layout under ``folder`` (a folder already there is kept)."""
    folder = Path(folder)
    if folder.exists():  # written whole or not at all (renamed into place), and never overwritten
        return folder
    rng = np.random.default_rng([seed, 2018])
    partial = _fresh(folder)
    data = partial / "data"
    (data / "annotations").mkdir(parents=True)
    (data / "resized_images").mkdir()
    ids = iter(int(i) for i in rng.choice(np.arange(1, 15000), sum(SPLIT_SIZES.values()), replace=False))
    for split, n in SPLIT_SIZES.items():
        items = []
        for k in range(n):
            img_id = str(next(ids))
            before, after, changes = street_pair(rng)
            before.save(data / "resized_images" / f"{img_id}.png")
            after.save(data / "resized_images" / f"{img_id}_2.png")
            ImageChops.difference(before, after).convert("L").save(data / "resized_images" / f"{img_id}_diff.jpg")
            picks = [int(p) for p in rng.integers(0, 12, max(1, len(changes)))]
            items.append({"img_id": img_id, "sentences": _sentences(changes, picks)})
            empty = split == "train" and k == 0  # the release keeps empty sentences (53 in train)
            if empty or rng.random() < 0.3:  # a second annotator's item for the same id, later in the file
                second = _sentences(changes, [p + 1 for p in picks]) + ([""] if empty else [])  # other words
                items.insert(int(rng.integers(len(items), len(items) + 2)), {"img_id": img_id, "sentences": second})
        (data / "annotations" / f"{split}.json").write_text(json.dumps(items))
    (partial / "README.md").write_text(
        "# PROCEDURAL DEMO DATA in Spot-the-Diff's layout\n\n"
        "Drawn by idc-demo (idc_toolkit/demo/examples.py): a parking lot seen from a fixed camera, with cars and "
        "people coming, going and moving, and template sentences. Not the Spot-the-Diff release "
        "(https://github.com/harsh19/spot-the-diff): use it to try `idc-build spot_the_diff`, never to report a result.\n")
    _finish(partial, folder)
    return folder


def _garden(size: tuple[int, int], bench: bool, rng: np.random.Generator) -> Image.Image:
    w, h = size
    img = Image.new("RGB", size, (150, 195, 235))
    d = ImageDraw.Draw(img)
    d.rectangle((0, int(h * 0.4), w, h), fill=(70, 140, 60))
    d.polygon([(int(w * 0.45), h), (int(w * 0.55), h), (int(w * 0.52), int(h * 0.4)), (int(w * 0.48), int(h * 0.4))],
              fill=(190, 170, 130))  # a path
    d.rectangle((int(w * 0.2), int(h * 0.25), int(w * 0.24), int(h * 0.55)), fill=(100, 70, 40))
    d.ellipse((int(w * 0.1), int(h * 0.05), int(w * 0.34), int(h * 0.35)), fill=(35, 110, 40))
    if bench:
        d.rectangle((int(w * 0.65), int(h * 0.58), int(w * 0.88), int(h * 0.63)), fill=(120, 80, 45))
        d.rectangle((int(w * 0.65), int(h * 0.5), int(w * 0.88), int(h * 0.54)), fill=(120, 80, 45))
        for x in (0.67, 0.85):
            d.rectangle((int(w * x), int(h * 0.63), int(w * x) + 3, int(h * 0.7)), fill=(60, 60, 60))
    noisy = np.asarray(img, dtype=np.float32) + rng.normal(0, 3, (h, w, 3))
    return Image.fromarray(noisy.clip(0, 255).astype(np.uint8), "RGB")


def write_my_pairs(folder: Path | str, seed: int = 0) -> Path:
    """A folder of one's own pairs: ``before/`` and ``after/`` photos of the same names and a
    ``captions.csv`` with one reference per row (a folder already there is kept)."""
    folder = Path(folder)
    if folder.exists():  # written whole or not at all, and never overwritten: it may hold your photos by now
        return folder
    rng = np.random.default_rng([seed, 49])
    partial = _fresh(folder)
    for side in ("before", "after"):
        (partial / side).mkdir()
    size = (320, 240)
    base = _lot(*size, rng)
    cars = {1: "red", 3: "white", 7: "black"}  # stall 1: the top row's second
    before = _frame(base, cars, [], rng)
    after = _frame(base, {k: c for k, c in cars.items() if k != 1}, [], rng)
    before.save(partial / "before" / "street.jpg", quality=90)
    after.save(partial / "after" / "street.jpg", quality=90)
    _garden(size, True, rng).save(partial / "before" / "garden.jpg", quality=90)
    _garden(size, False, rng).save(partial / "after" / "garden.jpg", quality=90)
    with (partial / "captions.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerows([("image", "caption"), ("street.jpg", "the red car drove off"),
                          ("street.jpg", "a parking space in the top row is empty now"),
                          ("garden.jpg", "the bench is gone"), ("garden.jpg", "someone took the wooden bench away")])
    _finish(partial, folder)
    return folder


def _coco_references(images: Iterable[str], captions: dict[str, list[str]]) -> dict:
    """A coco-caption annotation file, as RCC's ``coco_gt_format_save`` writes it."""
    dummy = dict.fromkeys(("contributor", "date_created", "description", "url", "version", "year"), "dummy")
    ids = list(images)
    return {"info": dummy, "licenses": dummy, "type": "captions", "images": [{"filename": i, "id": i} for i in ids],
            "annotations": [{"caption": c, "id": n, "image_id": i}
                            for n, (i, c) in enumerate((i, c) for i in ids for c in captions[i])]}


def write_scoring_files(out: Path | str, raw: Path | str, predictions: dict[str, str],
                        test_references: dict[str, tuple[list[str], str]], categories: Iterable[str]) -> tuple[Path, Path]:
    """The baseline's test predictions and the references in two other formats:

    * ``coco/``: ``preds.json`` (a coco results list), ``refs.json`` (the test split's references
      as a coco-caption annotation file) and ``type_map.json`` (``{category: [pair_id, ...]}``);
    * ``rcc/``: ``sc_nsc_results.json`` (RCC's results, ``000123.png`` and ``000123.png_n``) and
      ``total_change_captions_reformat.json`` (RCC's ``merge_gt_files`` of the release's
      ``change_captions.json`` and ``no_change_captions.json``: every split, as RCC's is).

    ``test_references``: pair_id -> (captions, category) of the built test split; ``categories``:
    the dataset's category names, in its order."""
    out, raw = Path(out), Path(raw)
    coco, rcc = out / "coco", out / "rcc"
    coco.mkdir(parents=True, exist_ok=True)
    rcc.mkdir(parents=True, exist_ok=True)

    def write(path: Path, data) -> None:
        path.write_text(json.dumps(data, indent=1))

    write(coco / "preds.json", [{"image_id": pid, "caption": caption} for pid, caption in predictions.items()])
    write(coco / "refs.json", _coco_references(test_references, {pid: caps for pid, (caps, _) in test_references.items()}))
    write(coco / "type_map.json", {cat: [pid for pid, (_, c) in test_references.items() if c == cat] for cat in categories})

    def rcc_id(pid: str) -> str:
        return pid[:-2] + ".png_n" if pid.endswith("_n") else pid + ".png"

    write(rcc / "sc_nsc_results.json", [{"caption": caption, "image_id": rcc_id(pid)} for pid, caption in predictions.items()])
    captions: dict[str, list[str]] = {}
    for name, suffix in (("change_captions.json", ""), ("no_change_captions.json", "_n")):
        for key, caps in json.loads((raw / name).read_text()).items():
            captions[key.split("_")[-1] + suffix] = caps  # RCC's id: CLEVR_default_000123.png -> 000123.png
    write(rcc / "total_change_captions_reformat.json", _coco_references(captions, captions))
    return coco, rcc

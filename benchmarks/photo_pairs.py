"""Real photographs that ship inside pip packages, and change pairs made from them.

Photos: scikit-image's data folder (astronaut, coffee, chelsea, rocket, immunohistochemistry),
scikit-learn's sample images (china, flower) and matplotlib's sample data (Grace Hopper).
A pair is a photo and the same photo with a patch of another photo pasted in (an object
added), seeded, so every run of a benchmark sees the same pairs.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
from PIL import Image


def photographs() -> list[Image.Image]:
    import matplotlib.cbook as cbook
    import skimage.data as skd
    from sklearn.datasets import load_sample_images

    photos = [Image.fromarray(getattr(skd, name)()) for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")]
    photos += [Image.fromarray(a) for a in load_sample_images().images]
    with cbook.get_sample_data("grace_hopper.jpg") as fh:
        photos.append(Image.open(fh).convert("RGB"))
    return photos


def pasted_pairs(n: int, size: int = 224, seed: int = 0) -> list[tuple[Image.Image, Image.Image]]:
    rng = np.random.default_rng(seed)
    photos = [p.resize((size, size), Image.BICUBIC) for p in photographs()]
    pairs = []
    for k in range(n):
        before = photos[k % len(photos)]
        donor = np.asarray(photos[(k + 1 + int(rng.integers(0, len(photos) - 1))) % len(photos)])
        h, w = (int(rng.integers(size // 8, size // 3)) for _ in range(2))
        y, x = int(rng.integers(0, size - h)), int(rng.integers(0, size - w))
        sy, sx = int(rng.integers(0, size - h)), int(rng.integers(0, size - w))
        after = np.asarray(before).copy()
        after[y:y + h, x:x + w] = donor[sy:sy + h, sx:sx + w]
        pairs.append((before, Image.fromarray(after)))
    return pairs


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def write_pairs_dataset(folder: Path, pairs: list[tuple[Image.Image, Image.Image]], split: str = "train") -> Path:
    """A dataset folder in the toolkit's schema holding ``pairs``: one parquet file with
    100-row row groups, as ``idc-build`` and ``push_to_hub`` write image datasets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from idc_toolkit.schema import pair_features

    features = pair_features()
    rows = [{"pair_id": str(k), "before": {"bytes": _png(b), "path": None}, "after": {"bytes": _png(a), "path": None},
             "captions": ["something was added"]} for k, (b, a) in enumerate(pairs)]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
    pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet", row_group_size=100)
    return folder


# --------------------------------------------------------------------------------------------
# Realistic change pairs with exact ground truth (benchmarks/mask_quality.py, tests)
# --------------------------------------------------------------------------------------------

CHANGES = ("add", "drop", "colour", "move", "thin", "low_contrast")
DISTRACTORS = ("none", "brightness", "contrast", "gamma", "jpeg", "noise", "shift", "subpixel", "combined")


@dataclass
class PhotoPair:
    """A pair rendered from a real photograph; ``truth`` is every after-image pixel the edit
    changed by more than 10 levels (the after image rendered with and without the edit, same
    camera and the same tone change, before sensor noise and JPEG): the change mask a perfect
    method returns. A change that a brightness gain clipped to white is not in the after image,
    so it is not in the truth."""

    before: Image.Image
    after: Image.Image
    truth: np.ndarray
    change: str  #: one of CHANGES, or "none" for a distractor-only pair
    distractor: str  #: one of DISTRACTORS
    photo: int
    shift: tuple[float, float] = (0.0, 0.0)  #: true camera shift (dy, dx): after[y, x] = before[y - dy, x - dx]


def _blob(h: int, w: int, rng: np.random.Generator) -> np.ndarray:
    """A smooth star-convex shape filling most of an h x w box (an object's silhouette)."""
    yy, xx = np.mgrid[0:h, 0:w]
    y, x = (yy + 0.5) / h * 2 - 1, (xx + 0.5) / w * 2 - 1
    theta, rho = np.arctan2(y, x), np.hypot(y, x)
    r = 0.85 + sum(rng.uniform(-0.08, 0.08) * np.sin(k * theta + rng.uniform(0, 2 * np.pi)) for k in (2, 3, 5))
    return rho < r


def _legs(h: int, w: int, rng: np.random.Generator, leg: int) -> np.ndarray:
    """A body on thin legs with gaps between them (the thin-object case: a horse, a chair)."""
    shape = np.zeros((h, w), dtype=bool)
    body = h // 3
    shape[:body] = _blob(body, w, rng)
    n = int(rng.integers(3, 5))
    for x in np.linspace(leg, w - 2 * leg, n).astype(int):
        shape[body // 2:, x:x + leg] = True
    return shape


def _place(canvas: np.ndarray, patch: np.ndarray, shape: np.ndarray, y: int, x: int) -> None:
    h, w = shape.shape
    region = canvas[y:y + h, x:x + w]
    region[shape] = patch[shape]


def _distortion(kind: str, rng: np.random.Generator):
    """The after image's photometric distractor (camera shifts are made by the crop box), as
    two steps: the camera's tone change (brightness, contrast, gamma, then 8-bit clipping) and
    the capture noise (sensor noise, JPEG). Returns ``(tone, capture)``, functions of an image;
    the ground truth compares two renders through the same ``tone`` (a change the camera
    clipped away is not in the after image for any method to find)."""
    gain = float(rng.choice([rng.uniform(0.7, 0.85), rng.uniform(1.15, 1.3)])) if kind in ("brightness", "combined") else 1.0
    contrast = float(rng.choice([0.75, 1.25])) if kind == "contrast" else 1.0
    gamma = float(rng.choice([0.65, 0.75, 1.35, 1.5])) if kind in ("gamma", "combined") else 1.0

    def tone(image: Image.Image) -> np.ndarray:
        a = np.asarray(image, dtype=np.float32) * gain
        a = (a - 128) * contrast + 128 if contrast != 1.0 else a
        if gamma != 1.0:
            a = 255 * (np.clip(a, 0, 255) / 255) ** gamma
        return a

    def capture(a: np.ndarray) -> Image.Image:
        if kind in ("noise", "combined"):
            a = a + rng.normal(0, 3.0, a.shape)
        out = Image.fromarray(np.clip(np.round(a), 0, 255).astype(np.uint8))
        if kind in ("jpeg", "combined"):
            buf = io.BytesIO()
            out.save(buf, "JPEG", quality=75)
            out = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
        return out

    return tone, capture


def _camera_shift(kind: str, rng: np.random.Generator) -> tuple[float, float]:
    if kind == "shift":
        while True:
            s = (int(rng.integers(-3, 4)), int(rng.integers(-3, 4)))
            if s != (0, 0):
                return float(s[0]), float(s[1])
    if kind in ("subpixel", "combined"):
        return float(rng.choice([-0.5, 0.5, 0.3])), float(rng.choice([-0.5, 0.5, -0.3]))
    return 0.0, 0.0


def _photographed(before_src: np.ndarray, after_src: np.ndarray, crop: tuple[float, float, float, float], k: float,
                  out_size: tuple[int, int], distractor: str, rng: np.random.Generator):
    """Both images rendered from crops of the edited sources at ``out_size`` (the after crop
    moved by the distractor's camera shift), the ground truth (every after pixel the edit
    changed by more than 10 levels, same camera and tone change) and the distractor on the after image.
    Returns (before, after, truth, content shift (dy, dx))."""
    x0, y0, w, h = crop
    sy, sx = _camera_shift(distractor, rng)
    after_box = (x0 + sx * k, y0 + sy * k, x0 + w + sx * k, y0 + h + sy * k)

    def render(src, box):
        return Image.fromarray(src).resize(out_size, Image.LANCZOS, box=box)

    before = render(before_src, (x0, y0, x0 + w, y0 + h))
    tone, capture = _distortion(distractor, rng)
    clean_after = tone(render(after_src, after_box))
    unchanged_after = tone(render(before_src, after_box))  # the same camera and exposure, no edit

    def level(a):
        return np.clip(np.round(a), 0, 255)

    truth = np.abs(level(clean_after) - level(unchanged_after)).max(axis=2) > 10
    # the after crop moved by (sy, sx) output pixels, so its content moved by (-sy, -sx)
    return before, capture(clean_after), truth, (-sy, -sx)


def photo_pair(photo: int, change: str, distractor: str, size: int = 224, seed: int = 0,
               photos: Optional[list[np.ndarray]] = None) -> PhotoPair:
    """One seeded pair: ``change`` made at the photo's own resolution, both images rendered
    from crops of it (a camera shift is the after crop moved, so sub-pixel shifts are exact),
    then ``distractor`` applied to the after image."""
    srcs = photos if photos is not None else [np.asarray(p) for p in photographs()]
    rng = np.random.default_rng([seed, photo, CHANGES.index(change) if change in CHANGES else 99,
                                 DISTRACTORS.index(distractor), size])
    src = srcs[photo % len(srcs)]
    donor = srcs[(photo + 1 + int(rng.integers(0, len(srcs) - 1))) % len(srcs)]
    H, W = src.shape[:2]
    k = (min(H, W) - 16) / size  # source pixels per output pixel; 8 px of margin for shifts
    L = size * k
    x0, y0 = (W - L) / 2, (H - L) / 2
    before_src, after_src = src.copy(), src.copy()

    def spot(frac: float, shape_fn=None):
        side = int(L * np.sqrt(frac))
        h, w = side, int(side * rng.uniform(0.8, 1.2))
        shape = (shape_fn or _blob)(h, w, rng)
        y = int(y0 + rng.integers(0, int(L - h)))
        x = int(x0 + rng.integers(0, int(L - w)))
        return shape, y, x

    def donor_patch(shape):
        h, w = shape.shape
        dy, dx = int(rng.integers(0, donor.shape[0] - h + 1)), int(rng.integers(0, donor.shape[1] - w + 1))
        return donor[dy:dy + h, dx:dx + w]

    frac = float(rng.choice([rng.uniform(0.02, 0.06), rng.uniform(0.12, 0.33)]))
    if change == "add":
        shape, y, x = spot(frac)
        _place(after_src, donor_patch(shape), shape, y, x)
    elif change == "drop":
        shape, y, x = spot(frac)
        _place(before_src, donor_patch(shape), shape, y, x)
    elif change == "colour":
        shape, y, x = spot(frac)
        region = src[y:y + shape.shape[0], x:x + shape.shape[1]].astype(np.float32)
        target = 255 - region[shape].mean(axis=0)
        _place(after_src, np.clip(0.4 * region + 0.6 * target, 0, 255).astype(np.uint8), shape, y, x)
    elif change == "move":
        shape, y, x = spot(min(frac, 0.1))
        patch = donor_patch(shape)
        _place(before_src, patch, shape, y, x)
        y2 = int(np.clip(y + rng.choice([-1, 1]) * shape.shape[0] * 0.8, y0, y0 + L - shape.shape[0]))
        _place(after_src, patch, shape, y2, x)
    elif change == "thin":
        shape, y, x = spot(float(rng.uniform(0.04, 0.1)), lambda h, w, r: _legs(h, w, r, max(2, int(2.5 * k))))
        _place(after_src, donor_patch(shape), shape, y, x)
    elif change == "low_contrast":
        shape, y, x = spot(float(rng.uniform(0.02, 0.05)))
        region = src[y:y + shape.shape[0], x:x + shape.shape[1]].astype(np.float32)
        step = float(rng.uniform(20, 28)) * (1 if region.mean() < 128 else -1)
        _place(after_src, np.clip(region + step, 0, 255).astype(np.uint8), shape, y, x)
    elif change != "none":
        raise ValueError(change)

    before, after, truth, shift = _photographed(before_src, after_src, (x0, y0, L, L), k, (size, size), distractor, rng)
    return PhotoPair(before, after, truth, change, distractor, photo, shift)


def realistic_pairs(size: int = 224, per_cell: int = 4, seed: int = 0) -> list[PhotoPair]:
    """Every change kind under every distractor (``per_cell`` photos each), plus every
    distractor alone on every photo: the pairs of ``benchmarks/mask_quality.py``."""
    srcs = [np.asarray(p) for p in photographs()]
    pairs = []
    for change in CHANGES:
        for distractor in DISTRACTORS:
            for j in range(per_cell):
                photo = (j + CHANGES.index(change) + DISTRACTORS.index(distractor)) % len(srcs)
                pairs.append(photo_pair(photo, change, distractor, size, seed, srcs))
    for distractor in DISTRACTORS[1:]:
        for photo in range(len(srcs)):
            pairs.append(photo_pair(photo, "none", distractor, size, seed, srcs))
    return pairs


# --------------------------------------------------------------------------------------------
# The wide set: every photograph, non-square sizes, thin and tiny shapes (mask_quality.py)
# --------------------------------------------------------------------------------------------

SKIMAGE_PHOTOS = ("astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png", "coffee.png",
                  "coins.png", "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png", "moon.png",
                  "motorcycle_left.png", "page.png", "retina.jpg", "rocket.jpg", "text.png")
MATPLOTLIB_PHOTOS = ("grace_hopper.jpg", "Minduka_Present_Blue_Pack.png")
WIDE_CHANGES = ("add", "drop", "move", "colour", "textured_recolour", "low_contrast")
SHAPES = ("blob", "legs", "pole", "text")
#: size classes by the share of the image the change covers (its ground truth)
SIZE_CLASSES = (("< 1%", 0.0, 0.01), ("1-4%", 0.01, 0.04), ("4-12%", 0.04, 0.12), ("> 12%", 0.12, 1.01))
#: requested shares, one per class (the truth decides the class a pair is reported under)
SHARE_RANGES = ((0.002, 0.009), (0.012, 0.035), (0.045, 0.11), (0.13, 0.28))
IMAGE_SIZES = ((224, 224), (448, 448), (480, 320), (320, 480))


#: the held-out photographs: none of them was ever looked at while the pipeline's parameters were
#: chosen (those were chosen on :func:`all_photographs`). They ship inside package archives on
#: PyPI, so the set is fetched with pip into a cache and checked byte for byte:
#: (pip requirement, archive kind, member, sha256 of the member)
HELDOUT_PHOTOS = tuple(
    ("pillow==13.0.0", "sdist", f"pillow-13.0.0/Tests/images/{name}", digest) for name, digest in (
        ("exif-72dpi-int.jpg", "9a77846a19a58f29bae67233c99f29fd2361536044176077c1ea4a2507c79b68"),  # mountain
        ("exif_gps_typeerror.jpg", "2ed5855e452e9798fc21c02e81213c84d0b4d52f2870212b179cdd1371a101a3"),  # aeroplane
        ("frozenpond.mpo", "efaa9344f24bbb1d51707f8eb2552d7de42e5e03588b4a284c5c73305da9083b"),  # trees in snow
        ("fujifilm.mpo", "9a762601aacf49a2e5a999521447279ae2a7fd91d1872301f49a1ff8b1c0b544"),  # rock face
        ("icc_profile_big.jpg", "9329fadea9654d127bdf1f5c31d0583a5797282ffc45d668662da4df6ee4c3dd"),  # beach
        ("junk_jpeg_header.jpg", "fcb61dacabfdc97c4f714492401c05b94f181f48fd272fc18b6e457fc71a6120"),  # tall grass
        ("sugarshack.mpo", "e21649efe1bb04e342203fbb73fb8381609e3577949d4a8868cfeb90acfa1579"),  # cabin in snow
        ("xmp_test.jpg", "b024c2d84839f63249b220e42480a2150d9540a7daf464cbd8f459ea575ff0e9"),  # coins on stone
        ("flower.jpg", "8a9d04b92d0de5836c59ede8ae421235488e4031e893e07b1fe7e4b78f6a9901"),  # frangipani
        ("bc5_unorm.png", "44727aa97340ca6b44b1b0686e52d21c8cee4803aa7f148509c308ec6d0dcd54"),  # gerbera
    )) + (
    ("scipy==1.9.3", "wheel", "scipy/misc/face.dat", "9d8b0b4d081313e2b485748c770472e5a95ed1738146883d84c7030493e82886"),
    ("scipy==1.9.3", "wheel", "scipy/misc/ascent.dat", "e8a84939484463ab8051aedc5b40aa262ab33a91d6458a6cd13c6a1cad5a023d"),
    ("PyWavelets==1.9.0", "wheel", "pywt/data/aero.npz", "df862635798bac94226b8928f224da8cef8b0d00492c1fdf48fac6dfaf97a94b"),
)
#: a held-out photograph's long side is brought down to this first (fujifilm.mpo is 3648 px wide)
HELDOUT_LONG_SIDE = 1024


def _decoded(member: str, raw: bytes) -> np.ndarray:
    import bz2
    import pickle

    if member.endswith("face.dat"):  # scipy.misc.face: bz2-compressed raw 768x1024 RGB
        return np.frombuffer(bz2.decompress(raw), dtype=np.uint8).reshape(768, 1024, 3)
    if member.endswith("ascent.dat"):  # scipy.misc.ascent: a pickled 512x512 grey array
        return np.stack([np.asarray(pickle.loads(raw), dtype=np.uint8)] * 3, axis=-1)
    if member.endswith(".npz"):
        with np.load(io.BytesIO(raw)) as z:
            grey = z[z.files[0]]
        return np.stack([np.clip(grey, 0, 255).astype(np.uint8)] * 3, axis=-1)
    image = Image.open(io.BytesIO(raw)).convert("RGB")
    if max(image.size) > HELDOUT_LONG_SIDE:
        image.thumbnail((HELDOUT_LONG_SIDE, HELDOUT_LONG_SIDE), Image.LANCZOS)
    return np.asarray(image)


def heldout_photographs(cache: Optional[Path] = None) -> list[tuple[str, np.ndarray]]:
    """:data:`HELDOUT_PHOTOS` (name, RGB array): each archive fetched once with ``pip download``
    into ``cache`` (default ``~/.cache/idc-toolkit/heldout-photos``), each photo checked by sha256."""
    import hashlib
    import subprocess
    import sys
    import tarfile
    import zipfile

    cache = Path(cache or Path.home() / ".cache" / "idc-toolkit" / "heldout-photos")
    out = []
    for requirement, kind, member, digest in HELDOUT_PHOTOS:
        name = requirement.split("==")[0].lower().replace("-", "_")
        archives = sorted(cache.glob(f"{name}-*")) if cache.exists() else []
        if not archives:
            binary = ["--no-binary=:all:"] if kind == "sdist" else ["--only-binary=:all:"]
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *binary, requirement,
                            "-d", str(cache)], check=True, capture_output=True)
            archives = sorted(cache.glob(f"{name}-*"))
        archive = archives[0]
        if kind == "sdist":
            with tarfile.open(archive) as tar:
                raw = tar.extractfile(member).read()
        else:
            with zipfile.ZipFile(archive) as zf:
                raw = zf.read(member)
        if hashlib.sha256(raw).hexdigest() != digest:
            raise ValueError(f"{archive.name}: {member} is not the held-out photograph (sha256 differs)")
        out.append((member.rsplit("/", 1)[-1], _decoded(member, raw)))
    return out


def all_photographs() -> list[tuple[str, np.ndarray]]:
    """Every real photograph the installed packages ship (name, RGB array): scikit-image's
    data folder (photographs only: no drawings, logos or synthetic test patterns; grey ones as
    RGB), scikit-learn's two sample images and matplotlib's two sample photographs."""
    import os

    import matplotlib
    import skimage
    from sklearn.datasets import load_sample_images

    out = []
    folder = os.path.join(os.path.dirname(skimage.__file__), "data")
    for name in SKIMAGE_PHOTOS:
        out.append((name, np.asarray(Image.open(os.path.join(folder, name)).convert("RGB"))))
    for name, image in zip(("china.jpg", "flower.jpg"), load_sample_images().images):
        out.append((name, np.asarray(image)))
    folder = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data")
    for name in MATPLOTLIB_PHOTOS:
        out.append((name, np.asarray(Image.open(os.path.join(folder, name)).convert("RGB"))))
    return out


def _pole(h: int, w: int, rng: np.random.Generator, width: float) -> np.ndarray:
    """A straight thin bar (a pole, a cable, a table leg) across an h x w box, vertical,
    horizontal or diagonal, ``width`` pixels thick."""
    yy, xx = np.mgrid[0:h, 0:w] + 0.5
    kind = int(rng.integers(0, 3))
    if kind == 0:
        return np.abs(xx - w / 2) < width / 2
    if kind == 1:
        return np.abs(yy - h / 2) < width / 2
    # the box's diagonal: distance to the line through (0, 0) and (w, h)
    return np.abs(yy * w - xx * h) / np.hypot(w, h) < width / 2


def _text(h: int, w: int, rng: np.random.Generator) -> np.ndarray:
    """Printed letters filling an h x w box (strokes a few pixels wide, with gaps)."""
    from PIL import ImageDraw, ImageFont

    word = "".join(rng.choice(list("ABCDEFHKMNRSTUWXYZ0123456789"), size=int(rng.integers(3, 6))))
    font = ImageFont.load_default(size=max(8, int(h * 0.9)))
    left, top, right, bottom = font.getbbox(word)
    canvas = Image.new("L", (right - left + 2, bottom - top + 2), 0)
    ImageDraw.Draw(canvas).text((1 - left, 1 - top), word, fill=255, font=font)
    return np.asarray(canvas.resize((w, h), Image.LANCZOS)) > 127


@dataclass
class WidePair(PhotoPair):
    shape: str = "blob"
    size_class: str = ""
    image_size: tuple[int, int] = (224, 224)
    photo_name: str = ""  #: the photograph's file name (``all_photographs``)


def shaped_pair(photo: tuple[str, np.ndarray], donor: np.ndarray, change: str, shape_kind: str, share: float,
                distractor: str, out_size: tuple[int, int], rng: np.random.Generator) -> WidePair:
    """One pair at ``out_size`` (w, h): ``change`` made on a ``shape_kind`` region covering
    about ``share`` of the image, at the photo's own resolution; both images rendered from crops
    of it (a camera shift is the after crop moved), then ``distractor`` on the after image.
    ``textured_recolour`` recolours the photo's own texture in place, under a brightness change."""
    src = photo[1]
    H, W = src.shape[:2]
    ow, oh = out_size
    k = min(H / (oh + 8), W / (ow + 8))  # source pixels per output pixel; 4 output px of margin for shifts
    Lw, Lh = ow * k, oh * k
    x0, y0 = (W - Lw) / 2, (H - Lh) / 2
    before_src, after_src = src.copy(), src.copy()
    area = share * Lw * Lh
    thin = max(2.0, 2.5 * k)  # 2.5 output pixels, at least 2 source pixels
    if shape_kind == "blob":
        side = np.sqrt(area)
        h, w = max(3, int(side)), max(3, int(side * rng.uniform(0.8, 1.25)))
        shape = _blob(h, w, rng)
    elif shape_kind == "legs":
        side = np.sqrt(area * 2)  # body and legs cover about half their box
        h, w = max(8, int(side)), max(8, int(side * rng.uniform(0.8, 1.25)))
        shape = _legs(h, w, rng, max(2, int(thin)))
    elif shape_kind == "pole":
        length = min(area / thin, 0.9 * min(Lw, Lh))
        h, w = int(length), int(length * rng.uniform(0.3, 1.0))
        shape = _pole(max(4, h), max(4, w), rng, thin) if rng.random() < 0.5 else _pole(max(4, h), max(4, int(thin) + 2), rng, thin)
    elif shape_kind == "text":
        side = np.sqrt(area * 3)  # letters cover about a third of their box
        h = max(8, int(side / 2))
        w = max(12, int(min(side * 2, 0.9 * Lw)))
        shape = _text(h, w, rng)
    else:
        raise ValueError(shape_kind)
    h, w = shape.shape
    h, w = min(h, int(Lh) - 2), min(w, int(Lw) - 2)
    shape = shape[:h, :w]
    y = int(y0 + rng.integers(0, max(1, int(Lh - h))))
    x = int(x0 + rng.integers(0, max(1, int(Lw - w))))

    def donor_patch():
        if donor.shape[0] < h or donor.shape[1] < w:  # a donor smaller than the shape: stretched
            return np.asarray(Image.fromarray(donor).resize((w, h), Image.BICUBIC))
        dy, dx = int(rng.integers(0, donor.shape[0] - h + 1)), int(rng.integers(0, donor.shape[1] - w + 1))
        return donor[dy:dy + h, dx:dx + w]

    region = src[y:y + h, x:x + w].astype(np.float32)
    if change == "add":
        _place(after_src, donor_patch(), shape, y, x)
    elif change == "drop":
        _place(before_src, donor_patch(), shape, y, x)
    elif change == "move":
        patch = donor_patch()
        _place(before_src, patch, shape, y, x)
        y2 = int(np.clip(y + rng.choice([-1, 1]) * max(h * 0.8, 4 * k), y0, y0 + Lh - h - 1))
        x2 = int(np.clip(x + rng.choice([-1, 0, 1]) * w * 0.5, x0, x0 + Lw - w - 1))
        _place(after_src, patch, shape, y2, x2)
    elif change == "colour":
        target = 255 - region[shape].mean(axis=0)
        _place(after_src, np.clip(0.4 * region + 0.6 * target, 0, 255).astype(np.uint8), shape, y, x)
    elif change == "textured_recolour":  # the texture kept, its colour rotated (RGB -> GBR)
        _place(after_src, np.clip(region[..., [1, 2, 0]], 0, 255).astype(np.uint8), shape, y, x)
        distractor = "brightness"
    elif change == "low_contrast":
        step = float(rng.uniform(20, 28)) * (1 if region.mean() < 128 else -1)
        _place(after_src, np.clip(region + step, 0, 255).astype(np.uint8), shape, y, x)
    elif change != "none":
        raise ValueError(change)

    before, after, truth, shift = _photographed(before_src, after_src, (x0, y0, Lw, Lh), k, out_size, distractor, rng)
    share_true = float(truth.mean())
    size_class = next(name for name, lo, hi in SIZE_CLASSES if lo <= share_true < hi)
    return WidePair(before, after, truth, change, distractor, 0, shift, shape=shape_kind, size_class=size_class,
                    image_size=out_size, photo_name=photo[0])


def cell_pair(photos: list[tuple[str, np.ndarray]], cell: int, j: int, change: str, shape: str,
              share_range: tuple[float, float], out_size: tuple[int, int], seed: int = 0,
              photos_per_cell: int = 2) -> WidePair:
    """Pair ``j`` of :func:`wide_pairs`' cell number ``cell`` (``photos``: ``all_photographs()``),
    drawn from its own seed: the photograph round robin, then a seeded donor, distractor and
    share of the image; a test can rebuild any one of the benchmark's pairs with it."""
    rng = np.random.default_rng([seed, cell, j])
    photo = photos[(cell * photos_per_cell + j) % len(photos)]
    donor = photos[(cell * photos_per_cell + j + 1 + int(rng.integers(0, len(photos) - 1))) % len(photos)][1]
    distractor = DISTRACTORS[int(rng.integers(0, len(DISTRACTORS)))]
    return shaped_pair(photo, donor, change, shape, float(rng.uniform(*share_range)), distractor, out_size, rng)


def wide_pairs(seed: int = 0, photos_per_cell: int = 2, sizes=IMAGE_SIZES,
               photos: Optional[list[tuple[str, np.ndarray]]] = None) -> list[WidePair]:
    """Every change kind x shape x size class x image size, ``photos_per_cell`` photographs
    each (round robin over ``photos``, default :func:`all_photographs`, donors among them, each
    with a seeded distractor), plus every distractor alone on every photograph at every image
    size: the pairs of ``benchmarks/mask_quality.py``. A change whose rendered truth vanished (a
    share too small for the photo) is left out."""
    photos = photos if photos is not None else all_photographs()
    pairs: list[WidePair] = []
    cell = 0
    for out_size in sizes:
        for change in WIDE_CHANGES:
            for shape in SHAPES:
                for lo, hi in SHARE_RANGES:
                    for j in range(photos_per_cell):
                        pair = cell_pair(photos, cell, j, change, shape, (lo, hi), out_size, seed, photos_per_cell)
                        if pair.truth.any():
                            pairs.append(pair)
                    cell += 1
        for p in range(len(photos)):
            for distractor in DISTRACTORS[1:]:
                pairs.append(distractor_pair(photos, p, distractor, out_size, seed))
    return pairs


def distractor_pair(photos: list[tuple[str, np.ndarray]], p: int, distractor: str, out_size: tuple[int, int],
                    seed: int = 0) -> WidePair:
    """:func:`wide_pairs`' pair of photograph ``p`` (``photos``: ``all_photographs()``) under
    ``distractor`` alone, no change, drawn from its own seed: a test can rebuild any one."""
    rng = np.random.default_rng([seed, 10_000 + p, DISTRACTORS.index(distractor), out_size[0], out_size[1]])
    return shaped_pair(photos[p], photos[p][1], "none", "blob", 0.01, distractor, out_size, rng)

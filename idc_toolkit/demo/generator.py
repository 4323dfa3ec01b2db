"""A small procedural IDC dataset, written as a CLEVR-Change raw release.

Scenes are flat shapes (circle, square, triangle) in eight colours and two "materials"
(matte = flat fill, metal = fill with a specular highlight and a dark rim) on a soft
gradient background. Every scene id gives, as CLEVR-Change does:

* a semantic change (``sc_images``): one of color, material, add, drop, move, with several
  template captions, and its exact ground-truth change mask;
* a distractor-only version (``nsc_images``): a global brightness shift, a small camera
  shift of a few pixels, or both, with no-change captions and an empty mask.

The output goes through the real ``clevr_change`` builder, so the demo and the tests
exercise the same code path as the real release. Ground-truth masks are written beside the
release in ``masks/`` (``NNNNNN.png`` for the change pair, ``NNNNNN_n.png`` for the
distractor pair), which the raw format does not have but mask-quality checks need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageEnhance

from ..schema import CLEVR_CATEGORIES

COLORS = {
    "red": (173, 35, 35),
    "blue": (42, 75, 215),
    "green": (29, 105, 20),
    "yellow": (255, 238, 51),
    "purple": (129, 38, 192),
    "cyan": (41, 208, 208),
    "brown": (129, 74, 25),
    "gray": (87, 87, 87),
}
SHAPES = ("circle", "square", "triangle")
SHAPE_WORDS = {"circle": "sphere", "square": "cube", "triangle": "cone"}
MATERIALS = ("rubber", "metal")
SIZES = {"small": 9, "large": 14}
CHANGE_TYPES = CLEVR_CATEGORIES[:-1]  # every category but "distractor"

CHANGE_TEMPLATES = {
    "color": [
        "the {size} {old_color} {shape} changed to {new_color}",
        "the {size} {old_color} {material} {shape} became {new_color}",
        "the {old_color} {shape} turned {new_color}",
        "someone painted the {size} {old_color} {shape} {new_color}",
    ],
    "material": [
        "the {size} {color} {old_material} {shape} is now {new_material}",
        "the {color} {shape} changed from {old_material} to {new_material}",
        "the {size} {color} {shape} turned {new_material}",
    ],
    "add": [
        "a {size} {color} {material} {shape} has been added",
        "there is a new {color} {shape}",
        "the {size} {color} {shape} has been newly placed",
        "someone added a {color} {material} {shape}",
    ],
    "drop": [
        "the {size} {color} {material} {shape} is missing",
        "the {color} {shape} has disappeared",
        "the {size} {color} {shape} is gone",
        "someone removed the {color} {material} {shape}",
    ],
    "move": [
        "the {size} {color} {shape} moved",
        "the {size} {color} {material} {shape} is in a different location",
        "the {color} {shape} changed its location",
        "someone moved the {color} {shape}",
    ],
}
NO_CHANGE_TEMPLATES = [
    "there is no change",
    "nothing has changed",
    "the two scenes seem identical",
    "the scene is the same as before",
    "no change was made",
]


@dataclass
class SceneObject:
    shape: str
    color: str
    material: str
    size: str
    x: int
    y: int

    def words(self) -> dict[str, str]:
        return {"shape": SHAPE_WORDS[self.shape], "color": self.color, "material": self.material, "size": self.size}


def _background(w: int, h: int, rng: np.random.Generator) -> Image.Image:
    top = rng.integers(150, 200)
    bottom = top - rng.integers(20, 50)
    ramp = np.linspace(top, bottom, h, dtype=np.float32)[:, None, None]
    arr = np.repeat(np.repeat(ramp, w, axis=1), 3, axis=2)
    return Image.fromarray(arr.clip(0, 255).astype(np.uint8), "RGB")


def _draw(img: Image.Image, obj: SceneObject, mask: Image.Image | None = None) -> None:
    r = SIZES[obj.size]
    box = (obj.x - r, obj.y - r, obj.x + r, obj.y + r)
    fill = COLORS[obj.color]
    targets = [(ImageDraw.Draw(img), fill)]
    if mask is not None:
        targets.append((ImageDraw.Draw(mask), 255))
    for draw, colour in targets:
        if obj.shape == "circle":
            draw.ellipse(box, fill=colour)
        elif obj.shape == "square":
            draw.rectangle(box, fill=colour)
        else:
            draw.polygon([(obj.x, obj.y - r), (obj.x - r, obj.y + r), (obj.x + r, obj.y + r)], fill=colour)
    if obj.material == "metal":  # dark rim + specular highlight, inside the shape
        d = ImageDraw.Draw(img)
        dark = tuple(int(c * 0.55) for c in fill)
        hr = max(2, r // 3)
        if obj.shape == "circle":
            d.ellipse(box, outline=dark, width=2)
        elif obj.shape == "square":
            d.rectangle(box, outline=dark, width=2)
        else:
            d.polygon([(obj.x, obj.y - r), (obj.x - r, obj.y + r), (obj.x + r, obj.y + r)], outline=dark, width=2)
        cy = obj.y + (r // 3 if obj.shape == "triangle" else -r // 4)
        d.ellipse((obj.x - hr, cy - hr, obj.x + hr, cy + hr), fill=(245, 245, 245))


def _render(objs: list[SceneObject], bg: Image.Image) -> Image.Image:
    img = bg.copy()
    for o in objs:
        _draw(img, o)
    return img


def _object_mask(obj: SceneObject, w: int, h: int) -> Image.Image:
    m = Image.new("L", (w, h), 0)
    _draw(Image.new("RGB", (w, h)), obj, m)
    return m


def _free_spot(objs: list[SceneObject], size: str, w: int, h: int, rng: np.random.Generator) -> tuple[int, int] | None:
    r = SIZES[size]
    for _ in range(200):
        x, y = int(rng.integers(r + 6, w - r - 6)), int(rng.integers(r + 6, h - r - 6))
        if all((x - o.x) ** 2 + (y - o.y) ** 2 > (r + SIZES[o.size] + 6) ** 2 for o in objs):
            return x, y
    return None


def _random_obj(objs: list[SceneObject], w: int, h: int, rng: np.random.Generator) -> SceneObject | None:
    size = str(rng.choice(list(SIZES)))
    spot = _free_spot(objs, size, w, h, rng)
    if spot is None:
        return None
    return SceneObject(str(rng.choice(SHAPES)), str(rng.choice(list(COLORS))), str(rng.choice(MATERIALS)), size, *spot)


def _distractor(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    kind = rng.integers(0, 3)
    out = img
    if kind in (0, 2):  # global illumination change
        out = ImageEnhance.Brightness(out).enhance(float(rng.choice([rng.uniform(0.7, 0.85), rng.uniform(1.15, 1.3)])))
    if kind in (1, 2):  # small camera shift
        dx, dy = int(rng.integers(-3, 4)), int(rng.integers(-3, 4))
        if dx == 0 and dy == 0:
            dx = 2
        out = ImageChops.offset(out, dx, dy)
    return out


def make_scene(sid: int, change_type: str, w: int, h: int, rng: np.random.Generator):
    """Return before, after (semantic), after (distractor), change captions, GT mask."""
    objs: list[SceneObject] = []
    for _ in range(int(rng.integers(3, 6)) + (1 if change_type == "add" else 0)):
        o = _random_obj(objs, w, h, rng)
        if o is not None:
            objs.append(o)
    if len(objs) < 2:
        raise ValueError(f"canvas {w}x{h} is too small for the demo scenes")
    added = objs.pop() if change_type == "add" else None  # placed up front: a free spot is guaranteed
    bg = _background(w, h, rng)
    before = _render(objs, bg)
    after_objs = [SceneObject(**vars(o)) for o in objs]
    target = after_objs[int(rng.integers(0, len(after_objs)))]
    words = target.words()
    mask = Image.new("L", (w, h), 0)
    if change_type == "color":
        old = target.color
        target.color = str(rng.choice([c for c in COLORS if c != old]))
        fmt = {**words, "old_color": old, "new_color": target.color}
        mask = _object_mask(target, w, h)
    elif change_type == "material":
        old = target.material
        target.material = "metal" if old == "rubber" else "rubber"
        fmt = {**words, "old_material": old, "new_material": target.material}
        mask = _object_mask(target, w, h)
    elif change_type == "add":
        assert added is not None
        new = added
        after_objs.append(new)
        fmt = new.words()
        mask = _object_mask(new, w, h)
    elif change_type == "drop":
        after_objs.remove(target)
        fmt = words
        mask = _object_mask(target, w, h)
    elif change_type == "move":
        others = [o for o in after_objs if o is not target]
        spot = _free_spot(others + [SceneObject(**vars(target))], target.size, w, h, rng)
        old_mask = _object_mask(target, w, h)
        if spot is None:  # nowhere free: swap to the mirrored position
            spot = (w - target.x, target.y)
        target.x, target.y = spot
        fmt = words
        mask = ImageChops.lighter(old_mask, _object_mask(target, w, h))
    else:
        raise ValueError(change_type)
    after = _render(after_objs, bg)
    templates = CHANGE_TEMPLATES[change_type]
    captions = [t.format(**fmt) for t in templates]
    nsc = _distractor(before, rng)
    return before, after, nsc, captions, mask


def generate_demo_release(out_dir: Path | str, n_per_type: int = 8, size: tuple[int, int] = (160, 120), seed: int = 0) -> Path:
    """Write a CLEVR-Change-format raw release of ``5 * n_per_type`` scene ids into ``out_dir``.

    Ids are laid out as in CLEVR-Change (one contiguous block per change type) and split
    60/20/20 into train/val/test within each type.
    """
    out = Path(out_dir)
    for sub in ("images", "sc_images", "nsc_images", "masks"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w, h = size
    change_caps: dict[str, list[str]] = {}
    no_change_caps: dict[str, list[str]] = {}
    splits: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    types: dict[str, list[str]] = {t: [] for t in CHANGE_TYPES}
    for t_index, change_type in enumerate(CHANGE_TYPES):
        for k in range(n_per_type):
            sid = t_index * n_per_type + k
            name = f"{sid:06d}"
            before, after, nsc, captions, mask = make_scene(sid, change_type, w, h, rng)
            before.save(out / "images" / f"CLEVR_default_{name}.png")
            after.save(out / "sc_images" / f"CLEVR_semantic_{name}.png")
            nsc.save(out / "nsc_images" / f"CLEVR_nonsemantic_{name}.png")
            mask.save(out / "masks" / f"{name}.png")
            Image.new("L", (w, h), 0).save(out / "masks" / f"{name}_n.png")
            change_caps[f"CLEVR_default_{name}.png"] = captions
            no_change_caps[f"CLEVR_default_{name}.png"] = list(rng.permutation(NO_CHANGE_TEMPLATES)[:3])
            types[change_type].append(f"{name}.png")
            frac = k / n_per_type
            splits["train" if frac < 0.6 else "val" if frac < 0.8 else "test"].append(sid)
    for name, data in (
        ("change_captions.json", change_caps),
        ("no_change_captions.json", no_change_caps),
        ("splits.json", splits),
        ("type_mapping.json", types),
    ):
        (out / name).write_text(json.dumps(data, indent=1))
    return out

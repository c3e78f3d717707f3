"""The demo set: a small person-detection set in the Wake Vision label layout, built offline.

It is composed from real photographs that scikit-image ships (astronaut, camera, the LFW face
subset, and object and texture photos): person crops pasted onto real backgrounds at controlled
area fractions, brightness scaled, and drawings of people and objects for the depiction subsets.
Every flag is computed from what was composed (bounding-box area, mean grey level), except the
synthetic age tags of the face crops documented in docs/demo_dataset.md. It is a demo set, not
Wake Vision: it exercises the pipeline, and its accuracies say nothing about real-world quality.
"""

import csv
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import skimage.data
from PIL import Image, ImageFilter, ImageOps

from harness import reading
from harness.errors import UserError
from harness.eval.preprocess import luma

RECIPE_VERSION = "demo-v2"
SYNTHETIC = "synthetic images, not Wake Vision"  # what the set is, wherever its figures appear
JPEG_QUALITY = 95  # JPEG, as Wake Vision ships its images
CANVAS = 224
COLUMNS = (
    "filename",
    "person",
    "depiction",
    "body_part",
    "predominantly_female",
    "predominantly_male",
    "gender_unknown",
    "young",
    "middle_age",
    "older",
    "age_unknown",
    "near",
    "medium_distance",
    "far",
    "dark",
    "normal_lighting",
    "bright",
    "person_depiction",
    "non-person_depiction",
    "non-person_non-depiction",
)
# Wake Vision's thresholds: bbox area fraction for distance, mean grey level for lighting.
DISTANCE_FRACTIONS = {"near": (0.62, 0.72), "medium_distance": (0.12, 0.5), "far": (0.012, 0.085)}
PERSON_COUNTS = {"near": 12, "medium_distance": 16, "far": 24}
LIGHTING_TARGETS = (("dark", 48.0), ("normal_lighting", 125.0), ("bright", 200.0))
PLAIN_NON_PERSON = 30
DEPICTIONS_EACH = 8
SYNTHETIC_AGES = ("young", "middle_age", "older", "age_unknown")


@dataclass(frozen=True)
class PersonSource:
    name: str
    image: np.ndarray  # tight crop around the person, RGB uint8
    gender: str
    age: str | None  # None: assigned from SYNTHETIC_AGES
    body_part: bool


def _rgb(image: np.ndarray) -> np.ndarray:
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    return image[..., :3]


def _person_sources() -> list[PersonSource]:
    astronaut = skimage.data.astronaut()[10:512, 15:370]
    cameraman = _rgb(skimage.data.camera()[60:512, 0:340])
    sources = [
        PersonSource("astronaut", astronaut, "predominantly_female", "middle_age", False),
        PersonSource("camera", cameraman, "predominantly_male", "age_unknown", False),
    ]
    faces = skimage.data.lfw_subset()[:100]  # the first 100 are faces, the rest are not
    for index in range(0, 100, 7):
        face = _rgb((faces[index] * 255).astype(np.uint8))
        sources.append(PersonSource(f"lfw_face_{index}", face, "gender_unknown", None, True))
    return sources


def _backgrounds() -> list[tuple[str, np.ndarray]]:
    names = (
        "coffee",
        "chelsea",
        "rocket",
        "hubble_deep_field",
        "grass",
        "brick",
        "gravel",
        "immunohistochemistry",
        "retina",
        "moon",
        "coins",
        "cell",
        "page",
        "text",
    )
    return [(name, _rgb(getattr(skimage.data, name)())) for name in names]


def _crop_square(image: np.ndarray, rng: np.random.Generator) -> Image.Image:
    h, w = image.shape[:2]
    side = int(min(h, w) * rng.uniform(0.6, 1.0))
    top = int(rng.integers(0, h - side + 1))
    left = int(rng.integers(0, w - side + 1))
    crop = Image.fromarray(image[top : top + side, left : left + side])
    if rng.random() < 0.5:
        crop = ImageOps.mirror(crop)
    return crop.resize((CANVAS, CANVAS), Image.Resampling.BILINEAR)


def _paste_at_fraction(canvas: Image.Image, thing: np.ndarray, fraction: float, rng) -> float:
    """Paste so the bounding box covers `fraction` of the canvas; returns the fraction achieved."""
    h, w = thing.shape[:2]
    scale = np.sqrt(fraction * CANVAS * CANVAS / (h * w))
    new_w = max(4, min(CANVAS, round(w * scale)))
    new_h = max(4, min(CANVAS, round(h * scale)))
    sprite = Image.fromarray(thing).resize((new_w, new_h), Image.Resampling.BILINEAR)
    left = int(rng.integers(0, CANVAS - new_w + 1))
    top = int(rng.integers(0, CANVAS - new_h + 1))
    canvas.paste(sprite, (left, top))
    return new_w * new_h / (CANVAS * CANVAS)


def _drawing(thing: np.ndarray) -> Image.Image:
    """A poster-like drawing: posterized colours with dark edges, in a frame."""
    image = Image.fromarray(thing)
    poster = ImageOps.posterize(image.filter(ImageFilter.SMOOTH_MORE), 2)
    edges = ImageOps.invert(image.convert("L").filter(ImageFilter.FIND_EDGES)).point(lambda v: 255 if v > 200 else 0)
    drawn = Image.composite(poster, Image.new("RGB", image.size, (20, 20, 20)), edges)
    return ImageOps.expand(drawn, border=max(4, image.width // 25), fill=(90, 60, 30))


def _set_lighting(canvas: Image.Image, target: float) -> tuple[Image.Image, float]:
    pixels = np.asarray(canvas, dtype=np.float32)
    gain = target / max(luma(pixels).mean(), 1.0)
    adjusted = np.clip(pixels * gain, 0, 255).astype(np.uint8)
    return Image.fromarray(adjusted), float(luma(adjusted.astype(np.float32)).mean())


def _lighting_flags(mean_grey: float) -> dict[str, int]:
    return {
        "dark": int(mean_grey < 85),
        "normal_lighting": int(85 <= mean_grey < 170),
        "bright": int(mean_grey >= 170),
    }


def _compose(rng: np.random.Generator) -> list[tuple[Image.Image, dict]]:
    people = _person_sources()
    backgrounds = _backgrounds()
    items: list[tuple[Image.Image, dict]] = []
    person_index = 0
    for distance, count in PERSON_COUNTS.items():
        low, high = DISTANCE_FRACTIONS[distance]
        for _ in range(count):
            faces = people[2:]
            source = (people[0], people[1], faces[(person_index // 3) % len(faces)])[person_index % 3]
            age = source.age or SYNTHETIC_AGES[person_index % len(SYNTHETIC_AGES)]
            person_index += 1
            canvas = _crop_square(backgrounds[int(rng.integers(len(backgrounds)))][1], rng)
            area = _paste_at_fraction(canvas, source.image, rng.uniform(low, high), rng)
            flags = {
                "person": 1,
                "body_part": int(source.body_part),
                source.gender: 1,
                age: 1,
                "near": int(area >= 0.6),
                "medium_distance": int(0.1 <= area < 0.6),
                "far": int(0.005 <= area < 0.1),
                "source": source.name,
            }
            items.append((canvas, flags))
    for index in range(PLAIN_NON_PERSON):
        name, image = backgrounds[index % len(backgrounds)]
        items.append((_crop_square(image, rng), {"person": 0, "non-person_non-depiction": 1, "source": name}))
    objects = [bg for bg in backgrounds if bg[0] in ("coffee", "chelsea", "rocket", "coins")]
    for index in range(DEPICTIONS_EACH):
        wall = _crop_square(backgrounds[5][1], rng)  # brick
        subject = people[index % len(people)]
        _paste_at_fraction(wall, np.asarray(_drawing(subject.image)), rng.uniform(0.2, 0.5), rng)
        items.append(
            (wall, {"person": 0, "depiction": 1, "person_depiction": 1, "source": f"drawing of {subject.name}"})
        )
        wall = _crop_square(backgrounds[5][1], rng)
        name, image = objects[index % len(objects)]
        _paste_at_fraction(wall, np.asarray(_drawing(image)), rng.uniform(0.2, 0.5), rng)
        items.append((wall, {"person": 0, "depiction": 1, "non-person_depiction": 1, "source": f"drawing of {name}"}))
    return items


def build_demo_dataset(target: Path, seed: int = 20240501) -> Path:
    """Write images/ and labels.csv under target (atomically: a partial build is never visible)."""
    rng = np.random.default_rng(seed)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "images").mkdir(parents=True)
    rows, sources = [], []
    for index, (canvas, flags) in enumerate(_compose(rng)):
        _lighting_name, level = LIGHTING_TARGETS[index % len(LIGHTING_TARGETS)]
        image, _ = _set_lighting(canvas, level)
        filename = f"demo_{index:04d}.jpg"
        image.save(partial / "images" / filename, quality=JPEG_QUALITY)
        with Image.open(partial / "images" / filename) as saved:  # flags describe the pixels as stored
            mean_grey = float(luma(np.asarray(saved.convert("RGB"), dtype=np.float32)).mean())
        row = dict.fromkeys(COLUMNS, 0) | {k: v for k, v in flags.items() if k in COLUMNS}
        row |= _lighting_flags(mean_grey) | {"filename": filename}
        rows.append(row)
        sources.append((filename, flags["source"], f"{mean_grey:.1f}"))
    with open(partial / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with open(partial / "sources.csv", "w", newline="") as f:
        csv.writer(f).writerows([("filename", "composed_from", "mean_grey"), *sources])
    (partial / "RECIPE").write_text(f"{RECIPE_VERSION}\nseed {seed}\n")
    (partial / CHECKSUMS).write_text(json.dumps(checksums(partial), indent=1) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


CHECKSUMS = "checksums.json"  # sha256 of every file the set is read from, written with it


def checksums(root: Path) -> dict[str, str]:
    """sha256 of labels.csv and of each image, by path under root."""
    files = [root / "labels.csv", *sorted((root / "images").iterdir())]
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def is_intact(root: Path) -> bool:
    """Whether the built set is as it was written: every file present and matching its checksum."""
    try:
        written = reading.read_json(root / CHECKSUMS, reading.CACHE_INDEX)
        return isinstance(written, dict) and checksums(root) == written
    except (OSError, UserError):  # OSError: a file checksums() hashes vanished
        return False


def demo_copies(n: int, folder: Path, demo) -> Path:
    """A dataset folder of `n` samples for scale tests: the images of `demo` (the loaded demo Dataset) hard-linked
    under new names (c0000_<name>, c0001_<name>, …), each row's flags copied. Offline, and a few kB of links.
    Hard links, not symbolic ones: a labels row whose file links outside its image folder is refused."""
    demo_images = demo.samples[0].image_path.parent
    rows = [row for _, row in reading.read_csv_records(demo.csv_path, reading.LABELS)[1]]
    images = folder / "images"
    images.mkdir(parents=True)
    copies = []
    for i in range(n):
        row = rows[i % len(rows)]
        name = f"c{i // len(rows):04d}_{row['filename']}"
        _link_or_copy(demo_images / row["filename"], images / name)
        copies.append(row | {"filename": name})
    with open(folder / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(copies)
    return folder


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copyfile(source, target)

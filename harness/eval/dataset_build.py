"""`harness dataset build`: Wake Vision's 20 label columns for your own images with Open Images-style
box annotations, by the rules of the Wake Vision exporter (../shared/reference, section 1.2).

- person: a box of a person class (Person, Man, Woman, Boy, Girl) or a body part that is not a
  depiction; body_part: such a box of a body-part class; depiction: any box marked IsDepiction;
  person_depiction / non-person_depiction / non-person_non-depiction split the non-person images.
- distance (person images): the largest person or body-part box's area share inside the centre
  square crop: near >= 0.6, medium 0.1-0.6, far < 0.1.
- lighting (every image): mean grey level of the full image: dark < 85, bright >= 170.
- perceived gender and age (person images with MIAP boxes): a flag when every MIAP box carries it.
"""

import csv
import io
from collections import defaultdict
from pathlib import Path

import numpy as np
from PIL import Image

from harness.digits import float_or_none
from harness.errors import UserError
from harness.eval.demo_dataset import COLUMNS
from harness.eval.preprocess import load_rgb, luma
from harness.files import check_output, check_output_folder, write_text_atomically
from harness.reading import ANNOTATIONS, CLASS_DESCRIPTIONS, read_csv_lines, read_csv_records

PERSON_CLASSES = {"Person", "Man", "Woman", "Boy", "Girl"}
BODY_PART_CLASSES = {
    "Human body",
    "Human face",
    "Human head",
    "Human arm",
    "Human hand",
    "Human leg",
    "Human foot",
    "Human eye",
    "Human ear",
    "Human nose",
    "Human mouth",
    "Human hair",
    "Human beard",
}
GENDER = {
    "Predominantly Feminine": "predominantly_female",
    "Predominantly Masculine": "predominantly_male",
    "Unknown": "gender_unknown",
}
AGE = {"Young": "young", "Middle": "middle_age", "Older": "older", "Unknown": "age_unknown"}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


COORDINATES = {"XMin", "XMax", "YMin", "YMax"}  # Open Images: fractions of the image's size
BOX_COLUMNS = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax")
MIAP_COLUMNS = ("ImageID",)


def _read_csv(path: Path, needed: tuple[str, ...]) -> list[dict]:
    """The rows of an annotation CSV that has every needed column (read through harness.reading)."""
    header, rows = read_csv_records(path, ANNOTATIONS)
    missing = [c for c in needed if c not in (header or ())]
    if missing:
        raise UserError(f"{path} lacks the columns {', '.join(missing)}; Open Images box files need {','.join(needed)}")
    for number, row in rows:
        if any(row.get(c) is None for c in needed):
            raise UserError(f"{path} line {number}: the row is short; every row needs {','.join(needed)}")
        for column in COORDINATES & set(needed):
            if not _is_unit_coordinate(row[column]):
                raise UserError(
                    f"{path} line {number}: {column} is {row[column]!r}, not a coordinate from 0 to 1 "
                    "(in ASCII digits); fix that row"
                )
    return [row for _, row in rows]


def _is_unit_coordinate(text: str) -> bool:
    value = float_or_none(text)
    return value is not None and 0.0 <= value <= 1.0


def _class_names(annotations: Path) -> dict[str, str]:
    files = sorted(annotations.glob("*class-descriptions*.csv"))
    if not files:
        raise UserError(f"{annotations} has no *class-descriptions*.csv (MID → name); add Open Images' file")
    names = {}
    for _, row in read_csv_lines(files[0], CLASS_DESCRIPTIONS):
        if len(row) >= 2 and row[0] != "LabelName":
            names[row[0]] = row[1]
    return names


def _boxes(annotations: Path) -> dict[str, list[dict]]:
    files = sorted(annotations.glob("*bbox*.csv"))
    if not files:
        raise UserError(f"{annotations} has no *bbox*.csv box annotations")
    boxes = defaultdict(list)
    for path in files:
        for row in _read_csv(path, BOX_COLUMNS):
            boxes[row["ImageID"]].append(row)
    return boxes


def _miap(annotations: Path) -> dict[str, list[dict]]:
    boxes = defaultdict(list)
    for path in sorted(annotations.glob("*miap*.csv")):
        for row in _read_csv(path, MIAP_COLUMNS):
            boxes[row["ImageID"]].append(row)
    return boxes


def _crop_share(box: dict, width: int, height: int) -> float:
    """Area of the box inside the centre square crop, over the crop's area (coordinates 0..1)."""
    side = min(width, height)
    cx0, cy0 = (width - side) / 2 / width, (height - side) / 2 / height
    cx1, cy1 = cx0 + side / width, cy0 + side / height
    x0, x1 = max(float(box["XMin"]), cx0), min(float(box["XMax"]), cx1)
    y0, y1 = max(float(box["YMin"]), cy0), min(float(box["YMax"]), cy1)
    if x1 <= x0 or y1 <= y0:
        return 0.0
    return (x1 - x0) * (y1 - y0) / ((cx1 - cx0) * (cy1 - cy0))


def label_image(image: Path, boxes: list[dict], miap: list[dict], names: dict[str, str]) -> dict[str, int]:
    flags = dict.fromkeys(COLUMNS[1:], 0)
    try:
        rgb = load_rgb(image)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise UserError(f"image {image} cannot be read ({exc}); replace it or move it out of the folder") from exc
    height, width = rgb.shape[:2]
    grey = float(luma(rgb.astype(np.float32)).mean())
    named = [(names.get(b["LabelName"], b["LabelName"]), b) for b in boxes]
    real = [(n, b) for n, b in named if b.get("IsDepiction", "0") != "1"]
    human = [b for n, b in real if n in PERSON_CLASSES | BODY_PART_CLASSES]
    depicted_people = [b for n, b in named if b.get("IsDepiction", "0") == "1" and n in PERSON_CLASSES]
    flags["person"] = int(bool(human))
    flags["body_part"] = int(any(n in BODY_PART_CLASSES for n, _ in real))
    flags["depiction"] = int(any(b.get("IsDepiction", "0") == "1" for _, b in named))
    if flags["person"]:
        share = max(_crop_share(b, width, height) for b in human)
        flags["near" if share >= 0.6 else "medium_distance" if share >= 0.1 else "far"] = 1
        for attribute, mapping in (("GenderPresentation", GENDER), ("AgePresentation", AGE)):
            values = {b.get(attribute) for b in miap}
            if len(values) == 1 and (value := values.pop()) in mapping:
                flags[mapping[value]] = 1
    elif depicted_people:
        flags["person_depiction"] = 1
    elif flags["depiction"]:
        flags["non-person_depiction"] = 1
    else:
        flags["non-person_non-depiction"] = 1
    flags["dark" if grey < 85 else "bright" if grey >= 170 else "normal_lighting"] = 1
    return flags


def build_dataset(annotations: Path, images: Path, out: Path) -> tuple[Path, int]:
    if not images.is_dir():
        raise UserError(f"image folder {images} does not exist")
    check_output_folder(out, "output folder")
    check_output(out / "labels.csv", "labels file")  # refused before any work: only a regular file is replaced
    names, boxes, miap = _class_names(annotations), _boxes(annotations), _miap(annotations)
    files = sorted(p for p in images.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise UserError(f"no .jpg or .png images in {images}")
    rows = [
        {"filename": image.name, **label_image(image, boxes.get(image.stem, []), miap.get(image.stem, []), names)}
        for image in files
    ]  # every image labelled before anything is written: a refusal leaves nothing behind
    out.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomically(out / "labels.csv", text.getvalue(), "labels file")
    link = out / "images"
    if not link.exists() and not link.is_symlink():
        link.symlink_to(images.resolve(), target_is_directory=True)
    return out / "labels.csv", len(files)

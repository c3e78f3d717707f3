"""Detection mAP by the ILSVRC/VOC rules, as LPIRC scored it.

Per image, detections in falling confidence each take the unmatched ground-truth box of their class
with the highest IoU at or above that box's threshold (a true positive), else count as false
positives; duplicates of a matched box are false positives. Per class, detections from all images in
falling confidence give precision and recall; AP is the area under the monotone precision envelope
(VOC 2010+). mAP is the mean AP over the classes that have ground truth (no detections: AP 0).

Thresholds: `ilsvrc` gives each ground-truth box min(0.5, w·h / ((w+10)(h+10))), so small objects
need less overlap (ILSVRC devkit); a number gives every box that threshold (VOC: 0.5). With
`inclusive_pixels` a box's width is xmax - xmin + 1, the convention of both devkits.
"""

import csv
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.digits import NotFinite, ascii_float, ascii_int
from harness.errors import UserError
from harness.files import write_atomically
from harness.reading import DETECTIONS, FileKind, read_text


@dataclass(frozen=True)
class Box:
    image: int
    label: int
    confidence: float
    xmin: float
    ymin: float
    xmax: float
    ymax: float

    @property
    def inverted(self) -> bool:
        """xmin > xmax or ymin > ymax: kept and scored as LPIRC's reference scores it (see read_boxes)."""
        return self.xmin > self.xmax or self.ymin > self.ymax

    def coords(self) -> tuple[float, float, float, float]:
        return self.xmin, self.ymin, self.xmax, self.ymax


@dataclass(frozen=True)
class MapResult:
    map: float
    ap: dict[int, float]  # per class with ground truth
    true_positives: int
    false_positives: int
    positives: int

    def as_dict(self) -> dict:
        return {
            "map": self.map,
            "classes": len(self.ap),
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
            "positives": self.positives,
        }


MAX_COORDINATE = 1e6  # pixels: a coordinate further from 0 is no box of any image (docs/cli.md)


def read_boxes(path: Path, kind: FileKind = DETECTIONS) -> list[Box]:
    """LPIRC's 7 columns per box: image, class, confidence, xmin, ymin, xmax, ymax (commas or spaces), read
    through harness.reading (`kind`: DETECTIONS or MAP_TRUTH); numbers in ASCII digits, every one finite and
    every coordinate within ±MAX_COORDINATE pixels."""
    if not Path(path).exists():
        raise UserError(f"cannot read boxes from {path} (No such file or directory); pass an existing CSV")
    text = read_text(path, kind)
    boxes = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = [f for f in re.split(r"[,\s]+", line.strip()) if f]
        if fields:
            boxes.append(_box(fields, line, f"{path}:{number}"))
    return boxes


def _not_a_box(line: str, where: str) -> UserError:
    return UserError(
        f"{where}: expected 7 numbers (image, class, confidence, xmin, ymin, xmax, ymax), in ASCII digits, "
        f"got {line.strip()[:60]!r}"
    )


def _box(fields: list[str], line: str, where: str) -> Box:
    if len(fields) != 7:
        raise _not_a_box(line, where)
    try:
        box = Box(*(ascii_int(f) for f in fields[:2]), *(ascii_float(f) for f in fields[2:]))
    except NotFinite:
        raise UserError(f"{where}: a confidence or coordinate is not a finite number; fix that row") from None
    except ValueError:
        raise _not_a_box(line, where) from None
    if box.label < 0:
        raise UserError(f"{where}: class id {box.label} is negative; class ids are whole numbers from 0")
    if far := next((v for v in box.coords() if abs(v) > MAX_COORDINATE), None):
        raise UserError(
            f"{where}: coordinate {far:g} is beyond ±{MAX_COORDINATE:,.0f} pixels; boxes are pixel coordinates "
            "in the image"
        )
    # An inverted box (xmin > xmax or ymin > ymax) is kept: LPIRC's own golden file holds 1692 of them
    # and its submissions some; it has no area, so it matches nothing (a false positive, a missed truth).
    return box


def write_boxes(path: Path, boxes: list[Box]) -> None:
    """Boxes in LPIRC's 7 columns, into a run folder: written whole, and a link at path replaced, never followed."""

    def write(partial: Path) -> None:
        with partial.open("w", newline="") as handle:
            writer = csv.writer(handle)
            for b in boxes:
                writer.writerow([b.image, b.label, f"{b.confidence:.6f}", *(f"{v:.6f}" for v in b.coords())])

    write_atomically(path, write, "run file", follow_links=False)


def iou(a: Box, b: Box, inclusive_pixels: bool = True) -> float:
    one = 1.0 if inclusive_pixels else 0.0
    width = min(a.xmax, b.xmax) - max(a.xmin, b.xmin) + one
    height = min(a.ymax, b.ymax) - max(a.ymin, b.ymin) + one
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    area_a = (a.xmax - a.xmin + one) * (a.ymax - a.ymin + one)
    area_b = (b.xmax - b.xmin + one) * (b.ymax - b.ymin + one)
    return inter / (area_a + area_b - inter)


def gt_threshold(box: Box, thresholds: str | float, inclusive_pixels: bool = True) -> float:
    if thresholds == "ilsvrc":
        one = 1.0 if inclusive_pixels else 0.0
        w, h = box.xmax - box.xmin + one, box.ymax - box.ymin + one
        return min(0.5, w * h / ((w + 10) * (h + 10)))
    return float(thresholds)


def match(
    detections: list[Box], truth: list[Box], thresholds: str | float = "ilsvrc", inclusive_pixels: bool = True
) -> list[bool]:
    """One flag per detection (in the given order): True for a true positive."""
    by_image: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, box in enumerate(truth):
        by_image[box.image, box.label].append(index)
    limits = [gt_threshold(box, thresholds, inclusive_pixels) for box in truth]
    matched = [False] * len(truth)
    flags = [False] * len(detections)
    order = sorted(range(len(detections)), key=lambda i: -detections[i].confidence)
    for i in order:
        det = detections[i]
        best, best_iou = None, -1.0
        for j in by_image.get((det.image, det.label), ()):
            if matched[j]:
                continue
            overlap = iou(det, truth[j], inclusive_pixels)
            if overlap >= limits[j] and overlap > best_iou:
                best, best_iou = j, overlap
        if best is not None:
            matched[best] = True
            flags[i] = True
    return flags


def average_precision(true_positive: np.ndarray, positives: int) -> float:
    """VOC area under the precision envelope; `true_positive` in falling confidence."""
    if positives == 0:
        return float("nan")
    tp = np.cumsum(true_positive)
    fp = np.cumsum(~true_positive)
    recall = tp / positives
    precision = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mpre = np.concatenate([[0.0], precision, [0.0]])
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    steps = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))


def mean_average_precision(
    detections: list[Box], truth: list[Box], thresholds: str | float = "ilsvrc", inclusive_pixels: bool = True
) -> MapResult:
    flags = np.array(match(detections, truth, thresholds, inclusive_pixels), dtype=bool)
    positives = defaultdict(int)
    for box in truth:
        positives[box.label] += 1
    ap = {}
    for label, count in sorted(positives.items()):
        members = [i for i, d in enumerate(detections) if d.label == label]
        members.sort(key=lambda i: -detections[i].confidence)
        ap[label] = average_precision(flags[members], count) if members else 0.0
    return MapResult(
        map=float(np.mean(list(ap.values()))) if ap else 0.0,
        ap=ap,
        true_positives=int(flags.sum()),
        false_positives=int((~flags).sum()),
        positives=len(truth),
    )

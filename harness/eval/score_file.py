"""`harness score`: the eval metrics for predictions made elsewhere, through the same code path."""

import csv
from pathlib import Path

from harness.errors import UserError
from harness.eval.dataset import read_labels
from harness.eval.metrics import score
from harness.eval.subsets import Subset


def read_predictions(path: Path) -> dict[str, int]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if not {"filename", "prediction"} <= set(reader.fieldnames or ()):
                raise UserError(f"{path} needs the columns filename,prediction (and optionally score)")
            return {row["filename"]: int(row["prediction"]) for row in reader}
    except OSError as exc:
        raise UserError(f"cannot read predictions {path} ({exc.strerror})") from exc
    except ValueError as exc:
        raise UserError(f"{path}: a prediction is not 0 or 1 ({exc})") from exc


def score_file(labels: Path, predictions: Path, subsets: list[Subset]) -> dict:
    dataset = read_labels(labels)
    predicted = read_predictions(predictions)
    missing = [s.id for s in dataset.samples if s.id not in predicted]
    samples = [s for s in dataset.samples if s.id in predicted]
    if not samples:
        raise UserError(f"no filename in {predictions} is in {labels}; are they for the same dataset?")
    values = [predicted[s.id] for s in samples]
    return {
        "labels": str(labels),
        "predictions": str(predictions),
        "scored": len(samples),
        "without_prediction": len(missing),
        "subsets": {subset.name: score(subset, samples, values).as_dict() for subset in subsets},
    }

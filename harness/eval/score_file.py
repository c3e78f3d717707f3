"""`harness score`: the eval metrics for predictions made elsewhere, through the same code path."""

import dataclasses
from pathlib import Path

from harness.digits import float_or_none
from harness.errors import UserError
from harness.eval.dataset import read_labels, require_flags
from harness.eval.label_files import clean_labels_named, join_clean_labels
from harness.eval.metrics import pool_of, score
from harness.eval.subsets import SUBSETS, Subset
from harness.reading import PREDICTIONS, read_csv_records
from harness.samples import Dataset


def read_predictions(path: Path, lines: dict[str, int] | None = None) -> dict[str, int]:
    """filename -> 0 or 1. A short row, another value, a score that is no finite number or a filename
    given twice names its line; `lines`, if given, gets each filename's line."""
    predicted: dict[str, int] = {}
    first_line: dict[str, int] = {} if lines is None else lines
    if not Path(path).exists():
        raise UserError(f"cannot read predictions {path} (No such file or directory); pass an existing CSV")
    header, rows = read_csv_records(path, PREDICTIONS)
    if not {"filename", "prediction"} <= set(header or ()):
        raise UserError(f"{path} needs the columns filename,prediction (and optionally score)")
    for line, row in rows:
        name, value = row["filename"], row["prediction"]
        if name is None or value is None:
            raise UserError(f"{path} line {line}: the row is short; every row needs filename,prediction")
        if value.strip() not in ("0", "1"):
            raise UserError(f"{path} line {line}: prediction {value!r} for {name} is not 0 or 1")
        given = row.get("score")
        if given is not None and given.strip() and float_or_none(given) is None:
            raise UserError(
                f"{path} line {line}: score {given!r} for {name} is not a finite number in ASCII digits; "
                "give a number or leave it empty"
            )
        if name in predicted:
            raise UserError(
                f"{path} line {line}: {name} was predicted already on line {first_line[name]}; give each filename once"
            )
        predicted[name], first_line[name] = int(value), line
    return predicted


_NO_PREDICTION = "the others have no prediction; predict every pool member"


def score_labels(labels: Path, clean_labels: str | None = None) -> Dataset:
    """The labels file (any layout of harness/eval/label_files.py), with cleaned labels put over it if named
    ('none' or no value: none)."""
    return join_clean_labels(read_labels(labels), clean_labels_named(clean_labels))


def default_subsets(dataset: Dataset) -> list[Subset]:
    """Every subset of the labels' splits that the labels have the flags for."""
    flags = set.intersection(*(set(s.flags) for s in dataset.samples)) if dataset.samples else set()
    return [s for s in SUBSETS.values() if (s.flag is None or s.flag in flags) and s.split in (None, *dataset.splits)]


def score_file(dataset: Dataset, predictions: Path, subsets: list[Subset]) -> dict:
    require_flags(dataset, subsets)
    labels = dataset.csv_path
    lines: dict[str, int] = {}
    predicted = read_predictions(predictions, lines)
    missing = [s.id for s in dataset.samples if s.id not in predicted]
    samples = [s for s in dataset.samples if s.id in predicted]
    if not samples:
        raise UserError(f"no filename in {predictions} is in {labels}; are they for the same dataset?")
    known = {s.id for s in dataset.samples}
    unknown = [name for name in predicted if name not in known]
    if unknown:
        raise UserError(
            f"{predictions} line {lines[unknown[0]]}: {unknown[0]} is not in {labels} "
            f"({len(unknown)} such rows); predict only the files the labels list"
        )
    values = [predicted[s.id] for s in samples]
    clean = dataset.clean_labels
    return {
        "labels": str(labels),
        "predictions": str(predictions),
        "clean_labels": None if clean is None else dataclasses.asdict(clean),
        "scored": len(samples),
        "without_prediction": len(missing),
        "subsets": {
            subset.name: score(subset, samples, values, pool_of(subset, dataset), _NO_PREDICTION).as_dict()
            for subset in subsets
        },
    }

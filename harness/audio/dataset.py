"""Keyword-spotting datasets: labels.csv (filename, label) and clips/, as the keyword demo set, or
any folder in that layout. Words map to the card's classes: a class of the same name, the card's
silence class for `_silence_`, its unknown class for any other word."""

import hashlib
import os
from pathlib import Path

from harness.audio.demo import RECIPE_VERSION, SILENCE, SYNTHETIC, build_keyword_demo
from harness.errors import UserError
from harness.model.card import ModelCard
from harness.paths import cache_dir
from harness.reading import LABELS, read_bytes, read_csv_dicts
from harness.samples import DEMO, Dataset, Sample

COLUMNS = ("filename", "label")


def _class_of(word: str, card: ModelCard) -> int:
    out = card.output
    name = out.silence_label if word == SILENCE else word if word in out.labels else out.unknown_label
    if name not in out.labels:
        raise UserError(
            f"the dataset has the word {word!r}, which model {card.name} has no class for; "
            "give the card an unknown_label (and silence_label) in [output]"
        )
    return out.labels.index(name)


def load_keyword_dataset(spec: str, card: ModelCard) -> Dataset:
    synthetic = None
    if spec == DEMO:
        root, name = cache_dir() / "datasets" / RECIPE_VERSION, f"{DEMO} ({RECIPE_VERSION})"
        synthetic = SYNTHETIC
        if not (root / "labels.csv").is_file():
            build_keyword_demo(root)
    else:
        root, name = Path(spec), Path(spec).name
    labels = root / "labels.csv"
    if not labels.is_file():
        raise UserError(f"{spec} is not a keyword dataset (no labels.csv); pass 'demo' or a folder with labels.csv")
    data = read_bytes(labels, LABELS)
    header, rows = read_csv_dicts(labels, LABELS)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise UserError(f"{labels} lacks the columns {', '.join(missing)}; keyword datasets need filename,label")
    samples = tuple(_sample(row, line, root / "clips", labels, card) for line, row in enumerate(rows, 2))
    return Dataset(name, labels, hashlib.sha256(data).hexdigest(), samples, synthetic=synthetic)


def _sample(row: dict, line: int, clips: Path, labels: Path, card: ModelCard) -> Sample:
    """A row's clip, which must lie inside the dataset's clips/ folder (no `../`, no absolute path), and its class."""
    filename, word = row.get("filename"), row.get("label")
    if not filename or not word:
        raise UserError(f"{labels} line {line}: expected filename,label, got {','.join(row.values())!r}")
    path = clips / filename
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(clips)):
        raise UserError(
            f"{labels} line {line}: the clip {filename!r} is not a file inside {clips}; name it relative to it"
        )
    return Sample(filename, path, {"label": _class_of(word, card)})

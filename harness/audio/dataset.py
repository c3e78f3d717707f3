"""Keyword-spotting datasets: labels.csv (filename, label) and clips/, as the keyword demo set, or
any folder in that layout. Words map to the card's classes: a class of the same name, the card's
silence class for `_silence_`, its unknown class for any other word."""

import csv
import hashlib
from pathlib import Path

from harness.audio.demo import RECIPE_VERSION, SILENCE, build_keyword_demo
from harness.errors import UserError
from harness.model.card import ModelCard
from harness.paths import cache_dir
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
    if spec == DEMO:
        root, name = cache_dir() / "datasets" / RECIPE_VERSION, f"{DEMO} ({RECIPE_VERSION})"
        if not (root / "labels.csv").is_file():
            build_keyword_demo(root)
    else:
        root, name = Path(spec), Path(spec).name
    labels = root / "labels.csv"
    if not labels.is_file():
        raise UserError(f"{spec} is not a keyword dataset (no labels.csv); pass 'demo' or a folder with labels.csv")
    with open(labels, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise UserError(f"{labels} lacks the columns {', '.join(missing)}; keyword datasets need filename,label")
        rows = list(reader)
    samples = tuple(
        Sample(row["filename"], root / "clips" / row["filename"], {"label": _class_of(row["label"], card)})
        for row in rows
    )
    return Dataset(name, labels, hashlib.sha256(labels.read_bytes()).hexdigest(), samples)

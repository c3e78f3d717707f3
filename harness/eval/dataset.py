"""Benchmark datasets in the Wake Vision label layout: a CSV of flags plus an image folder."""

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.eval.demo_dataset import COLUMNS, RECIPE_VERSION, build_demo_dataset
from harness.paths import cache_dir

DEMO = "demo"


@dataclass(frozen=True)
class Sample:
    id: str
    image_path: Path
    flags: dict[str, int]

    @property
    def person(self) -> int:
        return self.flags["person"]


@dataclass(frozen=True)
class Dataset:
    name: str
    csv_path: Path
    csv_sha256: str
    samples: tuple[Sample, ...]


def _demo_root() -> Path:
    root = cache_dir() / "datasets" / RECIPE_VERSION
    if not (root / "labels.csv").is_file():
        build_demo_dataset(root)
    return root


def _read(name: str, csv_path: Path, image_dir: Path) -> Dataset:
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise UserError(f"{csv_path} lacks the Wake Vision columns {', '.join(missing)}")
        try:
            samples = tuple(
                Sample(row["filename"], image_dir / row["filename"], {c: int(row[c]) for c in COLUMNS[1:]})
                for row in reader
            )
        except ValueError as exc:
            raise UserError(f"{csv_path}: a flag is not an integer ({exc})") from exc
    return Dataset(name, csv_path, hashlib.sha256(csv_path.read_bytes()).hexdigest(), samples)


def read_labels(csv_path: Path) -> Dataset:
    """A label CSV on its own (images beside it in images/, if anyone asks for them)."""
    if not Path(csv_path).is_file():
        raise UserError(f"label file {csv_path} does not exist")
    return _read(Path(csv_path).stem, Path(csv_path), Path(csv_path).parent / "images")


def load_dataset(spec: str = DEMO) -> Dataset:
    """'demo', or a folder holding labels.csv and images/."""
    if spec == DEMO:
        root = _demo_root()
        return _read(f"{DEMO} ({RECIPE_VERSION})", root / "labels.csv", root / "images")
    root = Path(spec)
    if not (root / "labels.csv").is_file():
        raise UserError(f"dataset {spec!r} not found: pass 'demo' or a folder holding labels.csv and images/")
    return _read(root.name, root / "labels.csv", root / "images")

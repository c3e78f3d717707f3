"""Benchmark datasets in the Wake Vision label layout: flag CSVs (one per split) plus images.

Sources:
- `demo`: the demo set, built offline on first use (docs/demo_dataset.md);
- a folder in the published Wake Vision layout: `wake_vision_test.csv`, `wake_vision_validation.csv`
  (the 20 columns), images in `images/`, beside the CSVs, or in the published `*.tar.gz` shards
  (the needed images are extracted once into the cache);
- any folder with `labels.csv` and `images/` in the same layout (one split, called `test`).
"""

import csv
import hashlib
import tarfile
from pathlib import Path

from harness.errors import UserError
from harness.eval.demo_dataset import COLUMNS, RECIPE_VERSION, build_demo_dataset
from harness.paths import cache_dir
from harness.samples import DEMO, Dataset, Sample

PUBLISHED_SPLITS = {"test": "wake_vision_test.csv", "validation": "wake_vision_validation.csv"}


def _demo_root() -> Path:
    root = cache_dir() / "datasets" / RECIPE_VERSION
    if not (root / "labels.csv").is_file():
        build_demo_dataset(root)
    return root


def _rows(csv_path: Path) -> list[tuple[int, dict]]:
    """(line number, row) for each row: every Wake Vision column present and filled, every file name once."""
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as f:  # a BOM (Excel's UTF-8 CSV) is dropped
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise UserError(f"{csv_path} lacks the Wake Vision columns {', '.join(missing)}")
            header = list(reader.fieldnames)
            rows = [(reader.line_num, row) for row in reader]
    except UnicodeDecodeError as exc:
        raise UserError(f"{csv_path} is not a UTF-8 CSV ({exc.reason} at byte {exc.start}); save it as UTF-8") from exc
    except csv.Error as exc:
        raise UserError(f"{csv_path} is not a readable CSV ({exc})") from exc
    first_line: dict[str, int] = {}
    for line, row in rows:
        if None in row or any(row[c] is None for c in header):  # csv marks extra fields None, missing ones too
            fields = sum(row[c] is not None for c in header) + len(row.get(None, []))
            raise UserError(f"{csv_path} line {line}: {fields} fields where the header has {len(header)}; fix that row")
        if row["filename"] in first_line:
            raise UserError(
                f"{csv_path} line {line}: {row['filename']} is listed again (first on line "
                f"{first_line[row['filename']]}); keep one row per file"
            )
        first_line[row["filename"]] = line
    return rows


FLAG_VALUES = (1, 0, -1)  # -1: unknown, as in the far-only rows (person -1, harness/eval/subsets.py)


def _samples(csv_path: Path, image_dir: Path, split: str) -> list[Sample]:
    samples = []
    for line, row in _rows(csv_path):
        try:
            flags = {c: int(row[c]) for c in COLUMNS[1:]}
        except ValueError as exc:
            raise UserError(f"{csv_path} line {line}: a flag is not an integer ({exc})") from exc
        bad = next((c for c in COLUMNS[1:] if flags[c] not in FLAG_VALUES), None)
        if bad is not None:
            raise UserError(
                f"{csv_path} line {line}: {bad} is {row[bad].strip()!r} for {row['filename']}; "
                "a flag is 1 (yes), 0 (no) or -1 (unknown: the far-only rows)"
            )
        samples.append(Sample(row["filename"], image_dir / row["filename"], flags, split))
    return samples


def _read(name: str, csv_path: Path, image_dir: Path) -> Dataset:
    """A labels.csv folder: one split, `test` unless a SPLIT file beside the CSV names another."""
    marker = csv_path.parent / "SPLIT"
    split = marker.read_text().strip() if marker.is_file() else "test"
    return Dataset(name, csv_path, _sha256(csv_path), tuple(_samples(csv_path, image_dir, split)), (split,))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_labels(csv_path: Path) -> Dataset:
    """A label CSV on its own (images beside it in images/, if anyone asks for them)."""
    if Path(csv_path).exists() and not Path(csv_path).is_file():
        raise UserError(f"label file {csv_path} is not a regular file (a folder, FIFO or device); pass a CSV file")
    if not Path(csv_path).is_file():
        raise UserError(f"label file {csv_path} does not exist")
    return _read(Path(csv_path).stem, Path(csv_path), Path(csv_path).parent / "images")


def _extract_from_shards(shards: list[Path], wanted: set[str], into: Path) -> None:
    """Stream through the published .tar.gz shards once, keeping only the images the run needs."""
    into.mkdir(parents=True, exist_ok=True)
    missing = {name for name in wanted if not (into / name).is_file()}
    for shard in shards:
        if not missing:
            return
        with tarfile.open(shard, mode="r|gz") as archive:
            for member in archive:
                name = Path(member.name).name
                if member.isfile() and name in missing:
                    data = archive.extractfile(member).read()
                    partial = into / f".{name}.partial"
                    partial.write_bytes(data)
                    partial.replace(into / name)
                    missing.discard(name)


def _published(root: Path, splits: list[str]) -> Dataset:
    present = [s for s, name in PUBLISHED_SPLITS.items() if (root / name).is_file()]
    unknown = [s for s in splits if s not in present]
    if unknown:
        raise UserError(f"unknown split {', '.join(unknown)} in {root}; available splits: {', '.join(present)}")
    chosen = splits or (["test"] if "test" in present else present[:1])
    shards = sorted(root.glob("*.tar.gz"))
    image_dir = root / "images" if (root / "images").is_dir() else root
    digest = hashlib.sha256()
    samples: list[Sample] = []
    for split in chosen:
        csv_path = root / PUBLISHED_SPLITS[split]
        digest.update(_sha256(csv_path).encode())
        samples += _samples(csv_path, image_dir, split)
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise UserError(f"{sample.id} is in more than one of the splits {', '.join(chosen)}; choose one split")
        seen.add(sample.id)
    if shards and not any((image_dir / s.id).is_file() for s in samples[:20]):
        image_dir = cache_dir() / "datasets" / "extracted" / digest.hexdigest()[:16]
        samples = [Sample(s.id, image_dir / s.id, s.flags, s.split) for s in samples]
        _extract_from_shards(shards, {s.id for s in samples}, image_dir)
    first_csv = root / PUBLISHED_SPLITS[chosen[0]]
    return Dataset(f"{root.name} ({'+'.join(chosen)})", first_csv, digest.hexdigest(), tuple(samples), tuple(chosen))


def load_dataset(spec: str = DEMO, splits: list[str] | None = None) -> Dataset:
    """'demo', a folder in the published Wake Vision layout, or a folder with labels.csv and images/."""
    splits = splits or []
    if spec == DEMO:
        root = _demo_root()
        dataset = _read(f"{DEMO} ({RECIPE_VERSION})", root / "labels.csv", root / "images")
    else:
        root = Path(spec)
        if any((root / name).is_file() for name in PUBLISHED_SPLITS.values()):
            return _published(root, splits)
        if not (root / "labels.csv").is_file():
            raise UserError(
                f"dataset {spec!r} not found: pass 'demo', a folder with wake_vision_test.csv "
                "(the published layout) or a folder holding labels.csv and images/"
            )
        dataset = _read(root.name, root / "labels.csv", root / "images")
    unknown = [s for s in splits if s not in dataset.splits]
    if unknown:
        raise UserError(f"unknown split {', '.join(unknown)}; {dataset.name} has: {', '.join(dataset.splits)}")
    return dataset


def describe_sources() -> list[dict]:
    """What `harness datasets` lists."""
    demo = cache_dir() / "datasets" / RECIPE_VERSION
    return [
        {
            "name": DEMO,
            "kind": "demo set, built offline on first use (not Wake Vision)",
            "location": str(demo),
            "ready": (demo / "labels.csv").is_file(),
        },
        {
            "name": "FOLDER",
            "kind": "published Wake Vision layout: wake_vision_{test,validation}.csv + images/ or *.tar.gz shards",
            "location": "any path",
            "ready": None,
        },
        {"name": "FOLDER", "kind": "labels.csv (20 columns) + images/", "location": "any path", "ready": None},
        {
            "name": "hf:Harvard-Edge/Wake-Vision",
            "kind": "Wake Vision validation/test streamed from the Hugging Face hub (online; pip install datasets)",
            "location": "huggingface.co",
            "ready": None,
        },
        *keyword_sources(),
    ]


def keyword_sources() -> list[dict]:
    """Keyword-spotting cards read these instead (docs/keyword_spotting.md)."""
    from harness.audio.demo import RECIPE_VERSION as KEYWORD_RECIPE

    demo = cache_dir() / "datasets" / KEYWORD_RECIPE
    return [
        {
            "name": DEMO,
            "kind": "keyword cards: the keyword demo set, spoken offline by espeak-ng (synthetic speech)",
            "location": str(demo),
            "ready": (demo / "labels.csv").is_file(),
        },
        {
            "name": "FOLDER",
            "kind": "keyword cards: labels.csv (filename,label) + clips/",
            "location": "any path",
            "ready": None,
        },
    ]

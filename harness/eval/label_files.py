"""Reading Wake Vision label CSVs, in the three layouts harness takes:
- the 20 flag columns (`wake_vision_{split}.csv`, read in harness/eval/dataset.py);
- the published cleaned labels (`wv_{split}_cleaned.csv`: filename, original_label, clean_label), with
  clean_label 1 person, 0 non-person, -2 a verified depiction (a non-person), -1 excluded
  (harvard-edge/Wake_Vision cleaned_csvs/; no published row is -1);
- plain binary labels: filename, label (1 person, 0 non-person).
The last two carry no fine-grained flags: alone they give the overall subsets only; the cleaned labels
can be put over a flag CSV's person column (`join_clean_labels`), where they win.
"""

import dataclasses
import hashlib
from pathlib import Path

from harness.errors import UserError, setting
from harness.reading import LABELS, check_regular, read_bytes, read_csv_lines, read_csv_records
from harness.samples import CleanLabels, Dataset, Sample

CLEAN_COLUMNS = ("filename", "original_label", "clean_label")
BINARY_COLUMNS = ("filename", "label")
CLEAN_FILE = "wv_{split}_cleaned.csv"  # the published name
CLEAN_PERSON = {"1": 1, "0": 0, "-2": 0, "-1": None}  # None: excluded


def csv_header(csv_path: Path) -> list[str]:
    lines = read_csv_lines(csv_path, LABELS)
    return lines[0][1] if lines else []


def read_rows(csv_path: Path, columns, what: str, fix: str = "", repeats: bool = False) -> list[tuple[int, dict]]:
    """(line number, row) for each row: every one of `columns` present and filled, every file name once
    (with `repeats`, a row that repeats an earlier one exactly is dropped: the published cleaned validation
    labels list 10 files twice, each time alike)."""
    header, rows = read_csv_records(csv_path, LABELS)
    missing = [c for c in columns if c not in (header or ())]
    if missing:
        raise UserError(f"{csv_path} lacks {what} {', '.join(missing)}{fix}")
    first: dict[str, tuple[int, dict]] = {}
    for line, row in rows:
        if None in row or any(row[c] is None for c in header):  # csv marks extra fields None, missing ones too
            fields = sum(row[c] is not None for c in header) + len(row.get(None, []))
            raise UserError(f"{csv_path} line {line}: {fields} fields where the header has {len(header)}; fix that row")
        if row["filename"] in first and not (repeats and first[row["filename"]][1] == row):
            raise UserError(
                f"{csv_path} line {line}: {row['filename']} is listed again (first on line "
                f"{first[row['filename']][0]}); keep one row per file"
            )
        first.setdefault(row["filename"], (line, row))
    return list(first.values())


def inside(image_dir: Path, name: str, csv_path: Path, line: int) -> Path:
    """image_dir / name, refused (naming the label file and line) unless it lies inside image_dir: no
    absolute name, no '..' and no link that points out. One lstat a row; a link is resolved."""
    path = image_dir / name
    parts = Path(name).parts
    escapes = not name or Path(name).is_absolute() or ".." in parts
    if not escapes and (len(parts) > 1 or path.is_symlink()):
        escapes = not path.resolve().is_relative_to(image_dir.resolve())
    if escapes:
        raise UserError(
            f"{csv_path} line {line}: the file name {name!r} reaches outside the image folder {image_dir} "
            "(an absolute name, '..' or a link out); name a file inside it"
        )
    return path


def is_label_only(header: list[str]) -> bool:
    """A cleaned-label or binary-label header (no fine-grained flags)."""
    return set(CLEAN_COLUMNS) <= set(header) or set(BINARY_COLUMNS) <= set(header)


def clean_rows(csv_path: Path) -> list[tuple[int, str, str]]:
    """(line, filename, clean_label as written: "1", "0", "-2" or "-1") for each row."""
    found = []
    for line, row in read_rows(csv_path, CLEAN_COLUMNS, "the cleaned-label columns", repeats=True):
        value = row["clean_label"].strip()
        if value not in CLEAN_PERSON:
            raise UserError(
                f"{csv_path} line {line}: clean_label {value!r} for {row['filename']} is not 1, 0, -2 "
                "(a depiction: non-person) or -1 (excluded)"
            )
        found.append((line, row["filename"], value))
    return found


def clean_values(csv_path: Path) -> dict[str, str]:
    """filename -> clean_label as written ("1", "0", "-2" or "-1")."""
    return {name: value for _, name, value in clean_rows(csv_path)}


def label_only_samples(csv_path: Path, header: list[str], image_dir: Path, split: str) -> list[Sample]:
    """A cleaned-label or binary-label file (its `header` read already) on its own: samples with a person
    label and no other flag."""
    people: list[tuple[int, str, int | None]] = []
    if set(CLEAN_COLUMNS) <= set(header):
        people = [(line, name, CLEAN_PERSON[value]) for line, name, value in clean_rows(csv_path)]
    else:
        for line, row in read_rows(csv_path, BINARY_COLUMNS, "the columns"):
            value = row["label"].strip()
            if value not in ("0", "1"):
                raise UserError(f"{csv_path} line {line}: label {value!r} for {row['filename']} is not 1 (person) or 0")
            people.append((line, row["filename"], int(value)))
    return [
        Sample(name, inside(image_dir, name, csv_path, line), {"person": person}, split)
        for line, name, person in people
        if person is not None
    ]


def clean_labels_named(spec: str | None, default: list[Path] | None = None) -> list[Path]:
    """The cleaned-label files a --clean-labels value names (eval and score alike): None gives `default`
    (eval: those beside a published layout's flag CSVs), 'none' no file, else the comma-separated files or
    folders holding them."""
    if spec is None:
        return list(default or [])
    if spec.strip().lower() == "none":
        return []
    paths = [Path(part.strip()) for part in spec.split(",") if part.strip()]
    if not paths:
        raise UserError(
            f"{setting('clean_labels')} {spec!r} names no file; give cleaned label CSVs or folders, or none"
        )
    return clean_files(paths)


def clean_files(paths: list[Path]) -> list[Path]:
    """The cleaned-label files named: each a file, or a folder holding wv_{split}_cleaned.csv files."""
    found = []
    for path in paths:
        if path.is_dir():
            held = sorted(path.glob(CLEAN_FILE.format(split="*")))
            if not held:
                raise UserError(f"folder {path} holds no {CLEAN_FILE}; name the cleaned label file itself")
            found += held
        else:
            found.append(check_regular(path, LABELS))
    return found


def join_clean_labels(dataset: Dataset, files: list[Path]) -> Dataset:
    """The dataset with each listed row's person label replaced by its clean_label (-2: non-person;
    -1: the row is left out); rows the files do not list keep the flag CSV's label."""
    if not files:
        return dataset
    values: dict[str, str] = {}
    digest = hashlib.sha256(dataset.csv_sha256.encode())
    for path in files:
        values |= clean_values(path)
        digest.update(hashlib.sha256(read_bytes(path, LABELS)).hexdigest().encode())
    if not any(s.id in values for s in dataset.samples):
        raise UserError(
            f"no file of {', '.join(str(f) for f in files)} is in {dataset.name}; are they for the same dataset?"
        )
    samples, changed, depictions, excluded = [], 0, 0, 0
    for sample in dataset.samples:
        value = values.get(sample.id)
        if value is None:
            samples.append(sample)
            continue
        person = CLEAN_PERSON[value]
        depictions += value == "-2"
        if person is None:
            excluded += 1
            continue
        changed += person != sample.person
        samples.append(Sample(sample.id, sample.image_path, sample.flags | {"person": person}, sample.split))
    clean = CleanLabels(
        files=tuple(str(f) for f in files),
        sha256=digest.hexdigest(),
        changed=changed,
        depictions=depictions,
        excluded=excluded,
        not_listed=sum(1 for s in dataset.samples if s.id not in values),
    )
    return dataclasses.replace(
        dataset,
        name=f"{dataset.name} (clean labels)",
        csv_sha256=clean.sha256,
        samples=tuple(samples),
        clean_labels=clean,
    )

"""Benchmark datasets in the Wake Vision label layout: flag CSVs (one per split) plus images.

Sources:
- `demo`: the demo set, built offline on first use (docs/demo_dataset.md);
- a folder in the published Wake Vision layout: `wake_vision_test.csv`, `wake_vision_validation.csv`
  (the 20 columns), images in `images/`, beside the CSVs, or in the published `*.tar.gz` shards
  (the needed images are extracted once into the cache). The published cleaned labels
  `wv_{split}_cleaned.csv` beside a split's flag CSV are put over its person column; without the
  flag CSV they are the split's labels on their own (overall subsets only);
- any folder with `labels.csv` and `images/`, in any layout of harness/eval/label_files.py (one split,
  called `test`).
`--clean-labels` names cleaned-label files to put over any flag dataset's labels instead ('none': none).
"""

import dataclasses
import hashlib
import json
import os
import tarfile
import zlib
from pathlib import Path

import pydantic

from harness.console import notice
from harness.digits import int_or_none
from harness.errors import UserError
from harness.eval.demo_dataset import (
    CHECKSUMS,
    COLUMNS,
    RECIPE_VERSION,
    SYNTHETIC,
    build_demo_dataset,
    is_intact,
)
from harness.eval.label_files import (
    CLEAN_FILE,
    clean_labels_named,
    csv_header,
    inside,
    is_label_only,
    join_clean_labels,
    label_only_samples,
    read_rows,
)
from harness.paths import cache_dir
from harness.reading import (
    CACHE_INDEX,
    IMAGE,
    JSON_STREAM,
    LABELS,
    SHARD,
    SPLIT,
    STRICT,
    check_regular,
    load_json,
    open_binary,
    read_bytes,
    read_json,
    read_text,
)
from harness.samples import DEMO, Dataset, Sample

PUBLISHED_SPLITS = {"test": "wake_vision_test.csv", "validation": "wake_vision_validation.csv"}
# Written by harness/eval/hf_source.py into the folder it streams: {"whole_pools": false} without --pools.
STREAM_NOTE = "streamed.json"


class StreamNote(pydantic.BaseModel):
    """What harness/eval/hf_source.py notes in the folder it streams."""

    model_config = STRICT
    source: str
    whole_pools: bool = True
    seed: int | None = None


def _whole_pools(folder: Path) -> bool:
    note = folder / STREAM_NOTE
    return load_json(note, JSON_STREAM, StreamNote).whole_pools if note.exists() else True


_checked_demo: set[Path] = set()  # demo sets this process found intact: one check a process


def _demo_root() -> Path:
    """The demo set, built on first use, and built again (with a notice) when a file of it changed."""
    root = cache_dir() / "datasets" / RECIPE_VERSION
    if not (root / "labels.csv").is_file() or not (root / CHECKSUMS).is_file():  # none yet, or built before them
        build_demo_dataset(root)
    elif root not in _checked_demo and not is_intact(root):
        notice(f"harness: cache entry {root} was damaged (checksum); rebuilding it")
        build_demo_dataset(root)
    _checked_demo.add(root)
    return root


FLAG_VALUES = (1, 0, -1)  # -1: unknown, as in the far-only rows (person -1, harness/eval/subsets.py)


def _samples(csv_path: Path, image_dir: Path, split: str) -> list[Sample]:
    header = csv_header(csv_path)
    if is_label_only(header):
        return label_only_samples(csv_path, header, image_dir, split)
    samples = []
    fix = "; or give labels alone: filename,label (0/1) or the cleaned filename,original_label,clean_label"
    for line, row in read_rows(csv_path, COLUMNS, "the Wake Vision columns", fix):
        flags = {c: int_or_none(row[c]) for c in COLUMNS[1:]}  # ASCII: an Arabic-Indic one is no flag
        bad = next((c for c in COLUMNS[1:] if flags[c] not in FLAG_VALUES), None)
        if bad is not None:
            raise UserError(
                f"{csv_path} line {line}: {bad} is {row[bad].strip()!r} for {row['filename']}; "
                "a flag is 1 (yes), 0 (no) or -1 (unknown: the far-only rows), in ASCII digits"
            )
        samples.append(Sample(row["filename"], inside(image_dir, row["filename"], csv_path, line), flags, split))
    return samples


def _split_of(csv_path: Path) -> str:
    """A SPLIT file beside the CSV names it, else a published file name, else `test`."""
    marker = csv_path.parent / "SPLIT"
    if marker.exists():
        split = read_text(marker, SPLIT).strip()
        if not split or len(split.splitlines()) > 1:
            raise UserError(f"split file {marker} should hold one split name (test or validation) on one line")
        return split
    named = {CLEAN_FILE.format(split=split): split for split in PUBLISHED_SPLITS}
    named |= {name: split for split, name in PUBLISHED_SPLITS.items()}
    return named.get(csv_path.name, "test")


def _read(name: str, csv_path: Path, image_dir: Path) -> Dataset:
    """One label CSV: one split (`_split_of`)."""
    split = _split_of(csv_path)
    samples = tuple(_samples(csv_path, image_dir, split))
    return Dataset(name, csv_path, _sha256(csv_path), samples, (split,), whole_pools=_whole_pools(csv_path.parent))


def _sha256(path: Path) -> str:
    return hashlib.sha256(read_bytes(path, LABELS)).hexdigest()


def read_labels(csv_path: Path) -> Dataset:
    """A label CSV on its own (images beside it in images/, if anyone asks for them)."""
    check_regular(csv_path, LABELS)
    return _read(Path(csv_path).stem, Path(csv_path), Path(csv_path).parent / "images")


EXTRACTED_SUMS = "checksums.json"  # in an extraction folder: name -> [size, mtime_ns, sha256] of each image


def _extract_from_shards(shards: list[Path], wanted: set[str], into: Path) -> None:
    """Stream through the published .tar.gz shards once, keeping only the images the run needs (and, in their
    place, any an earlier run extracted that no longer matches its checksum)."""
    into.mkdir(parents=True, exist_ok=True)
    sums = _intact_extractions(into)
    missing = {name for name in wanted if not (into / name).is_file()}
    for shard in shards:
        if not missing:
            break
        try:
            with open_binary(shard, SHARD) as handle:
                if not os.fstat(handle.fileno()).st_size:
                    raise UserError(f"dataset shard {shard} is empty; download it again or move it out of the folder")
                with tarfile.open(fileobj=handle, mode="r|gz") as archive:
                    _extract_members(archive, missing, into, sums)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:  # gzip's BadGzipFile is an OSError
            raise UserError(
                f"dataset shard {shard} is not a readable .tar.gz ({exc or type(exc).__name__}); "
                "download it again or move it out of the folder"
            ) from None
        finally:
            _write_sums(into, sums)


def _intact_extractions(into: Path) -> dict[str, list]:
    """The checksums of the images extracted before, each image whose size or time changed hashed again: one
    that no longer matches is removed (with a notice), to be extracted again."""
    try:
        sums = read_json(into / EXTRACTED_SUMS, CACHE_INDEX)
    except UserError:  # missing or damaged: every image is extracted again
        return {}
    kept = {}
    for name, record in sums.items() if isinstance(sums, dict) else ():
        if not (isinstance(record, list) and len(record) == 3):
            continue  # a damaged record: its image is kept but no longer checked
        size, mtime, digest = record
        path = into / Path(name).name
        try:
            info = path.stat()
        except OSError:
            continue
        if (info.st_size, info.st_mtime_ns) != (size, mtime):
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                notice(f"harness: cache entry {path} was damaged (checksum); rebuilding it")
                path.unlink()
                continue
            size, mtime = info.st_size, info.st_mtime_ns
        kept[path.name] = [size, mtime, digest]
    return kept


def _write_sums(into: Path, sums: dict[str, list]) -> None:
    partial = into / f".{EXTRACTED_SUMS}.{os.getpid()}.partial"
    partial.write_text(json.dumps(sums))
    partial.replace(into / EXTRACTED_SUMS)


def _extract_members(archive: tarfile.TarFile, missing: set[str], into: Path, sums: dict[str, list]) -> None:
    for member in archive:
        if not missing:
            return
        name = Path(member.name).name  # the base name only: a member's folders never reach outside `into`
        if member.isfile() and name in missing and member.size <= IMAGE.max_bytes:
            data = archive.extractfile(member).read()
            try:
                partial = into / f".{name}.partial"
                partial.write_bytes(data)
                partial.replace(into / name)
            except OSError as exc:
                raise UserError(f"cannot write the extracted image {into / name} ({exc.strerror})") from None
            info = (into / name).stat()
            sums[name] = [info.st_size, info.st_mtime_ns, hashlib.sha256(data).hexdigest()]
            missing.discard(name)


def _published(root: Path, splits: list[str]) -> tuple[Dataset, list[Path]]:
    """The splits' flag CSVs (or, for a split without one, its cleaned labels alone), and the cleaned-label
    files beside the flag CSVs."""
    files = {split: (root / name, root / CLEAN_FILE.format(split=split)) for split, name in PUBLISHED_SPLITS.items()}
    present = [split for split, pair in files.items() if any(path.exists() for path in pair)]
    unknown = [s for s in splits if s not in present]
    if unknown:
        raise UserError(f"unknown split {', '.join(unknown)} in {root}; available splits: {', '.join(present)}")
    chosen = splits or (["test"] if "test" in present else present[:1])
    shards = sorted(root.glob("*.tar.gz"))
    image_dir = root / "images" if (root / "images").is_dir() else root
    digest = hashlib.sha256()
    samples: list[Sample] = []
    beside: list[Path] = []
    read: list[Path] = []
    for split in chosen:
        flags_csv, cleaned_csv = files[split]
        csv_path = flags_csv if flags_csv.exists() else cleaned_csv
        read.append(csv_path)
        digest.update(_sha256(csv_path).encode())
        samples += _samples(csv_path, image_dir, split)
        if csv_path == flags_csv and cleaned_csv.exists():
            beside.append(cleaned_csv)
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise UserError(f"{sample.id} is in more than one of the splits {', '.join(chosen)}; choose one split")
        seen.add(sample.id)
    if shards and not any((image_dir / s.id).is_file() for s in samples[:20]):
        image_dir = cache_dir() / "datasets" / "extracted" / digest.hexdigest()[:16]
        samples = [Sample(s.id, image_dir / s.id, s.flags, s.split) for s in samples]
        _extract_from_shards(shards, {s.id for s in samples}, image_dir)
    name = f"{root.name} ({'+'.join(chosen)})"
    dataset = Dataset(name, read[0], digest.hexdigest(), tuple(samples), tuple(chosen), whole_pools=_whole_pools(root))
    return dataset, beside


def _is_published(root: Path) -> bool:
    names = [*PUBLISHED_SPLITS.values(), *(CLEAN_FILE.format(split=split) for split in PUBLISHED_SPLITS)]
    return any((root / name).exists() for name in names)  # not a file: its reader names what it is


def load_dataset(spec: str = DEMO, splits: list[str] | None = None, clean_labels: str | None = None) -> Dataset:
    """'demo', a folder in the published Wake Vision layout, or a folder with labels.csv and images/.
    `clean_labels`: cleaned-label files or folders (comma-separated) to put over the labels; None: those
    beside a published layout's flag CSVs; 'none': no cleaned labels."""
    splits = splits or []
    beside: list[Path] = []
    if spec == DEMO:
        root = _demo_root()
        demo = _read(f"{DEMO} ({RECIPE_VERSION})", root / "labels.csv", root / "images")
        dataset = dataclasses.replace(demo, synthetic=SYNTHETIC)
    else:
        root = Path(spec)
        if _is_published(root):
            dataset, beside = _published(root, splits)
        elif not (root / "labels.csv").exists():
            raise UserError(
                f"dataset {spec!r} not found: pass 'demo', a folder with wake_vision_test.csv "
                "(the published layout) or a folder holding labels.csv and images/"
            )
        else:
            dataset = _read(root.name, root / "labels.csv", root / "images")
    unknown = [s for s in splits if s not in dataset.splits]
    if unknown:
        raise UserError(f"unknown split {', '.join(unknown)}; {dataset.name} has: {', '.join(dataset.splits)}")
    return join_clean_labels(dataset, clean_labels_named(clean_labels, beside))


def require_flags(dataset: Dataset, subsets) -> None:
    """A fine-grained subset needs its flag on every sample: labels alone give the overall subsets only."""
    for subset in subsets:
        if subset.flag is not None and any(subset.flag not in s.flags for s in dataset.samples):
            raise UserError(
                f"subset {subset.name} needs the fine-grained flag {subset.flag}, which the labels of "
                f"{dataset.name} lack (a cleaned or binary label file holds labels only): add the split's 20-column "
                "flag CSV (wake_vision_{split}.csv) or choose all, test or validation"
            )


def describe_sources() -> list[dict]:
    """What `harness datasets` lists."""
    demo = cache_dir() / "datasets" / RECIPE_VERSION
    return [
        {
            "name": DEMO,
            "kind": f"demo set, built offline on first use ({SYNTHETIC})",
            "location": str(demo),
            "ready": (demo / "labels.csv").is_file(),
        },
        {
            "name": "FOLDER",
            "kind": "published Wake Vision layout: wake_vision_{test,validation}.csv and/or the cleaned "
            "wv_{test,validation}_cleaned.csv + images/ or *.tar.gz shards",
            "location": "any path",
            "ready": None,
        },
        {
            "name": "FOLDER",
            "kind": "labels.csv (20 columns, cleaned labels, or filename,label) + images/",
            "location": "any path",
            "ready": None,
        },
        {
            "name": "hf:Harvard-Edge/Wake-Vision",
            "kind": "Wake Vision validation/test streamed from the Hugging Face hub (online; the datasets extra)",
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

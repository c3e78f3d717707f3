"""Wake Vision from the Hugging Face hub (Harvard-Edge/Wake-Vision), streamed: the subset filter is
applied while streaming, so `--subset distance_far --limit 200` reads only as far as it must.
Needs the `datasets` package and network access to the hub; everything else in harness is offline.
"""

import csv
import hashlib
import importlib
from pathlib import Path

from harness.errors import UserError
from harness.eval.demo_dataset import COLUMNS
from harness.paths import cache_dir

PREFIX = "hf:"
DEFAULT_REPO = "Harvard-Edge/Wake-Vision"
HF_SPLITS = ("validation", "test")


def _flags(row: dict) -> dict[str, int]:
    """The hub stores flags as ClassLabel ints, -1 where missing: the CSV layout's values."""
    return {column: int(row[column]) for column in COLUMNS[1:]}


def stream_to_folder(spec: str, split: str, subsets, limit: int | None) -> Path:
    """Stream the split, keep rows in any of `subsets`, write images/ and labels.csv; returns the folder."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError as exc:
        raise UserError("streaming from the Hugging Face hub needs `pip install datasets` (and network)") from exc
    if split not in HF_SPLITS:
        raise UserError(f"unknown split {split} for {spec}; the hub has: {', '.join(HF_SPLITS)}")
    repo = spec.removeprefix(PREFIX) or DEFAULT_REPO
    key = hashlib.sha256(f"{repo}|{split}|{[s.name for s in subsets]}|{limit}".encode()).hexdigest()[:16]
    folder = cache_dir() / "datasets" / "hf" / key
    if (folder / "labels.csv").is_file():
        return folder
    try:
        rows = datasets.load_dataset(repo, split=split, streaming=True)
    except Exception as exc:  # the hub client raises many kinds of errors when offline
        raise UserError(
            f"cannot stream {repo} from the Hugging Face hub ({type(exc).__name__}); are you online?"
        ) from exc
    from harness.samples import Sample

    partial = folder.with_name(folder.name + ".partial")
    (partial / "images").mkdir(parents=True, exist_ok=True)
    kept = []
    for row in rows:
        sample = Sample(row["filename"], Path(row["filename"]), _flags(row), split)
        if not any(subset.contains(sample) for subset in subsets):
            continue
        row["image"].convert("RGB").save(partial / "images" / row["filename"], quality=95)
        kept.append({"filename": row["filename"], **sample.flags})
        if limit is not None and len(kept) >= limit:
            break
    with open(partial / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(kept)
    (partial / "SPLIT").write_text(split + "\n")
    partial.rename(folder)
    return folder

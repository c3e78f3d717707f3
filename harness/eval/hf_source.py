"""Wake Vision from the Hugging Face hub (Harvard-Edge/Wake-Vision), streamed: the subset filter is
applied while streaming, from every requested split. With pools, every member of the requested subsets
and every row of their F1 negative pools is kept (each split is read to its end anyway, and the run's
seeded stratified draw, harness/eval/sampling.py, then draws from the whole subset); without pools, the
first `--limit` members of each subset in a stream shuffled by the seed, and the folder is marked as
holding no whole pool (no F1 over it). The folder is cached. Needs the `datasets` package and network
access to the hub; everything else in harness is offline.
"""

import csv
import hashlib
import json
import os
import shutil
from pathlib import Path

from harness import reading
from harness.console import notice
from harness.errors import UserError
from harness.eval.dataset import PUBLISHED_SPLITS, STREAM_NOTE
from harness.eval.demo_dataset import COLUMNS
from harness.extras import require
from harness.paths import cache_dir

PREFIX = "hf:"
DEFAULT_REPO = "Harvard-Edge/Wake-Vision"
HF_SPLITS = ("validation", "test")
# Rows the hub's shuffle buffer holds (its default; the hub also shuffles the order of its shards).
SHUFFLE_BUFFER = 1000


def _flags(row: dict) -> dict[str, int]:
    """The hub stores flags as ClassLabel ints, -1 where missing: the CSV layout's values."""
    return {column: int(row[column]) for column in COLUMNS[1:]}


# Changes when what a folder holds for the same request changes (v3: every member with pools, a
# seeded shuffled stream and the stream note without).
LAYOUT = "v3"


def _kept(rows, split: str, subsets, limit: int | None, pools: bool, images: Path) -> list[dict]:
    """With `pools`, the split's rows in a subset or in a subset's F1 negative pool (all of them: F1 is
    only given over a whole pool, so the split is read to its end); else the first `limit` members of each."""
    from harness.samples import Sample

    limit = None if pools else limit
    members = dict.fromkeys((s.name for s in subsets), 0)
    kept = []
    for row in rows:
        sample = Sample(row["filename"], Path(row["filename"]), _flags(row), split)
        wanted = [s.name for s in subsets if s.contains(sample) and (limit is None or members[s.name] < limit)]
        if wanted or (pools and any(s.is_negative(sample) for s in subsets)):
            for name in wanted:
                members[name] += 1
            row["image"].convert("RGB").save(images / row["filename"], quality=95)
            kept.append({"filename": row["filename"], **sample.flags})
        if limit is not None and min(members.values()) >= limit:
            break  # every subset has its members and no pool is wanted: nothing further is kept
    return kept


CHECKSUMS = "checksums.json"  # sha256 of the folder's label CSVs and stream note, written with them


def _label_checksums(folder: Path) -> dict[str, str]:
    files = sorted([*folder.glob("*.csv"), folder / STREAM_NOTE])
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files if path.is_file()}


def _labels_intact(folder: Path) -> bool:
    """The label CSVs and note as written (a folder streamed before checksums were written counts as intact)."""
    if not os.path.lexists(folder / CHECKSUMS):
        return True
    try:
        written = reading.read_json(folder / CHECKSUMS, reading.CACHE_INDEX)
    except UserError:
        return False
    return written == _label_checksums(folder)


def stream_to_folder(
    spec: str, splits: list[str], subsets, limit: int | None, pools: bool = True, seed: int = 0
) -> Path:
    """Stream each split, keep what `_kept` keeps, write images/, one flag CSV per split in the published
    layout (harness/eval/dataset.py reads it) and the stream note; returns the folder. Without `pools`
    and with a limit, the stream is shuffled by `seed` (a seeded random sample of each subset)."""
    datasets = require("datasets", "streaming from the Hugging Face hub (online)")
    unknown = [split for split in splits if split not in HF_SPLITS]
    if unknown:
        raise UserError(f"unknown split {', '.join(unknown)} for {spec}; the hub has: {', '.join(HF_SPLITS)}")
    repo = spec.removeprefix(PREFIX) or DEFAULT_REPO
    drawn = not pools and limit is not None  # only then do the limit and the seed change what is kept
    kept_by = f"{limit}|{seed}" if drawn else ""
    request = f"{LAYOUT}|{repo}|{sorted(set(splits))}|{sorted(s.name for s in subsets)}|{pools}|{kept_by}"
    folder = cache_dir() / "datasets" / "hf" / hashlib.sha256(request.encode()).hexdigest()[:16]
    if all((folder / PUBLISHED_SPLITS[split]).is_file() for split in splits):
        if _labels_intact(folder):
            return folder
        notice(f"harness: cache entry {folder} was damaged (checksum); rebuilding it")
        shutil.rmtree(folder)
    partial = folder.with_name(folder.name + ".partial")
    (partial / "images").mkdir(parents=True, exist_ok=True)
    for split in dict.fromkeys(splits):
        try:
            rows = datasets.load_dataset(repo, split=split, streaming=True)
        except Exception as exc:  # the hub client raises many kinds of errors when offline
            raise UserError(
                f"cannot stream {repo} from the Hugging Face hub ({type(exc).__name__}); are you online?"
            ) from exc
        if drawn and hasattr(rows, "shuffle"):
            rows = rows.shuffle(seed=seed, buffer_size=SHUFFLE_BUFFER)
        kept = _kept(rows, split, subsets, limit, pools, partial / "images")
        with open(partial / PUBLISHED_SPLITS[split], "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(kept)
    note = {"source": f"{PREFIX}{repo}", "whole_pools": pools, "seed": seed if drawn else None}
    (partial / STREAM_NOTE).write_text(json.dumps(note) + "\n")
    (partial / CHECKSUMS).write_text(json.dumps(_label_checksums(partial)) + "\n")
    partial.rename(folder)
    return folder

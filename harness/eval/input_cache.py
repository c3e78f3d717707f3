"""The input cache on disk: each run's prepared input tensors, stored in their smallest exact form.

An entry is two files under <cache>/tensors/: `<key>.bin`, the tensors back to back as raw rows, and
`<key>.json`, its index (sample ids in order, files that could not be read, the stored and the tensor
dtype, the tensor shape, the rows' BLAKE2b checksum). The index is written last: a present index means a
complete entry. The checksum is taken as the rows are written and checked once when a process first opens
the entry: rows that changed on disk (flipped bits) are dropped, with a notice, and decoded again.

Rows are stored as uint8 when every value is an integer in 0..255 (an image model that takes 0..255
as float32 needs a quarter of the bytes), as int8 when in -128..127, and so on, and converted to the
tensor's dtype when read. A row is read with one pread when it is sent, never mapped: the run's
memory does not grow with the number of samples, and no page of the file stays in the process.
"""

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.console import notice
from harness.errors import UserError
from harness.paths import cache_dir
from harness.reading import CACHE_INDEX, read_text

FORMAT = 3  # entries of older formats (2: no checksum; 1: <key>.npy) are not read, and pruned
# Narrower forms tried for a tensor's values, in order: the first that holds every value exactly is kept.
ABANDONED_AFTER_S = 3600  # a partial write older than this is left over from a run that died
NARROW_DTYPES = tuple(np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "float16"))


def tensors_dir() -> Path:
    return cache_dir() / "tensors"


def narrowest_exact(values: np.ndarray, at_least: np.dtype | None = None) -> np.dtype:
    """The smallest dtype that holds `values` exactly (and everything `at_least` holds), else their own."""
    for dtype in NARROW_DTYPES:
        if dtype.itemsize >= values.dtype.itemsize:
            break
        if at_least is not None and not np.can_cast(at_least, dtype, "safe"):
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            narrowed = values.astype(dtype)
        if np.array_equal(narrowed.astype(values.dtype), values):
            return dtype
    return values.dtype


@dataclass(frozen=True)
class CacheIndex:
    ids: list[str]
    unreadable: list[tuple[str, str]]
    stored: np.dtype  # how the rows are on disk
    dtype: np.dtype  # the tensor's dtype, as read back
    shape: tuple[int, ...]  # one tensor's
    checksum: str  # BLAKE2b of the rows file, as written

    def as_json(self) -> dict:
        return {
            "format": FORMAT,
            "ids": self.ids,
            "unreadable": self.unreadable,
            "stored": self.stored.name,
            "dtype": self.dtype.name,
            "shape": list(self.shape),
            "blake2b": self.checksum,
        }

    @staticmethod
    def parse(data: dict) -> "CacheIndex":
        return CacheIndex(
            ids=list(data["ids"]),
            unreadable=[tuple(u) for u in data["unreadable"]],
            stored=np.dtype(data["stored"]),
            dtype=np.dtype(data["dtype"]),
            shape=tuple(data["shape"]),
            checksum=str(data["blake2b"]),
        )


def read_index(path: Path) -> CacheIndex | None:
    """An entry's index, or None when it is of another format, damaged, or its rows are missing or short."""
    try:
        data = json.loads(read_text(path, CACHE_INDEX))
        if data.get("format") != FORMAT:
            return None
        index = CacheIndex.parse(data)
        rows = path.with_suffix(".bin").stat().st_size
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, UserError):
        return None
    expected = len(index.ids) * int(np.prod(index.shape, dtype=np.int64)) * index.stored.itemsize
    return index if rows == expected else None


class StoredTensors:
    """The tensors of one cache entry, read a row at a time: `store[i]` is tensor i in the tensor's dtype."""

    def __init__(self, rows: Path, index: CacheIndex):
        self.path, self.index = rows, index
        self._row_items = int(np.prod(index.shape, dtype=np.int64))
        self._row_bytes = self._row_items * index.stored.itemsize
        self._fd: int | None = None

    def __len__(self) -> int:
        return len(self.index.ids)

    def __getitem__(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self):
            raise IndexError(i)
        if self._fd is None:  # pread keeps no file offset: the board threads and the reference thread share it
            self._fd = os.open(self.path, os.O_RDONLY)
        raw = os.pread(self._fd, self._row_bytes, i * self._row_bytes)
        if len(raw) != self._row_bytes:
            raise OSError(f"{self.path} is cut short at tensor {i}; `harness cache prune --all` clears it")
        row = np.frombuffer(raw, self.index.stored).reshape(self.index.shape)
        return row.astype(self.index.dtype)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


class EntryWriter:
    """Appends blocks of prepared tensors to a new entry in their narrowest exact form; a block that needs a
    wider form widens the rows written so far. Nothing is visible under the key until `finish`."""

    def __init__(self, key: str, dtype: np.dtype, shape: tuple[int, ...]):
        self.folder = tensors_dir()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.key, self.dtype, self.shape = key, np.dtype(dtype), tuple(shape)
        self._partial = self.folder / f".{key}.{os.getpid()}.partial.bin"
        self._file = open(self._partial, "wb")  # noqa: SIM115 - closed in finish or discard
        self._digest = checksum()
        self.stored: np.dtype | None = None
        self.rows = 0

    def append(self, block: np.ndarray) -> None:
        if not len(block):
            return
        wanted = narrowest_exact(block, self.stored)
        if self.stored is None:
            self.stored = wanted
        elif wanted.itemsize > self.stored.itemsize or not np.can_cast(self.stored, wanted, "safe"):
            self._widen(wanted)
        with np.errstate(invalid="ignore", over="ignore"):
            self._write(np.ascontiguousarray(block.astype(self.stored)).tobytes())
        self.rows += len(block)

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._digest.update(data)

    def _widen(self, wanted: np.dtype) -> None:
        """Rewrite the rows so far in `wanted`, a block of rows at a time."""
        self._file.close()
        wider = self._partial.with_name(self._partial.name + ".wide")
        row_items = int(np.prod(self.shape, dtype=np.int64))
        self._digest = checksum()
        with open(self._partial, "rb") as narrow, open(wider, "wb") as out:
            while chunk := narrow.read(256 * row_items * self.stored.itemsize):
                widened = np.frombuffer(chunk, self.stored).astype(wanted).tobytes()
                out.write(widened)
                self._digest.update(widened)
        wider.replace(self._partial)
        self._file = open(self._partial, "ab")  # noqa: SIM115
        self.stored = wanted

    def finish(self, ids: list[str], unreadable: list[tuple[str, str]]) -> CacheIndex:
        self._file.close()
        stored = self.stored or self.dtype
        index = CacheIndex(ids, unreadable, stored, self.dtype, self.shape, self._digest.hexdigest())
        rows = self.folder / f"{self.key}.bin"
        self._partial.replace(rows)
        partial_index = self.folder / f".{self.key}.{os.getpid()}.partial.json"
        partial_index.write_text(json.dumps(index.as_json()))
        partial_index.replace(self.folder / f"{self.key}.json")  # the index last: a present index means complete
        return index

    def discard(self) -> None:
        self._file.close()
        self._partial.unlink(missing_ok=True)


def checksum():
    return hashlib.blake2b(digest_size=16)


def file_checksum(path: Path) -> str:
    digest = checksum()
    with open(path, "rb") as rows:
        while chunk := rows.read(4 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


# Entries this process has checked, by key, path, size and modification time: one check a process.
_checked: set[tuple] = set()


def _intact(key: str, rows: Path, index: CacheIndex) -> bool:
    info = rows.stat()
    seen = (key, str(rows), info.st_size, info.st_mtime_ns, index.checksum)
    if seen not in _checked:
        if file_checksum(rows) != index.checksum:
            return False
        _checked.add(seen)
    return True


def open_entry(key: str) -> StoredTensors | None:
    """The cached tensors under `key`, marked as used now (for `harness cache prune`), or None. An entry whose
    rows no longer match their checksum is removed, with a notice, so that the caller builds it again."""
    index_path = tensors_dir() / f"{key}.json"
    index = read_index(index_path) if index_path.is_file() else None
    if index is None:
        return None
    rows = index_path.with_suffix(".bin")
    if not _intact(key, rows, index):
        notice(f"harness: cache entry {key} was damaged (checksum); rebuilding it")
        index_path.unlink(missing_ok=True)  # the index first: an entry without one is never read
        rows.unlink(missing_ok=True)
        return None
    os.utime(index_path)
    return StoredTensors(rows, index)


@dataclass(frozen=True)
class CacheEntry:
    """One entry as `harness cache` lists it."""

    key: str
    samples: int | None  # None: not readable in this format (stale or damaged)
    stored: str | None
    dtype: str | None
    bytes: int
    last_used: float  # seconds since the epoch
    writing: bool = False  # only a partial write: a run's that is under way, or one that died

    @property
    def bytes_per_sample(self) -> float | None:
        return self.bytes / self.samples if self.samples else None


def list_entries() -> list[CacheEntry]:
    """Every entry, newest use first; files of older formats and abandoned partial writes appear as entries
    of unknown samples."""
    folder = tensors_dir()
    if not folder.is_dir():
        return []
    files: dict[str, list[Path]] = {}
    for path in folder.iterdir():
        key = path.name.lstrip(".").split(".")[0]
        files.setdefault(key, []).append(path)
    entries = []
    for key, paths in files.items():
        index_path = folder / f"{key}.json"
        index = read_index(index_path) if index_path in paths else None
        sizes = [p.stat().st_size for p in paths if p.is_file()]
        times = [(index_path if index else p).stat().st_mtime for p in paths if p.is_file()]
        entries.append(
            CacheEntry(
                key=key,
                samples=len(index.ids) if index else None,
                stored=index.stored.name if index else None,
                dtype=index.dtype.name if index else None,
                bytes=sum(sizes),
                last_used=max(times, default=0.0),
                writing=index is None and all(p.name.startswith(".") for p in paths),
            )
        )
    return sorted(entries, key=lambda e: -e.last_used)


def prune(older_than_days: float | None, everything: bool, dry_run: bool = False) -> list[CacheEntry]:
    """Removes entries unused for `older_than_days`, every entry of an older format or damaged, and partial
    writes left by a run that died (or, with `everything`, all); returns them."""
    now = time.time()
    cutoff = now - older_than_days * 86400 if older_than_days is not None else None
    removed = [
        entry
        for entry in list_entries()
        if everything
        or (entry.samples is None and not entry.writing)
        or (entry.writing and entry.last_used < now - ABANDONED_AFTER_S)  # not a write under way
        or (cutoff is not None and entry.last_used < cutoff)
    ]
    if not dry_run:
        folder = tensors_dir()
        for entry in removed:
            for path in folder.glob(f"*{entry.key}*"):
                if path.name.lstrip(".").split(".")[0] == entry.key:
                    path.unlink(missing_ok=True)
    return removed

"""The eval journal: one JSON line per finished sample, appended as results arrive, in the run's partial
folder. A run killed at any point (kill -9 included) is resumed from it: `harness eval --resume RUN`.
Every ROWS_PER_GROUP lines become one Parquet row group under rows/ (written whole, then renamed into
place) and the lines are cut off, so neither the file nor a resume's reading of it grows with the run:
what is done is the groups' index and id columns and the lines since the last group.

Beside it, `origin.json` records what the journaled outputs came from (model, labels, input tensors,
firmware) and when the run started; a resume with anything else changed is refused."""

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import UserError

JOURNAL = "journal.jsonl"
ROWS = "rows"  # the row groups: rows/group-00000.parquet, …
ROWS_PER_GROUP = 256
HOST_COLUMN = "host."  # + a reference's name: its output bytes
REQUEST = "request.json"  # the command-line settings the run was started with
ORIGIN = "origin.json"


def _is_hex(value) -> bool:
    try:
        bytes.fromhex(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_entry(entry) -> bool:
    """A whole entry as `harness eval` writes it; anything else is what is left of a damaged line."""
    try:
        return (
            type(entry["index"]) is int
            and entry["index"] >= 0
            and isinstance(entry["id"], str)
            and _is_hex(entry["device_output"])
            and all(type(entry[k]) is int for k in ("ticks", "tick_hz", "timer"))
            and all(isinstance(n, str) and _is_hex(out) for n, out in entry["host"].items())
            and (entry["instructions"] is None or type(entry["instructions"]) is int)
        )
    except (TypeError, KeyError, AttributeError):
        return False


def entries_table(entries: list[dict]) -> pa.Table:
    """Journal entries as one table: their fields as columns, outputs as bytes, each reference's as host.<name>."""
    hosts = sorted({name for entry in entries for name in entry["host"]})
    columns = {
        "index": pa.array([e["index"] for e in entries], pa.int64()),
        "id": pa.array([e["id"] for e in entries], pa.string()),
        "device_output": pa.array([bytes.fromhex(e["device_output"]) for e in entries], pa.binary()),
        "ticks": pa.array([e["ticks"] for e in entries], pa.int64()),
        "tick_hz": pa.array([e["tick_hz"] for e in entries], pa.int64()),
        "timer": pa.array([e["timer"] for e in entries], pa.int64()),
        "instructions": pa.array([e["instructions"] for e in entries], pa.int64()),
        "board": pa.array([e.get("board") for e in entries], pa.string()),
    }
    for name in hosts:
        columns[HOST_COLUMN + name] = pa.array([bytes.fromhex(e["host"][name]) for e in entries], pa.binary())
    return pa.table(columns)


class Journal:
    def __init__(self, folder: Path, rows_per_group: int = ROWS_PER_GROUP):
        self.path = folder / JOURNAL
        self.rows = folder / ROWS
        self.rows_per_group = rows_per_group
        self._fd: int | None = None
        self._lines: int | None = None  # whole entries in the file since the last group

    def load(self) -> dict[int, dict]:
        """The entries since the last row group, by sample index. A line that is cut short (by a kill or a
        short write, possibly with the next line glued on) is not an entry: those samples run again."""
        entries: dict[int, dict] = {}
        if not self.path.exists():
            return entries
        raw = self.path.read_bytes()
        whole = raw[: raw.rfind(b"\n") + 1]
        if len(whole) != len(raw):
            with open(self.path, "r+b") as f:  # drop the torn tail so appends start on a fresh line
                f.truncate(len(whole))
        for line in whole.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not _is_entry(entry):
                continue
            if entry["index"] in entries:
                raise UserError(f"{known_as(self.path)}: sample {entry['index']} appears twice; the journal is damaged")
            entries[entry["index"]] = entry
        return entries

    def groups(self) -> list[Path]:
        return sorted(self.rows.glob("group-*.parquet")) if self.rows.is_dir() else []

    def done(self) -> dict[int, str]:
        """Every journaled sample: index -> sample id, from the row groups and the lines since."""
        done: dict[int, str] = {}
        for group in self.groups():
            try:
                table = pq.read_table(group, columns=["index", "id"])
            except (pa.ArrowException, OSError) as exc:
                raise UserError(f"{known_as(group)} is damaged ({exc}); start a new run") from None
            done |= dict(zip(table.column("index").to_pylist(), table.column("id").to_pylist(), strict=True))
        lines = self.load()
        if any(index in done for index in lines):  # killed after a group was renamed, before the lines were cut
            lines = {i: e for i, e in lines.items() if i not in done}
            self._rewrite(list(lines.values()))
        self._lines = len(lines)
        return done | {index: entry["id"] for index, entry in lines.items()}

    def tables(self) -> Iterator[pa.Table]:
        """Every journaled sample as tables: each row group, then the lines since the last."""
        for group in self.groups():
            yield pq.read_table(group)
        if lines := self.load():
            yield entries_table(list(lines.values()))

    def append(self, entry: dict) -> None:
        """One whole line at the end of the file, or none: a write that fails part-way is cut back off."""
        if self._lines is None:
            self.done()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        start = os.fstat(self._fd).st_size
        written = 0
        try:
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except BaseException as exc:
            os.ftruncate(self._fd, start)
            if isinstance(exc, OSError):
                raise UserError(
                    f"cannot write {known_as(self.path)} ({exc.strerror}); the samples before are kept: "
                    "fix that, then `harness eval --resume RUN` goes on"
                ) from exc
            raise
        self._lines += 1
        if self._lines >= self.rows_per_group:
            self._seal_group()

    def _seal_group(self) -> None:
        """The lines become the next row group, renamed into place whole; then they are cut off."""
        entries = list(self.load().values())
        self.rows.mkdir(exist_ok=True)
        group = self.rows / f"group-{len(self.groups()):05d}.parquet"
        partial = group.with_name("." + group.name)
        try:
            pq.write_table(entries_table(entries), partial)
            with open(partial, "rb") as f:
                os.fsync(f.fileno())
            partial.replace(group)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise UserError(
                f"cannot write {known_as(group)} ({exc.strerror}); the samples before are kept: "
                "fix that, then `harness eval --resume RUN` goes on"
            ) from exc
        os.ftruncate(self._fd, 0)
        self._lines = 0

    def _rewrite(self, entries: list[dict]) -> None:
        self.close()
        text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_json_atomically(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def known_as(path: Path) -> str:
    """A file or folder of an unfinished run as the user knows it: the run id and its results folder, not the
    hidden .<run-id>.partial folder."""
    for part in (path, *path.parents):
        if part.name.startswith(".") and part.name.endswith(".partial"):
            inside = path.relative_to(part)
            what = f"unfinished run {part.name[1 : -len('.partial')]} in {part.parent}"
            return f"{inside} of {what}" if inside.parts else what
    return str(path)


def save_request(folder: Path, settings: dict) -> None:
    _write_json_atomically(folder / REQUEST, settings)


def load_request(folder: Path) -> dict:
    try:
        return json.loads((folder / REQUEST).read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{known_as(folder)} has no readable {REQUEST}; it is not a resumable run") from exc


def save_origin(folder: Path, origin: dict) -> None:
    _write_json_atomically(folder / ORIGIN, origin)


def load_origin(folder: Path) -> dict:
    try:
        origin = json.loads((folder / ORIGIN).read_text())
    except (OSError, ValueError) as exc:
        raise UserError(
            f"{known_as(folder)} has no readable {ORIGIN}, so its results cannot be matched to this model and data: "
            "start a new run"
        ) from exc
    try:
        datetime.fromisoformat(origin["started"])
    except (TypeError, KeyError, ValueError) as exc:
        raise UserError(f"{known_as(folder / ORIGIN)} is damaged: start a new run") from exc
    return origin


ORIGIN_NAMES = {
    "model_sha256": "model",
    "labels_sha256": "label file",
    "inputs_key": "input files",
    "firmware_build_id": "firmware",
}


def require_same_origin(recorded: dict, current: dict) -> None:
    """Every key of `current` must equal what the run recorded when it started."""
    changed = [name for name, value in current.items() if recorded.get(name) != value]
    if changed:
        what = " and ".join(ORIGIN_NAMES.get(name, name) for name in changed)
        details = "; ".join(f"{name} {_short(recorded.get(name))} -> {_short(current[name])}" for name in changed)
        raise UserError(f"the {what} changed since the run started ({details}): start a new run")


def _short(value) -> str:
    text = str(value)
    return text[:16] + "…" if len(text) > 16 else text

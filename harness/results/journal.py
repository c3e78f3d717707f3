"""The eval journal: one JSON line per finished sample, appended as results arrive, in the run's partial
folder. A run killed at any point (kill -9 included) is resumed from it: `harness eval --resume RUN`.
Every ROWS_PER_GROUP lines become one Parquet row group under rows/ (written whole, then renamed into
place) and the lines are cut off, so neither the file nor a resume's reading of it grows with the run:
what is done is the groups' index and id columns and the lines since the last group.

Beside it, `origin.json` records what the journaled outputs came from (model, labels, input tensors,
firmware) and when the run started; a resume with anything else changed is refused.

Everything a resume reads comes through harness/reading.py: a line cut short by a kill is run again, a line
that is whole JSON but no entry (or too deep, or holding NaN or a huge number) is named with its line."""

import json
import os
import shlex
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import UserError
from harness.files import write_text_atomically
from harness.reading import JOURNAL as JOURNAL_FILE
from harness.reading import ORIGIN as ORIGIN_FILE
from harness.reading import REQUEST as REQUEST_FILE
from harness.reading import ROW_GROUP, FileKind, open_binary, parse_json, read_bytes, read_json

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


def _is_count(value) -> bool:
    """A whole number a Parquet int64 column holds, not negative."""
    return type(value) is int and 0 <= value < 2**63


def _is_entry(entry) -> bool:
    """A whole entry as `harness eval` writes it."""
    try:
        return (
            _is_count(entry["index"])
            and isinstance(entry["id"], str)
            and _is_hex(entry["device_output"])
            and all(_is_count(entry[k]) for k in ("ticks", "tick_hz", "timer"))
            and all(isinstance(n, str) and _is_hex(out) for n, out in entry["host"].items())
            and (entry["instructions"] is None or _is_count(entry["instructions"]))
            and (entry.get("board") is None or isinstance(entry["board"], str))
        )
    except (TypeError, KeyError, AttributeError):
        return False


def _is_torn(text: str) -> bool:
    """A line a kill or a short write cut off (with the next line possibly glued on): not JSON at all."""
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


def resume_command(folder: Path) -> str:
    """The command that goes on with the unfinished run in its partial folder."""
    run_id = folder.name[1 : -len(".partial")]
    return f"harness eval --resume {shlex.quote(run_id)} --results {shlex.quote(str(folder.parent))}"


class WriteFailed(UserError):
    """A file of an unfinished run could not be written (a full disk, a quota): the samples before are kept."""

    def __init__(self, path: Path, reason: str):
        self.path, self.reason = path, reason
        folder = path.parent if path.name == JOURNAL else path.parent.parent
        super().__init__(
            f"cannot write {known_as(path)} ({reason}); the samples before are kept: free some space, then "
            f"`{resume_command(folder)}` goes on"
        )


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
        short write, possibly with the next line glued on) is not an entry: those samples run again. A whole
        line that is no entry was damaged by something else: it is named, with its line number."""
        entries: dict[int, dict] = {}
        if not self.path.exists():
            return entries
        raw = read_bytes(self.path, JOURNAL_FILE)
        whole = raw[: raw.rfind(b"\n") + 1]
        if len(whole) != len(raw):
            with open(self.path, "r+b") as f:  # drop the torn tail so appends start on a fresh line
                f.truncate(len(whole))
        for number, line in enumerate(whole.splitlines(), start=1):
            entry = self._entry(number, line)
            if entry is None:
                continue
            if entry["index"] in entries:
                raise self._damaged(number, f"holds sample {entry['index']} a second time")
            entries[entry["index"]] = entry
        return entries

    def _entry(self, number: int, line: bytes) -> dict | None:
        """The entry on a line, or None for a line cut short (its sample runs again)."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None  # cut inside a character
        try:
            entry = parse_json(text, JOURNAL_FILE, f"{self.path} line {number}")
        except UserError as exc:
            if _is_torn(text):
                return None
            raise UserError(f"{exc}; {self._fix(number)}") from None
        if not _is_entry(entry):
            raise self._damaged(number, "is not a journal entry (index, id, device_output, ticks, …)")
        return entry

    def _damaged(self, number: int, problem: str) -> UserError:
        return UserError(f"{JOURNAL_FILE.name} {self.path} line {number} {problem}; {self._fix(number)}")

    def _fix(self, number: int) -> str:
        return f"the journal is damaged: delete line {number} to run that sample again, or start a new run"

    def groups(self) -> list[Path]:
        return sorted(self.rows.glob("group-*.parquet")) if self.rows.is_dir() else []

    def done(self) -> dict[int, str]:
        """Every journaled sample: index -> sample id, from the row groups and the lines since."""
        done: dict[int, str] = {}
        for group in self.groups():
            table = _read_group(group, columns=["index", "id"])
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
            yield _read_group(group)
        if lines := self.load():
            yield entries_table(list(lines.values()))

    def append(self, entry: dict) -> None:
        """One whole line at the end of the file, or none: a write that fails part-way is cut back off."""
        if self._lines is None:
            self.done()
        if self._fd is None:
            # O_NOFOLLOW: the journal is the run's own file, never one a link names elsewhere
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        start = os.fstat(self._fd).st_size
        written = 0
        try:
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except BaseException as exc:
            os.ftruncate(self._fd, start)
            if isinstance(exc, OSError):
                raise WriteFailed(self.path, exc.strerror or str(exc)) from exc
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
            raise WriteFailed(group, exc.strerror or str(exc)) from exc
        os.ftruncate(self._fd, 0)
        self._lines = 0

    def _rewrite(self, entries: list[dict]) -> None:
        self.close()
        text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
        write_text_atomically(self.path, text, JOURNAL_FILE.name)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_group(group: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        with open_binary(group, ROW_GROUP) as handle:
            return pq.read_table(handle, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(f"{known_as(group)} is damaged ({exc}); start a new run") from None


def _write_json_atomically(path: Path, data: dict) -> None:
    write_text_atomically(path, json.dumps(data, indent=2) + "\n", "run file")


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


def _read_object(path: Path, kind: FileKind) -> dict:
    """A JSON object through harness/reading.py; a missing file or another value named as not resumable."""
    if not path.exists():
        raise UserError(f"{known_as(path.parent)} has no {path.name}; it is not a resumable run")
    value = read_json(path, kind)
    if not isinstance(value, dict):
        raise UserError(f"{kind.name} {known_as(path)} holds a {type(value).__name__}, not an object: start a new run")
    return value


def load_request(folder: Path) -> dict:
    return _read_object(folder / REQUEST, REQUEST_FILE)


def save_origin(folder: Path, origin: dict) -> None:
    _write_json_atomically(folder / ORIGIN, origin)


def load_origin(folder: Path) -> dict:
    if not (folder / ORIGIN).exists():
        raise UserError(
            f"{known_as(folder)} has no {ORIGIN}, so its results cannot be matched to this model and data: "
            "start a new run"
        )
    origin = _read_object(folder / ORIGIN, ORIGIN_FILE)
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

"""The eval journal: one JSON line per finished sample, appended as results arrive, in the run's partial
folder. A run killed at any point (kill -9 included) is resumed from it: `harness eval --resume RUN`.
Every ROWS_PER_GROUP lines become one Parquet row group under rows/ (written whole, then renamed into
place) and the lines are cut off, so neither the file nor a resume's reading of it grows with the run:
what is done is the groups' index and id columns and the lines since the last group.

Beside it, `origin.json` records what the journaled outputs came from (model, labels, input tensors,
firmware) and when the run started; a resume with anything else changed is refused.

Everything a resume reads comes through harness/reading.py: a line cut short by a kill is run again, a line
that is whole JSON but no entry (or too deep, or holding NaN or a huge number, or a field out of range) is named
with its line and field; only the last line may be cut short by a kill, any other line that is no UTF-8 or no
JSON is named with its line (and the byte)."""

import codecs
import errno
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
from harness.link.protocol import TickKind
from harness.names import has_acted_on
from harness.reading import JOURNAL as JOURNAL_FILE
from harness.reading import ORIGIN as ORIGIN_FILE
from harness.reading import PARQUET_ON_THIS_THREAD, ROW_GROUP, FileKind, open_binary, parse_json, read_bytes, read_json
from harness.reading import REQUEST as REQUEST_FILE

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


def _is_hosts(value) -> bool:
    return isinstance(value, dict) and all(isinstance(n, str) and n and _is_hex(out) for n, out in value.items())


TIMERS = {kind.value for kind in TickKind}
# Each field of an entry as `harness eval` writes it: the rule it keeps, and that rule in words.
FIELDS = {
    "index": (_is_count, "a whole number from 0"),
    "id": (lambda v: isinstance(v, str) and v != "", "a sample id (text)"),
    "device_output": (lambda v: isinstance(v, str) and _is_hex(v), "hex text"),
    "ticks": (lambda v: v is None or _is_count(v), "a whole number from 0"),
    "tick_hz": (lambda v: _is_count(v) and v > 0, "a whole number of ticks per second above 0"),
    "timer": (lambda v: type(v) is int and v in TIMERS, f"one of {sorted(TIMERS)}"),
    "host": (_is_hosts, "an object of reference name -> hex output"),
    "instructions": (lambda v: v is None or _is_count(v), "null or a whole number from 0"),
    # Which of the run's boards answered: its name in the fleet (a port, a labgrid place, "sim-2"), printable text.
    "board": (lambda v: v is None or _board_name(v), "null or a board's name (printable text, at most 256 characters)"),
}
OPTIONAL = {"board"}


def _board_name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 256 and not has_acted_on(value)


NO_TIMER = TickKind.NONE.value


def _entry_problem(entry) -> str | None:
    """Why a parsed line is no journal entry (naming the field), or None for a whole entry."""
    if not isinstance(entry, dict):
        return f"is not a journal entry (an object of {', '.join(FIELDS)}) but a {type(entry).__name__}"
    for name, (keeps, rule) in FIELDS.items():
        if name not in entry and name not in OPTIONAL:
            return f"is not a journal entry: it has no field {name}"
        value = entry.get(name)
        if not keeps(value) and not (name == "tick_hz" and entry.get("timer") == NO_TIMER and _is_count(value)):
            return f"is not a journal entry: field {name} is {_short(json.dumps(value))}, not {rule}"
    if entry["ticks"] is None and entry["timer"] != NO_TIMER:
        return "is not a journal entry: field ticks is null, but the timer counts ticks"
    return None


def _is_torn(text: str) -> bool:
    """A line a kill or a short write cut off (with the next line possibly glued on): not JSON at all."""
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


def _is_cut_utf8(data: bytes) -> bool:
    """UTF-8 throughout, but for a character cut off at the very end."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _is_cut_entry(data: bytes) -> bool:
    """The start of an entry as `harness eval` appends it, cut off by a kill or a short write."""
    return data.startswith(b"{") and _is_cut_utf8(data)


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
        """The entries since the last row group, by sample index. Only the last line may be cut short (by a
        kill or a short write, possibly with the next append glued on): it is no entry, its sample runs again.
        Any other line that is no whole entry was damaged by something else: it is named, with its line."""
        entries: dict[int, dict] = {}
        if not self.path.exists():
            return entries
        raw = read_bytes(self.path, JOURNAL_FILE)
        whole = raw[: raw.rfind(b"\n") + 1]
        lines = whole.split(b"\n")[:-1]
        tail = raw[len(whole) :]
        keep = len(whole)  # the bytes that stay: all but a last line cut short
        for number, line in enumerate(lines, start=1):
            entry = self._entry(number, line, last=number == len(lines) and not tail)
            if entry is None:
                keep -= len(line) + 1
                continue
            if entry["index"] in entries:
                raise self._damaged(number, f"holds sample {entry['index']} a second time")
            entries[entry["index"]] = entry
        if tail and not _is_cut_entry(tail):
            self._text(len(lines) + 1, tail)  # names the byte that is no UTF-8
            raise self._damaged(len(lines) + 1, "is not a journal entry cut short (it does not start with '{')")
        if keep < len(raw):
            self._cut_to(keep)  # drop the line cut short: appends go after whole entries only
        return entries

    def _entry(self, number: int, line: bytes, last: bool) -> dict | None:
        """The entry on a line, or None for the last line cut short (its sample runs again)."""
        last = last and _is_cut_entry(line)  # only the start of an entry can be one cut short
        text = self._text(number, line, cut_allowed=last)
        if text is None:
            return None
        try:
            entry = parse_json(text, JOURNAL_FILE, f"{self.path} line {number}")
        except UserError as exc:
            if last and _is_torn(text):
                return None
            raise UserError(f"{exc}; {self._fix(number)}") from None
        problem = _entry_problem(entry)
        if problem:
            raise self._damaged(number, problem)
        return entry

    def _text(self, number: int, line: bytes, cut_allowed: bool = False) -> str | None:
        """The line as text; None if it is cut inside a character and may be; else the byte that is no UTF-8."""
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as exc:
            if cut_allowed:
                return None
            byte = line[exc.start]
            raise self._damaged(
                number, f"holds byte 0x{byte:02x} at byte {exc.start + 1}, which is not UTF-8 ({exc.reason})"
            ) from None

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

    def _open_own(self, flags: int, doing: str) -> int:
        """The journal opened with O_NOFOLLOW: the run's own file, never one a link names elsewhere."""
        try:
            return os.open(self.path, flags | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UserError(
                f"{JOURNAL_FILE.name} {known_as(self.path)} is a link; harness does not {doing} a file a link "
                "names: remove the link and start a new run"
            ) from None

    def _cut_to(self, size: int) -> None:
        fd = self._open_own(os.O_WRONLY, "cut")
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def append(self, entry: dict) -> None:
        """One whole line at the end of the file, or none: a write that fails (or is interrupted) part-way is cut
        back off; a line whose every byte was written stays, whatever interrupts the append after that."""
        if self._lines is None:
            self.done()
        if self._fd is None:
            self._fd = self._open_own(os.O_WRONLY | os.O_APPEND | os.O_CREAT, "append to")
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        start = os.fstat(self._fd).st_size
        written = 0
        try:
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except BaseException as exc:
            if os.fstat(self._fd).st_size == start + len(line):  # interrupted after the last byte: the line stands
                self._lines += 1
                raise
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
            partial.unlink(missing_ok=True)  # ours by name: a link planted there is not written through
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
        write_text_atomically(self.path, text, JOURNAL_FILE.name, follow_links=False)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_group(group: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        with open_binary(group, ROW_GROUP) as handle:
            return pq.read_table(handle, columns=columns, **PARQUET_ON_THIS_THREAD)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(f"{known_as(group)} is damaged ({exc}); start a new run") from None


def _write_json_atomically(path: Path, data: dict) -> None:
    write_text_atomically(path, json.dumps(data, indent=2) + "\n", "run file", follow_links=False)


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

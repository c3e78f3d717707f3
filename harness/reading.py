"""One way in: every file harness reads comes through here (docs/cli.md, "What harness reads").

A reader names the kind of file it reads (`FileKind`: what the file is called in messages and how large it may
be). Before a byte is read the path's links are resolved and anything that is not a regular file (a FIFO, a
device, a socket, a folder) is refused, so nothing blocks and nothing unbounded is read. Text is UTF-8 (a BOM is
dropped); anything else is refused naming the file and the byte. Structured data (TOML, JSON) is parsed with a
nesting limit, NaN and infinities are refused, and it is validated against a declared schema (pydantic), so an
unknown, missing or mistyped field is named with its file. Every refusal is a `UserError`: one line, exit 2.
"""

import csv
import functools
import io
import json
import math
import os
import stat
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pydantic

from harness.errors import UserError
from harness.files import what_it_is
from harness.names import is_acted_on

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

MAX_DEPTH = 32  # how deeply a TOML or JSON file may nest tables and lists
MAX_CSV_FIELD = 64 * KIB  # one CSV field (a file name, a label, a number)


@dataclass(frozen=True)
class FileKind:
    """A kind of file harness reads: its name in messages and the largest it may be."""

    name: str
    max_bytes: int


# The kinds, with their limits; docs/cli.md lists them (tests/unit/files/test_reading.py keeps the two in step).
BOARD = FileKind("board file", 1 * MIB)
CARD = FileKind("model card", 1 * MIB)
GATES = FileKind("gates file", 1 * MIB)
LABELS = FileKind("labels file", 512 * MIB)
SPLIT = FileKind("split file", 512 * MIB)
PREDICTIONS = FileKind("predictions file", 512 * MIB)
CLASS_DESCRIPTIONS = FileKind("class descriptions file", 64 * MIB)
ANNOTATIONS = FileKind("annotations file", 2 * GIB)
LEDGER = FileKind("ledger", 64 * MIB)
DETECTIONS = FileKind("detections file", 512 * MIB)
MAP_TRUTH = FileKind("ground-truth file", 512 * MIB)
METER_LOG = FileKind("meter log", 1 * GIB)
WAV = FileKind("WAV file", 2 * GIB)
IMAGE = FileKind("image", 256 * MIB)
SHARD = FileKind("dataset shard", 16 * GIB)
MODEL = FileKind("model file", 1 * GIB)
MANIFEST = FileKind("run manifest", 16 * MIB)
SUMMARY = FileKind("run summary", 64 * MIB)
REQUEST = FileKind("run request", 16 * MIB)
JOURNAL = FileKind("run journal", 4 * GIB)
SAMPLES = FileKind("samples table", 16 * GIB)
CACHE_INDEX = FileKind("cache index", 64 * MIB)
CACHE_DATA = FileKind("cache entry", 64 * GIB)
JSON_STREAM = FileKind("JSON input", 64 * MIB)
TEXT = FileKind("text file", 16 * MIB)
PINS = FileKind("TFLM pins file", 1 * MIB)  # harness's, or the one HARNESS_TFLM_PINS names
BUILD_RECORD = FileKind("build record", 1 * MIB)
PROJECT_FILE = FileKind("project file", 1 * GIB)  # a generated firmware project's, packed by --archive
FLOAT_MODEL = FileKind("float model file", 16 * GIB)
REFEREE_LABELS = FileKind("referee labels file", 64 * MIB)  # labels.json of a referee session
PROFILE = FileKind("power profile", 16 * MIB)
ROW_GROUP = FileKind("run journal row group", 4 * GIB)
ORIGIN = FileKind("run origin", 1 * MIB)


def _size(nbytes: int) -> str:
    for unit, factor in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{nbytes:,} bytes"


def _refuse(kind: FileKind, path: Path, problem: str) -> UserError:
    return UserError(f"{kind.name} {path} {problem}")


def _too_large(kind: FileKind, path: Path, what: str) -> UserError:
    return _refuse(kind, path, f"{what}, more than the {_size(kind.max_bytes)} a {kind.name} may be")


def _open_fd(path: Path, kind: FileKind) -> int:
    """An open descriptor on path's regular file, or the reason it is not one, without ever blocking."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _refuse(kind, path, "does not exist; check the path") from None
    except IsADirectoryError:
        raise _refuse(kind, path, "is a folder, not a file; name a file") from None
    except OSError as exc:
        raise _refuse(kind, path, f"cannot be read ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refuse(kind, path, f"is {what_it_is(info.st_mode)}, not a regular file; name a file")
    if info.st_size > kind.max_bytes:
        os.close(fd)
        raise _too_large(kind, path, f"is {_size(info.st_size)}")
    # The descriptor stays non-blocking: a regular file never waits anyway, and a pseudo-file that claims to be
    # one (/proc/kmsg) answers "try again" instead of hanging, which the read turns into a one-line refusal.
    return fd


def check_regular(path: Path | str, kind: FileKind) -> Path:
    """path, checked as one would read it (exists, a regular file, within the kind's size); nothing is read."""
    path = Path(path)
    os.close(_open_fd(path, kind))
    return path


def _read_errors_refused(read):
    """read (a FileIO method), with an OSError while reading (EIO from a failing disk or a lost mount) made a
    UserError naming the file, like every other refusal, not a traceback."""

    @functools.wraps(read)
    def guarded(self: "_GuardedFile", *args):
        try:
            return read(self, *args)
        except OSError as exc:
            problem = f"could not be read ({exc.strerror or exc}); check the disk and retry"
            raise _refuse(self.kind, self.path, problem) from None

    return guarded


class _GuardedFile(io.FileIO):
    """A file opened for reading (an open descriptor of `path`, a `kind` of file) whose read errors are refusals."""

    def __init__(self, fd: int, kind: FileKind, path: Path):
        super().__init__(fd, "rb")
        self.kind, self.path = kind, path

    read = _read_errors_refused(io.FileIO.read)
    readall = _read_errors_refused(io.FileIO.readall)
    readinto = _read_errors_refused(io.FileIO.readinto)


@contextmanager
def open_binary(path: Path | str, kind: FileKind) -> Iterator[BinaryIO]:
    """A binary file object on a checked regular file, for readers that stream (images, WAVs, Parquet, tar).
    An error while reading it is a UserError naming the file."""
    path = Path(path)
    with io.BufferedReader(_GuardedFile(_open_fd(path, kind), kind, path)) as handle:
        yield handle


# pyarrow reading a file object from open_binary does so on this thread: its pool's threads would call back into
# Python for the bytes, and a refusal raised meanwhile leaves them running at exit, where the process aborts
# ("terminate called without an active exception").
PARQUET_ON_THIS_THREAD = {"use_threads": False, "pre_buffer": False}


def read_bytes(path: Path | str, kind: FileKind) -> bytes:
    path = Path(path)
    with open_binary(path, kind) as handle:
        data = handle.read(kind.max_bytes + 1)
    if data is None:  # a pseudo-file with nothing to give yet ("try again"): no file to read
        raise _refuse(kind, path, "gives no data without waiting (a pseudo-file, not a regular file); name a file")
    if len(data) > kind.max_bytes:  # it grew while being read
        raise _too_large(kind, path, "grew while it was read")
    return data


def decode_text(data: bytes, kind: FileKind, path: Path | str) -> str:
    """UTF-8 text (a leading BOM dropped); anything else refused naming the byte."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise _refuse(kind, Path(path), "is UTF-32 text; save it as UTF-8")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise _refuse(kind, Path(path), "is UTF-16 text; save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        byte = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
        raise _refuse(kind, Path(path), f"is not UTF-8 text ({byte}); save it as UTF-8") from None
    if "\x00" in text:
        raise _refuse(kind, Path(path), f"holds a NUL character at offset {text.index(chr(0))}; it is not a text file")
    return text


def read_text(path: Path | str, kind: FileKind) -> str:
    return decode_text(read_bytes(path, kind), kind, path)


def read_lines(path: Path | str, kind: FileKind) -> list[str]:
    return read_text(path, kind).splitlines()


def _numbered_rows(path: Path, kind: FileKind) -> list[tuple[int, list[str]]]:
    return parse_csv(read_text(path, kind), kind, path)


def parse_csv(text: str, kind: FileKind, path: Path | str) -> list[tuple[int, list[str]]]:
    """(line, fields) of every row of CSV text, blank ones included; a row's line is where it starts (a quoted
    field may span lines). Each field is at most MAX_CSV_FIELD characters."""
    reader = csv.reader(io.StringIO(text, newline=""))
    previous = csv.field_size_limit(MAX_CSV_FIELD)
    rows: list[tuple[int, list[str]]] = []
    try:
        start = 1
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
        return rows
    except csv.Error as exc:
        limit = f"a field may be at most {MAX_CSV_FIELD:,} characters"
        raise _refuse(kind, Path(path), f"is not valid CSV (line {reader.line_num}: {exc}; {limit})") from None
    finally:
        csv.field_size_limit(previous)


def read_csv(path: Path | str, kind: FileKind) -> list[list[str]]:
    """A CSV file's rows (header included, blank rows as [])."""
    return [row for _, row in _numbered_rows(Path(path), kind)]


def read_csv_lines(path: Path | str, kind: FileKind) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank row (header included)."""
    return [(line, row) for line, row in _numbered_rows(Path(path), kind) if row]


def read_csv_records(path: Path | str, kind: FileKind) -> tuple[list[str] | None, list[tuple[int, dict]]]:
    """The header (None for an empty file) and (line, row) for each non-blank row, as csv.DictReader gives
    them: a missing field is None, extra fields are listed under the key None."""
    lines = read_csv_lines(path, kind)
    if not lines:
        return None, []
    header = lines[0][1]
    refuse_duplicate_columns(header, kind, path)
    return header, [(line, _record(header, fields)) for line, fields in lines[1:]]


def refuse_duplicate_columns(header: list[str] | None, kind: FileKind, path: Path | str) -> None:
    """A header naming a column twice is refused, naming the column: csv.DictReader keeps the last one, so which
    one counts would be a guess. Empty names (trailing commas) name no column."""
    seen: set[str] = set()
    for column in (c.strip() for c in header or ()):
        if column in seen and column:
            raise _refuse(kind, Path(path), f"names the column {column!r} twice in its header; keep one")
        seen.add(column)


def _record(header: list[str], fields: list[str]) -> dict:
    row: dict = dict(zip(header, fields, strict=False))
    row |= dict.fromkeys(header[len(fields) :])
    if len(fields) > len(header):
        row[None] = fields[len(header) :]
    return row


def read_csv_dicts(path: Path | str, kind: FileKind) -> tuple[list[str], list[dict[str, str]]]:
    """A CSV file with a header: (the columns, one dict a row). Rows are numbered from 2 (the header is line 1)."""
    rows = read_csv(path, kind)
    if not rows:
        raise _refuse(kind, Path(path), "is empty; it needs a header line")
    header = [column.strip() for column in rows[0]]
    return header, [dict(zip(header, row, strict=False)) for row in rows[1:]]


# Structured data ------------------------------------------------------------------------------------------


def depth(value: Any) -> int:
    """How deeply lists and tables nest in value (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _too_deep(kind: FileKind, path: Path) -> UserError:
    return _refuse(kind, path, f"nests lists or tables more than {MAX_DEPTH} deep; it is not a {kind.name}")


def _first_clause(exc: Exception) -> str:
    return str(exc).split(";")[0]


def _check_depth(value: Any, kind: FileKind, path: Path) -> None:
    if depth(value) > MAX_DEPTH:
        raise _too_deep(kind, path)


_LARGEST = 2**64


def _all_numbers_fine(value: Any) -> bool:
    """Every number in value finite and within ±2**64: the quick walk (no names) that every file takes; only a
    file that fails it is walked again to name the field."""
    stack = [value]
    while stack:
        item = stack.pop()
        for child in item.values() if isinstance(item, dict) else item if isinstance(item, list) else ():
            kind = type(child)
            if kind is float:
                if not math.isfinite(child):
                    return False
            elif kind is int:
                if not -_LARGEST <= child <= _LARGEST:
                    return False
            elif kind is dict or kind is list:
                stack.append(child)
    return not (isinstance(value, float) and not math.isfinite(value))


class _KeyTwice(Exception):
    pass


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object, unless it names a key twice (json.loads would keep the last one without a word)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        raise _KeyTwice(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return value


def parse_json(text: str, kind: FileKind, path: Path | str) -> Any:
    """JSON text, parsed: NaN, infinities (named by field), numbers of over 4300 digits and nesting deeper than
    MAX_DEPTH refused."""
    return _structured("JSON", kind, Path(path), lambda: json.loads(text, object_pairs_hook=_object_without_repeats))


def _structured(language: str, kind: FileKind, path: Path, load: Callable[[], Any]) -> Any:
    """What load() parses, every refusal one line naming the file; then nesting and numbers checked."""
    try:
        value = load()
    except _KeyTwice as twice:
        raise _refuse(kind, path, f"names key {twice.args[0]!r} twice in one object; keep one") from None
    except RecursionError:
        raise _too_deep(kind, path) from None
    except json.JSONDecodeError as exc:
        raise _refuse(kind, path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except tomllib.TOMLDecodeError as exc:
        raise _refuse(kind, path, f"is not valid TOML ({exc})") from None
    except ValueError as exc:  # an integer too long to convert
        raise _refuse(kind, path, f"is not valid {language} ({_first_clause(exc)})") from None
    _check_depth(value, kind, path)
    _check_finite(value, kind, path)
    return value


def fields(data: Any) -> Iterator[tuple[str, Any]]:
    """(dotted name, value) of data and everything in it (`sim.emulate_invoke_ms`, `pulses[2]`; data itself is
    named ''), tables and lists walked in order without recursion."""
    stack = [(data, "")]
    while stack:
        value, name = stack.pop()
        yield name, value
        if isinstance(value, dict):
            children = [(child, f"{name}.{key}" if name else str(key)) for key, child in value.items()]
        elif isinstance(value, list | tuple):
            children = [(child, f"{name}[{index}]") for index, child in enumerate(value)]
        else:
            continue
        stack.extend(reversed(children))


def _field_refused(kind: FileKind, path: Path, name: str, problem: str) -> UserError:
    if not name:
        return _refuse(kind, path, f"is {problem}")
    return UserError(f"{kind.name} {path}: field {name!r} is {problem}")


def _check_finite(value: Any, kind: FileKind, path: Path) -> None:
    """Every number finite and within ±2**64, or a UserError naming the first field that is not."""
    if _all_numbers_fine(value):
        return
    for name, item in fields(value):
        if isinstance(item, float) and not math.isfinite(item):
            raise _field_refused(kind, path, name, f"{item}, not a finite number")
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > 2**64:
            digits = len(str(abs(item)))
            raise _field_refused(kind, path, name, f"a {digits}-digit integer, larger than any figure harness uses")


def refuse_control_characters(value: Any, kind: FileKind, path: Path | str, allowed_fields: tuple[str, ...] = ()):
    """A text value holding a control character (a newline, an escape) is refused naming its field: it would
    end a line of output, or of a file written from it (platformio.ini, a C header). `allowed_fields` may hold
    newlines and tabs."""
    for name, text in fields(value):
        if not isinstance(text, str):
            continue
        allowed = "\n\t\r" if name in allowed_fields else ""
        bad = next((ch for ch in text if _acted_on(ch) and ch not in allowed), None)
        if bad is not None:
            raise UserError(f"{kind.name} {path}: field {name!r} holds the control character {bad!r}; remove it")


def _acted_on(ch: str) -> bool:
    """A character a terminal or an editor acts on instead of showing: a control (a newline, ESC), or a format
    character (a right-to-left override, a zero-width space)."""
    return is_acted_on(ch)


def parse_toml(text: str, kind: FileKind, path: Path | str) -> dict:
    return _structured("TOML", kind, Path(path), lambda: tomllib.loads(text))


def read_json(path: Path | str, kind: FileKind) -> Any:
    return parse_json(read_text(path, kind), kind, path)


def read_toml(path: Path | str, kind: FileKind) -> dict:
    return parse_toml(read_text(path, kind), kind, path)


# Schemas ---------------------------------------------------------------------------------------------------

# The config every file schema uses: unknown keys refused, NaN and infinities refused, types checked.
STRICT = pydantic.ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


def schema_problem(error: dict) -> str:
    """One pydantic error, worded for a person: the field's dotted path and what is wrong with it."""
    where = ".".join(str(part) for part in error["loc"]) or "the top level"
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"unknown field {where!r}"
    if error["type"] in ("missing", "missing_argument"):
        return f"missing field {where!r}"
    return f"field {where!r}: {error['msg']}"


def ordered_errors(exc: pydantic.ValidationError) -> list[dict]:
    """exc's errors, the one to name first first (a misspelt field is both unknown and missing: the unknown one
    names the typo)."""
    return sorted(exc.errors(), key=lambda e: e["type"] not in ("extra_forbidden", "unexpected_keyword_argument"))


def first_problem(exc: pydantic.ValidationError) -> str:
    """The first of exc's errors, worded, and how many more there are."""
    errors = ordered_errors(exc)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return schema_problem(errors[0]) + more


def validate(data: Any, schema: Any, kind: FileKind, path: Path | str, *, fix: str = "") -> Any:
    """data checked against schema (a pydantic model, dataclass or type); a problem names the file and field."""
    adapter = schema if isinstance(schema, pydantic.TypeAdapter) else pydantic.TypeAdapter(schema)
    try:
        return adapter.validate_python(data)
    except pydantic.ValidationError as exc:
        raise UserError(f"{kind.name} {path}: {first_problem(exc)}{'; ' + fix if fix else ''}") from None
    except RecursionError:
        raise _refuse(kind, Path(path), f"nests lists or tables too deeply; it is not a {kind.name}") from None


def load_json(path: Path | str, kind: FileKind, schema: Any, *, fix: str = "") -> Any:
    return validate(read_json(path, kind), schema, kind, path, fix=fix)


def load_toml(path: Path | str, kind: FileKind, schema: Any, *, fix: str = "") -> Any:
    return validate(read_toml(path, kind), schema, kind, path, fix=fix)

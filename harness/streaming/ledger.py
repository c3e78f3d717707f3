"""The event ledger: one labelled event per CSV row, times in milliseconds, optional end time.

    label,start_ms,end_ms
    yes,1000,2000
    no,4500

A header is optional (TensorFlow's streaming tools write none); a time column named with an `_s` suffix
declares seconds. Unless seconds are declared (there or by the caller) the loader refuses a ledger that
looks like seconds: TF's evaluator documents seconds but compares the raw number with millisecond
detection times, so a ledger in seconds silently scores every event near the start of the stream.
Rows are read as CSV (quotes, stripped cells, `#` comments); the tf-compat policy reads the same text
as TF's reader does (harness/streaming/tf_ground_truth.py).
"""

import csv
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from harness.digits import float_or_none
from harness.errors import UserError, setting
from harness.reading import LEDGER, decode_text, parse_csv, read_bytes, refuse_duplicate_columns

UNITS = ("ms", "s")
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 text holds NULs: decode_text names it as UTF-16
MAX_TIME = 1e12  # ms (or s): beyond 31 years of audio; bounds the arithmetic on times


@dataclass(frozen=True)
class Event:
    label: str
    start_ms: int
    end_ms: int | None = None
    line: int = 0  # where it came from, for messages


@dataclass(frozen=True)
class Ledger:
    path: str
    unit: str  # the unit the file was written in; events are always in ms
    events: tuple[Event, ...]
    text: str | None = None  # the file as read, for readers with other rules (tf_ground_truth.py)
    header_line: int | None = None


def unprintable(label: str) -> str | None:
    """The first control or format character in a label (a newline, ESC, a BOM, a zero-width joiner), or None:
    such a label looks like another one, or none, in every table and message."""
    return next((c for c in label if unicodedata.category(c) in ("Cc", "Cf")), None)


def label_problem(label: str) -> str | None:
    char = unprintable(label)
    if char is None:
        return None
    return f"label {label!r} holds the control character U+{ord(char):04X}; labels are printable text"


def _header_unit(header: list[str]) -> str | None:
    for name in (h.strip().lower() for h in header[1:]):
        if name.endswith("_ms") or name == "ms":
            return "ms"
        if name.endswith("_s") or name in ("s", "seconds", "sec"):
            return "s"
    return None


def _is_column_name(cell: str) -> bool:
    """A header's time column: a name of letters with no digit (`start_ms`), never a number such as `nan`."""
    return any(c.isalpha() for c in cell) and not any(c.isdigit() for c in cell) and not _parses_as_float(cell)


def _parses_as_float(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _is_header(row: list[str]) -> bool:
    """A first row is a header only if it cannot be data: `yes,1O00` or `yes,0x10` is a malformed event."""
    return len(row) >= 2 and all(_is_column_name(cell) for cell in row[1:] if cell) and _is_column_name(row[1])


@dataclass(frozen=True)
class _Rows:
    text: str
    rows: list[tuple[int, list[str]]]  # (line, stripped cells) of the events
    header_line: int | None
    header_unit: str | None


def _ledger_text(path: Path) -> str:
    if not os.path.lexists(path):
        raise UserError(f"cannot read ledger {path} (No such file or directory); check the path")
    data = read_bytes(path, LEDGER)
    if b"\x00" in data and not data.startswith(UTF16_BOMS):  # named by line, like any other row that is no event
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise UserError(f"ledger {path} line {line}: expected label,start_ms[,end_ms], got a NUL byte (not text)")
    return decode_text(data, LEDGER, path)


def _read_rows(path: Path) -> _Rows:
    text = _ledger_text(path)
    rows = [(n, [c.strip() for c in row]) for n, row in parse_csv(text, LEDGER, path)]
    rows = [(n, row) for n, row in rows if row and any(row) and not row[0].startswith("#")]
    if rows and _is_header(rows[0][1]):
        refuse_duplicate_columns(rows[0][1], LEDGER, path)
        return _Rows(text, rows[1:], rows[0][0], _header_unit(rows[0][1]))
    return _Rows(text, rows, None, None)


def _looks_like_seconds(values: list[float], duration_ms: int | None, path: Path) -> str | None:
    fractional = next((v for v in values if v != int(v)), None)
    beyond_seconds = bool(duration_ms and values and max(values) > duration_ms / 1000)
    if fractional is not None and not beyond_seconds:  # fractional ms past the audio's length in s: TF's own
        # generate_streaming_test_wav.py writes times as %f milliseconds; they are rounded as its reader does
        return (
            f"ledger {path} has a fractional time ({fractional:g}): it looks like seconds, but times must be whole "
            f"milliseconds ({fractional:g} s = {round(fractional * 1000)} ms); "
            f"convert it or pass {setting('ledger_unit')} s (or {setting('ledger_unit')} ms to round it to whole "
            "milliseconds as TF's reader does)"
        )
    if duration_ms and values and max(values) > 0 and max(values) <= duration_ms / 1000:
        return (
            f"ledger {path}: every time is at most {max(values):g} but the audio lasts {duration_ms / 1000:g} s: "
            f"the times look like seconds, not milliseconds; convert them or pass {setting('ledger_unit')} s"
        )
    return None


def load_ledger(path: Path, duration_ms: int | None = None, unit: str | None = None) -> Ledger:
    """Events sorted by start time. duration_ms, when known, bounds every event; unit overrides the guess."""
    path = Path(path)
    if unit is not None and unit not in UNITS:
        raise UserError(f"ledger unit {unit!r} is not one of {', '.join(UNITS)}")
    read = _read_rows(path)
    header_unit = read.header_unit
    if unit and header_unit and unit != header_unit:
        raise UserError(f"ledger {path} declares {header_unit} in its header but {setting('ledger_unit')} says {unit}")
    # a header saying _ms is not trusted with the values: "start_ms" over seconds is exactly the mistake to catch
    unit = unit or ("s" if header_unit == "s" else None)
    parsed: list[tuple[int, str, float, float | None]] = []
    first: dict[tuple[str, ...], int] = {}  # each row -> the line it was first on
    for line, row in read.rows:
        if len(row) not in (2, 3) or not row[0]:
            raise UserError(f"ledger {path} line {line}: expected label,start_ms[,end_ms], got {','.join(row)!r}")
        if problem := label_problem(row[0]):
            raise UserError(f"ledger {path} line {line}: {problem}")
        if tuple(row) in first:
            raise UserError(
                f"ledger {path} line {line} repeats line {first[tuple(row)]} ({','.join(row)!r}): the same event "
                "twice would be scored twice; keep one"
            )
        first[tuple(row)] = line
        times = [float_or_none(t) for t in row[1:] if t != ""]
        if any(t is None for t in times) or not times:
            raise UserError(f"ledger {path} line {line}: {','.join(row[1:])!r} is not a time")
        if max(abs(t) for t in times) > MAX_TIME:
            raise UserError(f"ledger {path} line {line}: {','.join(row[1:])!r} is past any audio ({MAX_TIME:.0e} ms)")
        parsed.append((line, row[0], times[0], times[1] if len(times) > 1 else None))
    if unit is None:
        values = [t for _, _, start, end in parsed for t in (start, end) if t is not None]
        problem = _looks_like_seconds(values, duration_ms, path)
        if problem:
            raise UserError(problem)
    scale = 1000 if unit == "s" else 1
    events = []
    for line, label, start, end in parsed:
        # round() as TF's reader does (its C++ twin truncates); seconds are scaled first
        event = Event(label, round(start * scale), None if end is None else round(end * scale), line)
        _check_event(event, duration_ms, path)
        events.append(event)
    events.sort(key=lambda e: e.start_ms)  # stable: events sharing a time keep their file order, as in TF's sort
    return Ledger(str(path), unit or "ms", tuple(events), read.text, read.header_line)


def _check_event(event: Event, duration_ms: int | None, path: Path) -> None:
    where = f"ledger {path} line {event.line}"
    if event.end_ms is not None and event.end_ms < event.start_ms:
        raise UserError(f"{where}: {event.label} ends ({event.end_ms} ms) before it starts ({event.start_ms} ms)")
    last = event.start_ms if event.end_ms is None else event.end_ms
    if event.start_ms < 0 or (duration_ms is not None and last > duration_ms):
        raise UserError(
            f"{where}: {event.label} at {event.start_ms}-{last} ms lies outside the audio (0-{duration_ms} ms); "
            "is this the ledger for this audio?"
        )


LEDGER_HEADER = "label,start_ms,end_ms"  # what write_ledger writes first


def write_ledger(path: Path, events: list[Event]) -> None:
    from harness.files import write_atomically

    def write(partial: Path) -> None:
        with open(partial, "w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(LEDGER_HEADER.split(","))
            for e in events:
                out.writerow([e.label, e.start_ms, "" if e.end_ms is None else e.end_ms])

    write_atomically(Path(path), write)

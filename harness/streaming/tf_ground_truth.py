"""A ledger's events as TensorFlow's ground-truth reader reads the same file, for the tf-compat policy.

TF's `StreamingAccuracyStats.read_ground_truth_file` (speech_commands/accuracy_utils.py) strips each line,
splits it at every comma and keeps the lines of exactly two fields: the label as written, the time as
round(float(x)), sorted by time. It knows no quoting, no comments and no header. Where its reading of
a line differs from the ledger's (harness/streaming/ledger.py) this module either reads the line as TF
does and says so (a line TF skips is listed, its event not scored), or refuses the line with the
reason when TF's reading would silently turn it into a label no detection has, or stop TF's tool.
"""

import io
from dataclasses import dataclass

from harness.errors import UserError
from harness.streaming.ledger import LEDGER_HEADER, Event, Ledger


@dataclass(frozen=True)
class TfGroundTruth:
    events: tuple[Event, ...]  # TF's annotations, in TF's order (by time, file order within a time)
    skipped_lines: tuple[int, ...]  # lines the ledger reads as events and TF's reader skips
    header_line: int | None  # a two-field header: TF's reader would stop on it (float() fails)
    converted: bool = False  # a ledger `stream build` wrote, given to TF as its generator's labels file


def _lines(text: str):
    """The lines as `for line in open(file)` yields them (universal newlines: \\n, \\r\\n and \\r)."""
    return enumerate(io.StringIO(text, newline=None), start=1)


def _label_problem(tf_label: str, label: str) -> str:
    if tf_label.strip() != tf_label:
        return f"TF's reader keeps the spaces in the label {tf_label!r}; write {label} with no space before the comma"
    if '"' in tf_label:
        return f"TF's reader keeps the quotes in the label {tf_label!r}; write {label} unquoted"
    return f"TF's reader reads the label as {tf_label!r}, not {label!r}; write {label} plainly"


def _written_by_stream_build(ledger: Ledger) -> bool:
    """harness's own ledger (write_ledger's header): it is no TF labels file, so TF's reader is given what
    TF's generate_streaming_test_wav.py writes for the same events, `label, start_ms` per line."""
    if ledger.header_line is None:
        return False
    header = next(line for number, line in _lines(ledger.text) if number == ledger.header_line)
    return header.strip() == LEDGER_HEADER


def read_tf_ground_truth(ledger: Ledger) -> TfGroundTruth:
    """TF's annotations from the ledger's file; a ledger built in code (no file) is taken as they are."""
    if ledger.text is None:
        return TfGroundTruth(ledger.events, (), None)
    if _written_by_stream_build(ledger):
        return TfGroundTruth(ledger.events, (), None, converted=True)
    by_line = {e.line: e for e in ledger.events}
    kept: set[int] = set()
    header_line = None
    for number, line in _lines(ledger.text):
        fields = line.strip().split(",")
        if len(fields) != 2:
            continue  # TF skips the line
        where = f"ledger {ledger.path} line {number}"
        if line.lstrip().startswith("#"):
            raise UserError(
                f"{where}: TF's reader has no comments and would read {line.strip()!r} as an annotation; "
                "delete the line, or drop the '#' to score it"
            )
        if number == ledger.header_line:
            header_line = number
            continue
        try:
            float(fields[1])
        except ValueError:
            raise UserError(
                f"{where}: TF's reader cannot read the time {fields[1]!r} (float() fails and its tool stops); "
                "write the time as a plain number"
            ) from None
        event = by_line.get(number)
        if event is None:  # a line the ledger does not read as one event (a quoted field across lines)
            raise UserError(f"{where}: TF's reader would read {line.strip()!r} as an annotation; write label,start_ms")
        if fields[0] != event.label:
            raise UserError(f"{where}: {_label_problem(fields[0], event.label)}")
        kept.add(number)
    events = tuple(e for e in ledger.events if e.line in kept)  # the ledger's order is TF's stable sort by time
    skipped = tuple(sorted(set(by_line) - kept))
    return TfGroundTruth(events, skipped, header_line)


def line_ranges(lines: tuple[int, ...]) -> str:
    """2, 4-7, 9: line numbers in a message."""
    ranges: list[list[int]] = []
    for n in lines:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)

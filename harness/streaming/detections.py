"""Detections: what a recognizer fired, when, how sure, and which instant its time stamps.

    label,time_ms,score,reference
    yes,1230,0.91,window-end

The timing reference is declared because the instants differ by up to a window: TF's streaming evaluator stamps
the start of the audio window, a device naturally stamps the end of the window or the moment it decided.
"""

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from harness.digits import float_or_none
from harness.errors import UserError
from harness.reading import DETECTIONS, read_csv, refuse_duplicate_columns
from harness.results.stream_scores import Detection
from harness.streaming.ledger import MAX_TIME, label_problem

TIMING_REFERENCES = ("window-start", "window-end", "decision")
COLUMNS = ("label", "time_ms", "score", "reference")


@dataclass(frozen=True)
class Detections:
    path: str
    reference: str | None  # None only when there are no detections
    detections: tuple[Detection, ...]


def _parse(row: dict, line: int, path: Path) -> Detection:
    where = f"detections {path} line {line}"
    reference = (row.get("reference") or "").strip()
    if reference not in TIMING_REFERENCES:
        raise UserError(f"{where}: timing reference {reference!r} is not one of {', '.join(TIMING_REFERENCES)}")
    time, score = (float_or_none((row.get(column) or "").strip()) for column in ("time_ms", "score"))
    if time is None or score is None:
        raise UserError(
            f"{where}: time_ms and score must be finite decimal numbers, not {row.get('time_ms')}, {row.get('score')}"
        )
    if time != int(time) or time < 0 or time > MAX_TIME:
        raise UserError(f"{where}: time_ms {row['time_ms']} is not a whole, non-negative number of milliseconds")
    label = (row.get("label") or "").strip()
    if not label:
        raise UserError(f"{where}: empty label")
    if problem := label_problem(label):
        raise UserError(f"{where}: {problem}")
    return Detection(label, int(time), score, reference)


def _rows(path: Path) -> list[tuple[int, dict]]:
    """(line, row by column) of each data row; the header is line 1."""
    if not os.path.lexists(path):
        raise UserError(f"cannot read detections {path} (No such file or directory); check the path")
    rows = read_csv(path, DETECTIONS)
    header = [column.strip() for column in rows[0]] if rows else []
    refuse_duplicate_columns(header, DETECTIONS, path)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise UserError(f"detections {path} needs the columns {','.join(COLUMNS)} (missing {','.join(missing)})")
    return [(n, dict(zip(header, row, strict=False))) for n, row in enumerate(rows[1:], 2) if row]


def load_detections(path: Path, duration_ms: int | None = None) -> Detections:
    """Detections sorted by time (stable); all must share one timing reference and lie inside the audio."""
    path = Path(path)
    found = [_parse(row, line, path) for line, row in _rows(path)]
    references = sorted({d.reference for d in found})
    if len(references) > 1:
        raise UserError(f"detections {path} mixes timing references ({', '.join(references)}); use one per file")
    late = [d for d in found if duration_ms is not None and d.time_ms > duration_ms]
    if late:
        raise UserError(
            f"detections {path}: {late[0].label} at {late[0].time_ms} ms is after the end of the audio "
            f"({duration_ms} ms); are these detections for this audio?"
        )
    found.sort(key=lambda d: d.time_ms)
    return Detections(str(path), references[0] if references else None, tuple(found))


def write_detections(path: Path, detections: list[Detection], follow_links: bool = True) -> None:
    """The detections as CSV; in a run folder (follow_links=False) a link at path is replaced, never followed."""
    from harness.files import write_atomically

    def write(partial: Path) -> None:
        with open(partial, "w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(COLUMNS)
            for d in detections:
                out.writerow([d.label, d.time_ms, repr(d.score), d.reference])

    write_atomically(Path(path), write, follow_links=follow_links)

"""Replay of WT310 meter logs as the LPIRC referee wrote them: V, I, P (W), accumulated Wh, sample count.

The logger polled the meter once a second; the count column numbers the polls, so a missing count is
a missed poll and a repeated count a poll read twice (kept once). The first row holds the meter's
"no data" value 9.91E+37 (from before the first update) and is skipped like any such row.
"""

import math
import os
from pathlib import Path

import numpy as np

from harness.digits import NotFinite, ascii_float
from harness.energy.meter import Meter
from harness.energy.trace import JOULES_PER_WH, PowerTrace
from harness.errors import UserError
from harness.reading import METER_LOG, read_csv

NO_DATA = 9.9e37  # WT300 series: 9.91E+37 no data, 9.9E+37 overflow
POLL_SECONDS = 1.0
MAX_POLL_GAP = 3600  # missed polls between two rows (an hour at one a second): more is a damaged log
WH_NOISE = 1e-6  # Wh: the accumulated energy jitters near zero by ~1e-12 Wh; a reset drops far more


def _rows(path: Path) -> list[list[str]]:
    if not os.path.lexists(path):
        raise UserError(f"cannot read meter log {path} (No such file or directory); pass an existing CSV file")
    return read_csv(path, METER_LOG)


def _reading(path: Path, number: int, row: list[str]) -> tuple[float, ...]:
    """V, I, W, Wh and the sample count of one row."""
    try:
        reading = tuple(_number(x) for x in row[:5])
    except ValueError:
        raise UserError(
            f"{path}:{number}: expected 5 numbers (V, I, W, Wh, sample count) in ASCII digits, "
            f"got {','.join(row)[:60]!r}"
        ) from None
    if len(row) != 5 or len(reading) != 5:
        raise UserError(f"{path}:{number}: expected 5 columns (V, I, W, Wh, sample count), got {len(row)}")
    return reading


def _number(text: str) -> float:
    """A number in ASCII digits; NaN and infinities are kept, for the row's checks to name (no data, not finite)."""
    try:
        return ascii_float(text)
    except NotFinite:
        return float(text)


def _check_count(path: Path, number: int, count: float, previous: float) -> None:
    """The count numbers the meter's updates: whole, rising by at most MAX_POLL_GAP; a fall is a second log."""
    if count != int(count) or count < 0:
        raise UserError(f"{path}:{number}: the sample count {count:g} is not a whole number of meter updates")
    if count < previous:
        raise UserError(
            f"{path}:{number}: the sample count falls from {previous:g} to {count:g}: a second log starts here "
            "(or the rows are out of order); pass one log per integration, splitting the file at this line"
        )
    if count - previous > MAX_POLL_GAP:
        raise UserError(
            f"{path}:{number}: the sample count jumps from {previous:g} to {count:g}, more than the "
            f"{MAX_POLL_GAP} missed polls a log may hold; the log is damaged"
        )


def read_wt310_log(path: Path, poll_seconds: float = POLL_SECONDS) -> PowerTrace:
    counts, values = [], []
    for number, row in enumerate(_rows(path), 1):
        if not row or not "".join(row).strip():
            continue
        volts, amps, watts, wh, count = _reading(path, number, row)
        if max(abs(volts), abs(amps), abs(watts)) >= NO_DATA:
            continue
        if not all(math.isfinite(v) for v in (volts, amps, watts, wh, count)):
            raise UserError(f"{path}:{number}: a reading is not a finite number; fix or drop that row")
        _check_count(path, number, count, counts[-1] if counts else 0)
        if counts and count == counts[-1]:
            continue  # the same update polled twice
        if values and wh < values[-1][3] - WH_NOISE:
            raise UserError(
                f"{path}:{number}: the accumulated Wh falls from {values[-1][3]:g} to {wh:g} (the meter's "
                "integration was reset or the rows are out of order); pass a log of one uninterrupted integration"
            )
        counts.append(count)
        values.append((volts, amps, watts, wh))
    if len(values) < 2:
        raise UserError(f"{path} holds fewer than two meter readings; is it a WT310 log (V,I,W,Wh,count)?")
    array = np.array(values)
    t = np.array(counts) * poll_seconds
    accumulated = array[:, 3] * JOULES_PER_WH
    if t[0] > 0:  # the integration started at count 0 with nothing accumulated: put that origin first
        t, accumulated = np.concatenate([[0.0], t]), np.concatenate([[0.0], accumulated])
        array = np.vstack([array[:1], array])
    return PowerTrace(
        t=t,
        volts=array[:, 0],
        amps=array[:, 1],
        watts=array[:, 2],
        accumulated_j=accumulated,
        source="device",
        meter=f"WT310 log {path.name}",
        notes={"polls_missed": int(counts[-1] - counts[0] + 1 - len(counts)), "poll_seconds": poll_seconds},
    )


def held_energy_j(trace: PowerTrace) -> float:
    """Energy from the power column alone, each reading the mean over the interval before it (as the meter
    averages over its update period): the check on the meter's own accumulated Wh."""
    return float(np.sum(trace.watts[1:] * np.diff(trace.t)))


class CsvReplayMeter(Meter):
    kind = "csv"

    def __init__(self, address: str):
        self.trace = read_wt310_log(Path(address))

    def start(self) -> None:
        pass

    def stop(self) -> PowerTrace:
        return self.trace

    def samples(self) -> PowerTrace:
        return self.trace

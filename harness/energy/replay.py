"""Replay of WT310 meter logs as the LPIRC referee wrote them: V, I, P (W), accumulated Wh, sample count.

The logger polled the meter once a second; the count column numbers the polls, so a missing count is
a missed poll and a repeated count a poll read twice (kept once). The first row holds the meter's
"no data" value 9.91E+37 (from before the first update) and is skipped like any such row.
"""

import csv
import math
from pathlib import Path

import numpy as np

from harness.energy.meter import Meter
from harness.energy.trace import JOULES_PER_WH, PowerTrace
from harness.errors import UserError

NO_DATA = 9.9e37  # WT300 series: 9.91E+37 no data, 9.9E+37 overflow
POLL_SECONDS = 1.0
WH_NOISE = 1e-6  # Wh: the accumulated energy jitters near zero by ~1e-12 Wh; a reset drops far more


def read_wt310_log(path: Path, poll_seconds: float = POLL_SECONDS) -> PowerTrace:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise UserError(f"cannot read meter log {path} ({exc.strerror}); pass an existing CSV file") from exc
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a text CSV file; pass a WT310 log (V,I,W,Wh,count per row)") from None
    counts, values = [], []
    for number, row in enumerate(rows, 1):
        if not row or not "".join(row).strip():
            continue
        try:
            volts, amps, watts, wh, count = (float(x) for x in row[:5])
        except ValueError:
            raise UserError(
                f"{path}:{number}: expected 5 numbers (V, I, W, Wh, sample count), got {','.join(row)[:60]!r}"
            ) from None
        if len(row) != 5:
            raise UserError(f"{path}:{number}: expected 5 columns (V, I, W, Wh, sample count), got {len(row)}")
        if max(abs(volts), abs(amps), abs(watts)) >= NO_DATA:
            continue
        if not all(math.isfinite(v) for v in (volts, amps, watts, wh, count)):
            raise UserError(f"{path}:{number}: a reading is not a finite number; fix or drop that row")
        if counts and count <= counts[-1]:
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

"""`harness perf --meter KIND:ADDRESS`: energy per inference as MLPerf Tiny's energy mode measures it.

Five windows, each of back-to-back invokes of one resident input lasting at least `window_seconds` of
device time (MLPerf: 10 s), the count chosen from the timing pass; a window's energy per inference is
the meter's energy inside it over its invokes, and the figure is the median over the windows. A
window's bounds are the device's own timing of its invokes (harness/link/session.py Span), placed on
the host's clock from when their request reached the device (not from their answer, whose transfer
would shift them late). Where one request cannot hold a window's invokes (a
BENCH answer holds one frame of timings), the window is several spans, the input loaded again between
them; the gaps stay outside its energy.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from harness.boards import Board
from harness.defaults import MLPERF_WINDOW_SECONDS
from harness.device.drivers import driver_type
from harness.energy.meter import Meter
from harness.energy.trace import PowerTrace
from harness.energy.windows import PERF_ADVICE, Window, resolution, window_energies_j
from harness.errors import LinkError, UserError
from harness.link.session import DeviceSession, Span

MLPERF_WINDOWS = 5  # MLPerf Tiny: the median of 5 windows, in performance and energy mode
COUNT_MARGIN = 1.05  # invokes beyond the timing pass's estimate, so a window rarely falls short of its length
# A window that fell short was timed when invokes ran slower than now (a host clock under load, the virtual or
# a hosted board): the next aims further past the length, as a longer window is still a window.
SHORT_WINDOW_MARGIN = 1.25
WINDOW_ATTEMPTS = 5
TRAILING_SAMPLE_WAIT_S = 5.0  # the longest wait for the meter's first sample, and for one after the last window


@dataclass
class EnergyWindow:
    inferences: int
    device_seconds: float
    spans: list[tuple[float, float, int]]  # start, end (host monotonic seconds), inferences
    uj_per_inference: float


@dataclass
class PerfEnergy:
    source: str  # device: a real meter on a real board; sim: anything simulated on either side
    meter: str
    window_kind: str
    window_seconds: float  # the least device time per window asked for
    windows: list[EnergyWindow]
    uj_per_inference: float  # the median over windows
    mean_watts: float  # inside the windows
    resolution: dict


def energy_source(trace: PowerTrace, board: Board) -> str:
    """`device` only for a real instrument on a real board: a simulated meter, or a real meter on the
    virtual or a hosted board, measures no board's inferences."""
    return "device" if trace.source == "device" and driver_type(board).runs_users_firmware else "sim"


def measure_energy(
    client: DeviceSession,
    board: Board,
    data: bytes,
    meter: Meter,
    seconds_per_inference: float,
    window_seconds: float = MLPERF_WINDOW_SECONDS,
) -> PerfEnergy:
    """The meter (opened, not started) records the windows; `seconds_per_inference` (the timing pass's
    median) sets their count."""
    count = max(1, math.ceil(COUNT_MARGIN * window_seconds / seconds_per_inference))
    windows = []
    meter.start()
    try:
        # The trace must hold every window: a sample before the first begins and one after the last ends.
        _await_sample_after(meter, -math.inf)
        for _ in range(MLPERF_WINDOWS):
            spans, count = _window(client, board, data, count, window_seconds)
            windows.append(spans)
        _await_sample_after(meter, max(s.window[1] for spans in windows for s in spans))
    finally:
        trace = meter.stop()
    spans = [[Window(*s.window, s.inferences) for s in window] for window in windows]
    measured = [_energy_window(trace, window) for window in spans]
    joules = sum(w.uj_per_inference * w.inferences for w in measured) * 1e-6
    return PerfEnergy(
        source=energy_source(trace, board),
        meter=trace.meter,
        window_kind="device-timed",
        window_seconds=window_seconds,
        windows=measured,
        uj_per_inference=float(np.median([w.uj_per_inference for w in measured])),
        mean_watts=joules / sum(w.device_seconds for w in measured),
        resolution=resolution(trace, [w for window in spans for w in window], PERF_ADVICE),
    )


def _energy_window(trace: PowerTrace, spans: list[Window]) -> EnergyWindow:
    inferences = sum(w.inferences for w in spans)
    joules = float(np.sum(window_energies_j(trace, spans) * [w.inferences for w in spans]))
    return EnergyWindow(
        inferences=inferences,
        device_seconds=sum(w.end - w.start for w in spans),
        spans=[(w.start, w.end, w.inferences) for w in spans],
        uj_per_inference=joules / inferences * 1e6,
    )


def _window(
    client: DeviceSession, board: Board, data: bytes, count: int, window_seconds: float
) -> tuple[list[Span], int]:
    """Back-to-back invokes lasting at least `window_seconds` of device time, and the count that did it: a
    window that fell short is measured again with more invokes (never topped up: one run of invokes), as
    is one with a request sent again (its invokes began at a send not known: start NaN)."""
    for _ in range(WINDOW_ATTEMPTS):
        spans = client.back_to_back(data, count)
        if any(s.seconds is None for s in spans):
            raise UserError(f"{board.id} has no real clock: device-timed energy windows cannot be measured")
        if any(math.isnan(s.start) for s in spans):
            continue
        seconds = sum(s.seconds for s in spans)
        if seconds >= window_seconds:
            return spans, count
        count = math.ceil(count * SHORT_WINDOW_MARGIN * window_seconds / seconds)
    raise LinkError(
        f"{board.id}: no {window_seconds:g} s window in {WINDOW_ATTEMPTS} attempts (its invokes kept getting "
        "faster, or requests were sent again: placing a window in time needs a clean link)"
    )


def _await_sample_after(meter: Meter, end: float) -> None:
    """Wait for a meter sample at or after `end` (on the windows' clock: the edge checked is the window's
    own, never its answer's, which a link faster than its nominal rate puts earlier). With `end` -inf: for
    the first sample, which a meter may give only some time after start() (a poll, a first block), so a
    window begun before it would lie outside the trace."""
    deadline = time.monotonic() + TRAILING_SAMPLE_WAIT_S
    while time.monotonic() < deadline:
        trace = meter.samples()
        if len(trace) and trace.t[-1] >= end:
            return
        time.sleep(0.05)
    which = "after the last window" if end > -math.inf else "after it started"
    raise LinkError(f"the meter gave no sample within {TRAILING_SAMPLE_WAIT_S:g} s {which}")

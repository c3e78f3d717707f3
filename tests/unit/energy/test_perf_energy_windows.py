"""`harness perf --meter`: every energy window lies inside the meter's trace, whatever the meter's sample
grid and the link's pace, on a fake clock (no sleeping, no sockets), and a window truly outside is refused."""

import math
import types

import numpy as np
import pytest

import harness.eval.perf_energy as perf_energy
from harness.boards import get_board
from harness.energy.meter import Meter
from harness.energy.trace import PowerTrace
from harness.energy.windows import Window, window_energies_j
from harness.errors import UserError
from harness.link.session import Span

PERIOD = 0.125  # the meter's update period (a power of two: the grid is exact)
WATTS = 0.5
SECONDS = 0.5  # device time per span: one span per 0.5 s window


class Clock:
    def __init__(self, now: float):
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class GridMeter(Meter):
    """A constant-power meter on the fake clock: a sample every PERIOD from `first` seconds after start(),
    each seen by samples() only once the clock has passed it; with `origin`, a row at start() time comes
    with the first sample (as the WT310 driver places its integration start)."""

    kind = "fake"

    def __init__(self, clock: Clock, first: float, origin: bool):
        self.clock, self.first, self.origin = clock, first, origin
        self.started = math.nan

    def start(self) -> None:
        self.started = self.clock.now

    def samples(self) -> PowerTrace:
        t = [self.started + self.first + k * PERIOD for k in range(int((self.clock.now - self.started) / PERIOD) + 2)]
        t = [x for x in t if x <= self.clock.now]
        if self.origin and t:
            t = [self.started, *t]
        t = np.array(t)
        return PowerTrace(
            t=t,
            volts=np.full(len(t), 5.0),
            amps=np.full(len(t), WATTS / 5.0),
            watts=np.full(len(t), WATTS),
            source="sim",
            meter="grid",
            accumulated_j=WATTS * (t - self.started),
        )

    def stop(self) -> PowerTrace:
        return self.samples()


class Client:
    """back_to_back: one span of SECONDS of device time per window, placed as the harness client places a
    BENCH span: begun once the request's bytes crossed the wire at the port's nominal rate (`wire`), the
    answer read `read_after` after the invokes ended. With `align`, each answer is read just before a meter
    sample, so a sample falls between the answer and (start + device seconds) when wire > read_after."""

    def __init__(self, clock: Clock, wire: float, read_after: float, align: bool):
        self.clock, self.wire, self.read_after, self.align = clock, wire, read_after, align
        self.spans: list[Span] = []

    def back_to_back(self, data: bytes, count: int) -> list[Span]:
        started = self.clock.now
        if self.align:  # wait until the answer will come 0.5 ms before a sample of the meter's grid
            answered_at = started + SECONDS + self.read_after
            sample = math.ceil((answered_at + 0.001) / PERIOD) * PERIOD
            started += sample - 0.0005 - answered_at
        answered = started + SECONDS + self.read_after
        self.clock.now = answered
        span = Span(count, SECONDS, started + self.wire, answered)
        self.spans.append(span)
        return [span]


def _measure(monkeypatch, meter_first: float, origin: bool, wire: float, read_after: float, align: bool):
    clock = Clock(1000.0)
    monkeypatch.setattr(perf_energy, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    meter = GridMeter(clock, meter_first, origin)
    client = Client(clock, wire, read_after, align)
    energy = perf_energy.measure_energy(client, get_board("sim"), b"", meter, SECONDS / 100, window_seconds=SECONDS)
    return energy, client


def test_a_meter_sample_between_the_last_answer_and_its_window_end_leaves_no_window_outside(monkeypatch):
    # The sim's pseudo-terminal carries the BENCH request at once, but its start adds the request's wire time
    # at 115200 baud (1.7 ms): the window ended 1 ms after the answer was read. Waiting only for a sample
    # after the answer, the trace could end between the two: "1 of 1 inference windows fall outside".
    energy, client = _measure(monkeypatch, meter_first=PERIOD, origin=True, wire=0.002, read_after=0.001, align=True)
    assert len(energy.windows) == perf_energy.MLPERF_WINDOWS
    assert energy.mean_watts == pytest.approx(WATTS)
    for window, span in zip(energy.windows, client.spans, strict=True):
        ((start, end, _),) = window.spans
        assert end <= span.answered and end - start == pytest.approx(SECONDS)


def test_a_meter_whose_first_sample_comes_after_start_is_waited_for_before_the_first_window(monkeypatch):
    # As a Joulescope's first block: no sample at start(); the first is placed 0.3 s later.
    energy, client = _measure(monkeypatch, meter_first=0.3, origin=False, wire=0.0, read_after=0.001, align=False)
    assert len(energy.windows) == perf_energy.MLPERF_WINDOWS
    assert energy.mean_watts == pytest.approx(WATTS)
    assert client.spans[0].start >= 1000.3


def test_a_span_never_ends_after_its_answer_was_read():
    late = Span(10, 0.5, start=10.002, answered=10.501)  # the request crossed the link faster than its rate
    assert late.window == (pytest.approx(10.001), pytest.approx(10.501))
    on_time = Span(10, 0.5, start=10.002, answered=10.6)  # a long answer's transfer: stays anchored at the start
    assert on_time.window == (10.002, 10.502)
    assert math.isnan(Span(10, 0.5, start=math.nan, answered=10.6).window[0])  # a resent request: start unknown
    assert Span(10, None, start=10.0, answered=10.6).window is None


def test_a_window_truly_outside_the_trace_is_still_refused():
    t = np.array([0.0, 1.0, 2.0])
    trace = PowerTrace(t=t, volts=t * 0 + 5, amps=t * 0 + 0.1, watts=t * 0 + 0.5, source="sim", meter="m")
    assert window_energies_j(trace, [Window(0.5, 1.5, 2)]) == pytest.approx([0.25])
    for outside in (Window(1.5, 2.0001), Window(-0.0001, 1.0)):
        with pytest.raises(UserError, match="1 of 2 inference windows fall outside"):
            window_energies_j(trace, [Window(0.5, 1.5), outside])


class SpeedingUpClient:
    """Back-to-back invokes that run faster at each request (the virtual board's host clock as load eases)."""

    def __init__(self, seconds_per_invoke: list[float]):
        self.speeds = iter(seconds_per_invoke)
        self.counts: list[int] = []

    def back_to_back(self, data: bytes, count: int) -> list[Span]:
        self.counts.append(count)
        return [Span(count, count * next(self.speeds), start=0.0, answered=1.0)]


def test_a_window_timed_while_invokes_sped_up_is_measured_again_well_past_its_length():
    # Timed at 4 ms, then 2, 1.8, 1.7 ms per invoke: aiming 5 % past the length after each shortfall never
    # catches up within three attempts; aiming 25 % past it gets a 0.6 s window on the second.
    client = SpeedingUpClient([0.002, 0.0018, 0.0017, 0.0016, 0.0015])
    count = math.ceil(perf_energy.COUNT_MARGIN * 0.6 / 0.004)
    spans, used = perf_energy._window(client, get_board("sim"), b"", count, 0.6)
    assert sum(s.seconds for s in spans) >= 0.6 and len(client.counts) == 2 and used == client.counts[-1]


def test_a_window_that_never_reaches_its_length_is_a_link_error_naming_it():
    client = SpeedingUpClient([0.001 / 2**k for k in range(perf_energy.WINDOW_ATTEMPTS)])
    with pytest.raises(perf_energy.LinkError, match=r"no 0\.6 s window in"):
        perf_energy._window(client, get_board("sim"), b"", 100, 0.6)

"""Energy per inference: meter samples integrated inside the windows where the board ran inferences.

A window is (start, end, inferences) on the meter trace's clock. Where the windows come from is
recorded as `kind`:
- `host`: the host's time.monotonic() when INVOKE was sent and when its answer arrived (includes the
  link's latency; what a board without a real clock gives);
- `device-timed`: the device's own timing of the invoke, as long as its timer says, ending when its
  answer (the serial marker) arrived;
- `gpio`: edges of a GPIO the firmware toggles around inference, captured on the meter's own clock
  (a Joulescope GPI or PPK2 logic input), as in MLPerf Tiny's energy mode.
Slow meters (WT310: 100 ms updates) cannot resolve one short inference: give them windows spanning
many back-to-back inferences and the count, as MLPerf Tiny's >= 10 s energy windows do. A window
shorter than MIN_WINDOW_PERIODS meter sample periods is flagged (`resolution`): its energy is mostly
the interpolation between two samples, not a measurement.
"""

from dataclasses import dataclass

import numpy as np

from harness.energy.trace import PowerTrace
from harness.errors import UserError

# host: from sending INVOKE to reading its answer; device-timed: the device's own timing of the invoke,
# ending when its answer arrived (the answer is the serial marker); gpio: edges a meter captured.
WINDOW_KINDS = ("host", "device-timed", "gpio")
# Within one sample period the cumulative energy is a straight line between samples; with a few periods
# per window the interpolated edges are a small share of it (at most a quarter period of the power step each).
MIN_WINDOW_PERIODS = 4
# What a flagged run can do instead: eval's windows are single invokes; perf --meter's are its requests'
# spans, which a longer window does not lengthen (a BENCH answer holds one frame of timings).
EVAL_ADVICE = "meter many back-to-back inferences with harness perf --meter"
PERF_ADVICE = (
    "each span is one request's back-to-back invokes (a BENCH answer holds one response frame of timings), "
    "so a longer --window-seconds adds spans but lengthens none: meter a model with longer invokes, a board "
    "with larger frames, --protocol eembc firmware (one `infer N 0` per window) or a faster meter"
)


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    inferences: int = 1


def window_energies_j(trace: PowerTrace, windows: list[Window]) -> np.ndarray:
    """Joules per inference in each window (the window's energy over its inference count)."""
    outside = [w for w in windows if not trace.covers(w.start, w.end)]
    if outside:
        raise UserError(
            f"{len(outside)} of {len(windows)} inference windows fall outside the meter's samples "
            f"({trace.t[0] if len(trace) else 0:.3f}..{trace.t[-1] if len(trace) else 0:.3f} s): "
            "start the meter before the first inference"
        )
    return np.array([trace.energy_j(w.start, w.end) / w.inferences for w in windows])


def meter_period_s(trace: PowerTrace) -> float | None:
    """The meter's sample period: the median step between its samples (None with fewer than two)."""
    return float(np.median(np.diff(trace.t))) if len(trace) >= 2 else None


def resolution(trace: PowerTrace, windows: list[Window], advice: str = EVAL_ADVICE) -> dict:
    """How the windows compare with the meter's sample period; a statement, ending in `advice`, when
    some are too short."""
    period = meter_period_s(trace)
    lengths = np.array([w.end - w.start for w in windows])
    too_short = int(np.sum(lengths < MIN_WINDOW_PERIODS * period - 1e-9)) if period and len(lengths) else 0
    statement = None
    if too_short:
        statement = (
            f"{too_short} of {len(windows)} windows last less than {MIN_WINDOW_PERIODS} meter sample periods "
            f"({MIN_WINDOW_PERIODS} x {period * 1000:g} ms): their per-inference energy is not measured but "
            f"interpolated between the meter's samples; {advice}"
        )
    return {
        "meter_period_s": period,
        "min_window_periods": MIN_WINDOW_PERIODS,
        "shortest_window_s": float(lengths.min()) if len(lengths) else None,
        "median_window_s": float(np.median(lengths)) if len(lengths) else None,
        "windows_too_short": too_short,
        "windows": len(windows),
        "statement": statement,
    }


def idle_watts(trace: PowerTrace, start: float, end: float) -> float:
    """Mean power over a stretch with no inference (measured before streaming starts)."""
    return trace.mean_watts(start, end)


def energy_summary(
    trace: PowerTrace, windows: list[Window], kind: str, idle: tuple[float, float] | None = None
) -> dict:
    """The figures a run reports: median and spread of µJ per inference, idle power, totals."""
    if kind not in WINDOW_KINDS:
        raise ValueError(f"window kind {kind!r} is not one of {WINDOW_KINDS}")
    per_inference = window_energies_j(trace, windows) * 1e6 if windows else np.array([])
    inferences = sum(w.inferences for w in windows)
    window_seconds = sum(w.end - w.start for w in windows)
    in_windows = float(np.sum(per_inference * [w.inferences for w in windows])) if windows else 0.0
    idle_w = idle_watts(trace, *idle) if idle else None
    return {
        "source": trace.source,
        "meter": trace.meter,
        "windows": kind,
        "inferences": inferences,
        "uj_per_inference": {
            "median": float(np.median(per_inference)) if windows else None,
            "p10": float(np.percentile(per_inference, 10)) if windows else None,
            "p90": float(np.percentile(per_inference, 90)) if windows else None,
            "mean": in_windows / inferences if inferences else None,
        },
        "mean_watts_in_windows": in_windows * 1e-6 / window_seconds if window_seconds > 0 else None,
        "resolution": resolution(trace, windows),
        "idle_watts": idle_w,
        "idle_seconds": (idle[1] - idle[0]) if idle else None,
        "total_j": trace.energy_j(),
        "seconds": float(trace.t[-1] - trace.t[0]) if len(trace) else 0.0,
    }

"""Energy during `harness eval --meter KIND:ADDRESS`: idle first, then one window per INVOKE.

The meter starts once the board has answered HELLO; `idle_seconds` with no request measure idle power;
then each sample's invoke is a window: `device-timed` when the board times its invokes with a real
clock (the device's own duration, ending when its answer arrived, so link transfers stay outside it),
else `host` (from sending INVOKE to reading the answer). The answer's own transfer still falls inside
a device-timed window's end (at most its bytes x 10 / baud). The run folder gains power.parquet (the
trace) and energy.parquet (per sample: when its answer came and its window's energy), which
`harness lpirc-score --time-limit` reads.
"""

import time

from harness.energy.meter import Meter, open_live_meter
from harness.energy.trace import JOULES_PER_WH, PowerTrace
from harness.energy.windows import Window, energy_summary, window_energies_j

DEFAULT_IDLE_SECONDS = 1.0


class EvalMetering:
    def __init__(self, spec: str, idle_seconds: float = DEFAULT_IDLE_SECONDS):
        self.spec = spec
        self.meter: Meter = open_live_meter(spec, "this run")  # a bad spec fails before the board is touched
        self.idle_seconds = idle_seconds
        self.windows: list[Window] = []  # host-timed, one per sample
        self.device_windows: list[Window | None] = []  # device-timed where the board could time them
        self.idle: tuple[float, float] | None = None
        self.streaming_from = 0.0
        self.trace: PowerTrace | None = None

    def __enter__(self):
        self.meter.start()
        started = time.monotonic()
        time.sleep(self.idle_seconds)
        self.idle = (started, time.monotonic())
        self.streaming_from = self.idle[1]
        return self

    def record(self, window: tuple[float, float] | None, device_window: tuple[float, float] | None = None) -> None:
        if window is not None:
            self.windows.append(Window(*window))
            self.device_windows.append(Window(*device_window) if device_window else None)

    @property
    def kind(self) -> str:
        return "device-timed" if self.device_windows and all(self.device_windows) else "host"

    @property
    def measured_windows(self) -> list[Window]:
        return list(self.device_windows) if self.kind == "device-timed" else self.windows

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                time.sleep(0.3)  # one more meter update after the last answer
            self.trace = self.meter.stop()
        finally:
            self.meter.close()

    def summary(self) -> dict:
        trace = self.trace
        figures = energy_summary(trace, self.measured_windows, self.kind, idle=self.idle)
        last = self.windows[-1].end if self.windows else self.streaming_from
        streaming_j = trace.energy_j(self.streaming_from, last)
        figures["streaming"] = {
            "joules": streaming_j,
            "wh": streaming_j / JOULES_PER_WH,
            "seconds": last - self.streaming_from,
        }
        figures["meter_spec"] = self.spec
        return figures

    def columns(self) -> dict[str, list]:
        """Per sample, in stream order: seconds from streaming start to its answer, its window and µJ."""
        windows = self.measured_windows
        energies = window_energies_j(self.trace, windows) * 1e6 if windows else []
        return {
            "received_s": [w.end - self.streaming_from for w in self.windows],
            "window_start_s": [w.start - self.streaming_from for w in windows],
            "window_end_s": [w.end - self.streaming_from for w in windows],
            "window_kind": [self.kind] * len(windows),
            "window_uj": list(map(float, energies)),
        }

    def power_columns(self) -> dict[str, list]:
        columns = self.trace.columns()
        columns["t"] = [t - self.streaming_from for t in columns["t"]]  # the same origin as energy.parquet
        return columns

"""Power meters behind one interface: start(), stop(), samples(), energy_j(); opened from KIND:ADDRESS."""

import importlib
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from harness.energy.trace import PowerTrace
from harness.errors import LinkError, UserError, setting


@dataclass(frozen=True)
class MeterKind:
    """One kind of power meter: what --meter KIND:ADDRESS names, and the class (imported when used) that
    opens it from the ADDRESS."""

    description: str
    module: str
    class_name: str

    def open(self, address: str) -> "Meter":
        return getattr(importlib.import_module(self.module), self.class_name)(address)


# The meters harness can open, registered here and nowhere else (a new meter: a Meter subclass and a line here).
METERS = {
    "wt310": MeterKind(
        "Yokogawa WT300/WT310 over VISA, e.g. wt310:USB0::0x0B21::0x0025::C2PH13047V::INSTR "
        "or wt310:TCPIP0::127.0.0.1::5025::SOCKET",
        "harness.energy.wt310",
        "Wt310Meter",
    ),
    "joulescope": MeterKind(
        "Joulescope JS110/JS220, e.g. joulescope:auto or joulescope:<serial number>",
        "harness.energy.vendor_meters",
        "JoulescopeMeter",
    ),
    "ppk2": MeterKind(
        "Nordic Power Profiler Kit II, e.g. ppk2:/dev/ttyACM0 or ppk2:auto (source meter at 3300 mV)",
        "harness.energy.vendor_meters",
        "Ppk2Meter",
    ),
    "csv": MeterKind(
        "replay of a WT310 log (V,I,P,Wh,sample count per row at 1 s), e.g. csv:powermeter.csv",
        "harness.energy.replay",
        "CsvReplayMeter",
    ),
}
METER_KINDS = {kind: meter.description for kind, meter in METERS.items()}


class Meter(ABC):
    kind: str

    @abstractmethod
    def start(self) -> None:
        """Begin recording (and integrating, on meters that integrate)."""

    @abstractmethod
    def stop(self) -> PowerTrace:
        """End recording; the samples taken since start()."""

    @abstractmethod
    def samples(self) -> PowerTrace:
        """The samples so far (a copy; recording goes on)."""

    def energy_j(self, start: float | None = None, end: float | None = None) -> float:
        return self.samples().energy_j(start, end)

    def close(self) -> None:  # noqa: B027 - most meters hold nothing to release
        """Release the instrument."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PollingMeter(Meter):
    """A background thread asks the instrument for one block of readings after another until stop()."""

    source = "device"
    description = ""
    COLUMNS = 5  # t, volts, amps, watts, accumulated joules (NaN when the meter does not integrate)

    def __init__(self):
        self._blocks: list[np.ndarray] = []
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: Exception | None = None

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _poll(self) -> np.ndarray | None:
        """New readings since the last call as an (n, 5) array, or None; may block briefly."""

    def _end(self) -> None:
        pass

    def start(self) -> None:
        with self._lock:
            self._blocks.clear()
        self._failure = None
        self._begin()
        self._running.set()
        self._thread = threading.Thread(target=self._loop, name=f"{self.kind}-meter", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while self._running.is_set():
                block = self._poll()
                if block is not None and len(block):
                    with self._lock:
                        self._blocks.append(np.asarray(block, dtype=np.float64).reshape(-1, self.COLUMNS))
        except Exception as exc:  # surfaced by stop()/samples() in the caller's thread
            self._failure = exc
            self._running.clear()

    def stop(self) -> PowerTrace:
        self._running.clear()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._end()
        return self.samples()

    def samples(self) -> PowerTrace:
        if self._failure is not None:
            raise LinkError(f"{self.kind} meter stopped answering: {self._failure}")
        with self._lock:
            rows = np.concatenate(self._blocks) if self._blocks else np.zeros((0, self.COLUMNS))
        accumulated = rows[:, 4]
        return PowerTrace(
            t=rows[:, 0],
            volts=rows[:, 1],
            amps=rows[:, 2],
            watts=rows[:, 3],
            source=self.source,
            meter=self.description,
            accumulated_j=accumulated if len(rows) and not np.isnan(accumulated).any() else None,
        )


def open_live_meter(spec: str, purpose: str) -> Meter:
    """A meter that records now: a replayed log cannot time a run or a session, so `csv` is refused."""
    if spec.split(":", 1)[0].lower() == "csv":
        raise UserError(f"{setting('meter')} csv:… replays an old log, which cannot time {purpose}; use a live meter")
    return open_meter(spec)


def open_meter(spec: str) -> Meter:
    """KIND:ADDRESS -> an opened meter (not yet started)."""
    kind, sep, address = spec.partition(":")
    if not sep or not address:
        raise UserError(f"{setting('meter')} {spec!r} is not KIND:ADDRESS; kinds: {', '.join(METER_KINDS)}")
    kind = kind.lower()
    if kind in METERS:
        return METERS[kind].open(address)
    raise UserError(f"unknown meter kind {kind!r} in {setting('meter')} {spec!r}; kinds: {', '.join(METER_KINDS)}")

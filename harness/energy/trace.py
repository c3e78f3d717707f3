"""A meter's samples: times, volts, amps, watts, and the energy under them."""

from dataclasses import dataclass, field

import numpy as np

JOULES_PER_WH = 3600.0


@dataclass
class PowerTrace:
    """Samples on one clock (seconds; host time.monotonic() for live meters, the log's own for replays).

    `accumulated_j`, when the meter integrates itself (WT310 WH item), is its own running energy at each
    sample; energy is then read from it rather than re-integrated from the less frequent power readings.
    """

    t: np.ndarray
    volts: np.ndarray
    amps: np.ndarray
    watts: np.ndarray
    source: str  # device | sim (figures from a simulated instrument are never `device`)
    meter: str  # what measured: the instrument's *IDN? answer, serial number or log file
    accumulated_j: np.ndarray | None = None
    notes: dict = field(default_factory=dict)

    def __post_init__(self):
        self.t = np.asarray(self.t, dtype=np.float64)
        self.volts = np.asarray(self.volts, dtype=np.float64)
        self.amps = np.asarray(self.amps, dtype=np.float64)
        self.watts = np.asarray(self.watts, dtype=np.float64)
        if self.accumulated_j is not None:
            self.accumulated_j = np.asarray(self.accumulated_j, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.t)

    def cumulative_j(self) -> np.ndarray:
        """Energy from the first sample to each sample: the meter's own integral, else trapezoids."""
        if self.accumulated_j is not None:
            return self.accumulated_j - self.accumulated_j[0]
        if len(self.t) < 2:
            return np.zeros(len(self.t))
        steps = np.diff(self.t) * (self.watts[1:] + self.watts[:-1]) / 2
        return np.concatenate([[0.0], np.cumsum(steps)])

    def energy_j(self, start: float | None = None, end: float | None = None) -> float:
        """Energy between two times, the cumulative curve interpolated linearly at both edges."""
        if len(self.t) < 2:
            return 0.0
        start = self.t[0] if start is None else start
        end = self.t[-1] if end is None else end
        cumulative = self.cumulative_j()
        return float(np.interp(end, self.t, cumulative) - np.interp(start, self.t, cumulative))

    def mean_watts(self, start: float, end: float) -> float:
        return self.energy_j(start, end) / (end - start) if end > start else float("nan")

    def covers(self, start: float, end: float) -> bool:
        return len(self.t) >= 2 and self.t[0] <= start and end <= self.t[-1]

    def columns(self) -> dict[str, list]:
        return {
            "t": self.t.tolist(),
            "volts": self.volts.tolist(),
            "amps": self.amps.tolist(),
            "watts": self.watts.tolist(),
            "energy_j": self.cumulative_j().tolist(),
        }

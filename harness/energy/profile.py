"""A scripted power profile: a base power with rectangular pulses, its energy known exactly."""

from dataclasses import dataclass, field
from pathlib import Path

import pydantic

from harness.reading import PROFILE, STRICT, read_json, validate


@dataclass(frozen=True)
class PowerProfile:
    """Watts as a function of time (seconds on the profile's own clock, 0 = when it starts)."""

    idle_watts: float
    volts: float = 3.3
    pulses: tuple[tuple[float, float, float], ...] = field(default=())  # (start, end, watts) not overlapping

    def energy_j(self, start: float, end: float) -> float:
        """The exact integral of the profile between two times."""
        total = self.idle_watts * (end - start)
        for pulse_start, pulse_end, watts in self.pulses:
            overlap = min(end, pulse_end) - max(start, pulse_start)
            if overlap > 0:
                total += (watts - self.idle_watts) * overlap
        return total

    @classmethod
    def load(cls, path: Path) -> "PowerProfile":
        """JSON: {"idle_watts": 0.09, "volts": 3.3, "pulses": [[1.0, 2.0, 0.1], ...]}."""
        data = validate(read_json(path, PROFILE), _ProfileFile, PROFILE, path, fix="see docs/energy.md for its layout")
        return cls(data.idle_watts, data.volts, tuple(data.pulses))


class _ProfileFile(pydantic.BaseModel):
    model_config = STRICT
    idle_watts: float
    volts: float = 3.3
    pulses: list[tuple[float, float, float]] = []

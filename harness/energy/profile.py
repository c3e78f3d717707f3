"""A scripted power profile: a base power with rectangular pulses, its energy known exactly."""

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserError


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
        try:
            data = json.loads(path.read_text())
            return cls(
                idle_watts=float(data["idle_watts"]),
                volts=float(data.get("volts", 3.3)),
                pulses=tuple((float(a), float(b), float(w)) for a, b, w in data.get("pulses", [])),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"cannot read power profile {path} ({exc}); see docs/energy.md for its layout") from exc

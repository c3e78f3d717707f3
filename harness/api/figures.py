"""A run's figure as a value that explains itself: compared with a number it gives a bool, and shown it
says what it is, its source, its 95 % interval and n, so `assert run.accuracy("distance_far") >= 0.8`
fails with the figure itself (the pytest plugin's pytest_assertrepr_compare words the failure with it).

Imports nothing: the pytest plugin reads this module for every failed comparison."""

from dataclasses import dataclass

OPERATORS = {">=": "at least", ">": "above", "<=": "at most", "<": "below"}


@dataclass(frozen=True)
class Figure:
    """One figure of a run: `value` None when the run has none (`missing` says why); a missing figure
    compares False with every bound, so a gate on it fails."""

    name: str  # what it is: "device accuracy on distance_far"
    value: float | None
    source: str  # device, emulated, sim, host or estimated
    unit: str = ""
    n: int | None = None
    ci95: tuple[float, float] | None = None
    missing: str = ""
    data: str = ""  # what the figure was measured on when that is not real data ("synthetic images, not Wake Vision")

    def _compare(self, other, test) -> bool:
        bound = float(other.value if isinstance(other, Figure) else other)
        return self.value is not None and test(self.value, bound)

    def __ge__(self, other) -> bool:
        return self._compare(other, lambda a, b: a >= b)

    def __gt__(self, other) -> bool:
        return self._compare(other, lambda a, b: a > b)

    def __le__(self, other) -> bool:
        return self._compare(other, lambda a, b: a <= b)

    def __lt__(self, other) -> bool:
        return self._compare(other, lambda a, b: a < b)

    def __float__(self) -> float:
        if self.value is None:
            raise ValueError(f"{self.name} has no value: {self.missing}")
        return float(self.value)

    def measured(self) -> str:
        """The value and unit with its source, interval and n (or why there is none)."""
        if self.value is None:
            on = f"; on {self.data}" if self.data else ""
            return f"n/a ({self.source}; {self.missing}{on})"
        unit = f" {self.unit}" if self.unit else ""
        extra = [self.source]
        if self.ci95 is not None:
            extra.append(f"95 % CI {self.ci95[0]:.4g} to {self.ci95[1]:.4g}")
        if self.n is not None:
            extra.append(f"n = {self.n}")
        if self.data:
            extra.append(f"on {self.data}")
        return f"{self.value:.4g}{unit} ({', '.join(extra)})"

    def text(self) -> str:
        """The figure in words: what it is, then `measured()`."""
        return f"{self.name}: {self.measured()}"

    def __repr__(self) -> str:
        return f"<{self.text()}>"

    def __str__(self) -> str:
        return self.text()


def explain(op: str, left, right) -> list[str] | None:
    """A failed comparison of a Figure with a bound, in lines (pytest_assertrepr_compare's form), or None
    when neither side is a Figure."""
    if op not in OPERATORS or not (isinstance(left, Figure) or isinstance(right, Figure)):
        return None
    figure, bound, op = (left, right, op) if isinstance(left, Figure) else (right, left, _MIRRORED.get(op, op))
    shown = bound.text() if isinstance(bound, Figure) else f"{bound:g}"
    return [f"{figure.name} is not {OPERATORS[op]} {shown}", f"  {figure.text()}"]


_MIRRORED = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}  # 0.8 <= figure: the figure >= 0.8

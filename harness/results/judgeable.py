"""Which latency figures can be judged, declared once per figure and source: the smallest relative change
worth calling one, or none (judged only with a tolerance the user names). `harness runs compare`, the gates of
`harness runs check`, the report and the Python API (so the pytest plugin) all read this table.

QEMU instruction counts are exact; a board's cycle counter and its timer nearly so. The virtual board's
figures are this host's wall-clock time, shared with whatever else the host runs: they are reported, and
judged only when the user names a tolerance. A figure and source not in the table is judged the same way."""

from dataclasses import dataclass

from harness.results.summary import Latency, Stats

FIGURES = ("instructions", "cycles", "micros")  # a Latency's figures, most exact first
UNITS = {"instructions": "instructions", "cycles": "cycles", "micros": "µs"}


@dataclass(frozen=True)
class Judgeable:
    tolerance: float | None  # the smallest relative change worth calling one; None: only with a named tolerance
    what: str  # what the figure is, said beside it


TABLE = {
    ("instructions", "emulated"): Judgeable(0.0, "QEMU -icount instruction counts, exact"),
    ("cycles", "device"): Judgeable(0.02, "the board's cycle counter"),
    ("micros", "device"): Judgeable(0.02, "the board's timer"),
    ("micros", "sim"): Judgeable(None, "this machine's wall-clock time"),
}


def judgeable(figure: str, source: str) -> Judgeable:
    return TABLE.get((figure, source), Judgeable(None, ""))


def described(figure: str, source: str) -> str:
    """The figure's source and what it is: `emulated: QEMU -icount instruction counts, exact`."""
    what = judgeable(figure, source).what
    return f"{source}: {what}" if what else f"{source} {UNITS[figure]}"


def tolerance(figure: str, sources: tuple[str, ...], given: float | None = None) -> float | None:
    """The tolerance a change of `figure` between runs of `sources` is judged with: `given`, else the largest of
    the sources' own; None when a source has none (the change is then not judged)."""
    if given is not None:
        return given
    own = [judgeable(figure, source).tolerance for source in sources]
    return None if None in own else max(own)


def why_not_judged(figure: str, source: str, named_by: str) -> str:
    """Why a change of a figure without a tolerance of its own is not judged, and how to judge it."""
    return f"{described(figure, source)}: a change is judged only with a tolerance ({named_by})"


def figures(latency: Latency) -> dict[str, Stats]:
    """The figures the latency record has, most exact first."""
    return {name: stats for name in FIGURES if (stats := getattr(latency, name)) is not None}

"""What a gate of `harness runs check` finds: passed, failed or not judged, with the figure judged, and for a
gate over subsets the verdict on each subset (JUnit gives each its own test case)."""

from dataclasses import dataclass
from typing import Literal

Status = Literal["passed", "failed", "not judged"]


@dataclass(frozen=True)
class Part:
    """One subset's verdict within a gate over subsets."""

    subset: str
    status: Status
    figure: str  # "n/a" when not judged
    bound: str
    detail: str

    def as_dict(self) -> dict:
        return {"subset": self.subset, "status": self.status, "figure": self.figure, "bound": self.bound}


@dataclass(frozen=True)
class Verdict:
    """What a gate found: its figure (None when not judged) and a note (why not judged, what failed)."""

    status: Status
    figure: str | None
    note: str = ""
    unjudged: tuple[str, ...] = ()  # subsets with a bound of their own and no value (they fail under `strict`)
    parts: tuple[Part, ...] = ()  # per subset, for gates over subsets


def judged(passed: bool, figure: str, note: str = "") -> Verdict:
    return Verdict("passed" if passed else "failed", figure, note)


def not_judged(why: str) -> Verdict:
    return Verdict("not judged", None, why)


def combined(verdicts: list[Verdict]) -> Verdict:
    """Several bounds of one gate as one verdict: failed when a judged one failed, else not judged when one was
    not (never passed on part of its bounds), else passed."""
    if len(verdicts) == 1:
        return verdicts[0]
    figures = "; ".join(v.figure for v in verdicts if v.figure is not None)
    unjudged = [v.note for v in verdicts if v.figure is None]
    notes = [v.note for v in verdicts if v.figure is not None and v.note] + [f"not judged: {n}" for n in unjudged]
    if any(v.status == "failed" for v in verdicts):
        return Verdict("failed", figures, "; ".join(notes))
    if unjudged:
        return not_judged("; ".join(unjudged) + (f" (judged: {figures})" if figures else ""))
    return Verdict("passed", figures, "; ".join(notes))

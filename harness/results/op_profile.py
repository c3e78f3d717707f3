"""An eval run's operator profile (`harness eval --profile`): one invoke of the run's first sample timed operator by
operator on the board, stored in summary.json. Every view (console, report, API) takes its shares from here."""

from collections import defaultdict
from dataclasses import dataclass

from harness.results.ranges import Count, NonNegative
from harness.results.run_checks import Id, PlainText
from harness.results.schema import Source


@dataclass(frozen=True, kw_only=True)
class OperatorTime:
    """One operator of the invoke, in the order the interpreter ran it."""

    operator: PlainText  # its kind as the runner names it: CONV_2D, DEPTHWISE_CONV_2D, ...
    value: NonNegative  # in the profile's unit


@dataclass(frozen=True, kw_only=True)
class OperatorShare:
    """Operators of one kind taken together: how many ran, their figure and their share of the whole invoke."""

    operator: str
    count: int
    value: float
    share: float | None


@dataclass(frozen=True, kw_only=True)
class OperatorProfile:
    source: Source
    unit: str  # instructions (QEMU -icount), cycles (a cycle counter) or µs (a wall clock)
    board: Id
    sample: PlainText  # the id of the sample timed
    total: NonNegative  # the whole invoke
    operators: list[OperatorTime]  # each timed operator (the firmware times at most its HP_MAX_PROFILED_OPS)
    operators_run: Count  # every operator the invoke ran

    def text(self, value: float) -> str:
        """A figure of this profile in its unit (a wall clock's microseconds to a tenth, counts whole)."""
        return f"{value:,.1f} {self.unit}" if self.unit == "µs" else f"{value:,.0f} {self.unit}"

    def share(self, value: float) -> float | None:
        return value / self.total if self.total else None

    @property
    def coverage(self) -> float | None:
        """Share of the whole invoke the operators' figures account for (the rest: the interpreter between them)."""
        return self.share(sum(op.value for op in self.operators))

    @property
    def by_kind(self) -> list[OperatorShare]:
        """Operators taken together by kind, the costliest first."""
        counts: dict[str, int] = defaultdict(int)
        values: dict[str, float] = defaultdict(float)
        for op in self.operators:
            counts[op.operator] += 1
            values[op.operator] += op.value
        kinds = sorted(values, key=lambda kind: -values[kind])
        return [OperatorShare(operator=k, count=counts[k], value=values[k], share=self.share(values[k])) for k in kinds]

    @property
    def untimed(self) -> int:
        """Operators the invoke ran that the firmware's table had no room to time."""
        return max(self.operators_run - len(self.operators), 0)

    def headline(self) -> str:
        """One line: the costliest kind of operator and how much of the invoke the profile accounts for."""
        kinds = self.by_kind
        if not kinds:
            return f"no operator timed ({self.source})"
        top = kinds[0]
        share = f"{top.share:.0%}" if top.share is not None else "n/a"
        covered = f"{self.coverage:.0%}" if self.coverage is not None else "n/a"
        many = f"{top.count} operator{'s' if top.count > 1 else ''}"
        return (
            f"{top.operator} ({many}) takes {share} of the invoke ({self.text(self.total)}); "
            f"{len(self.operators)} operators timed cover {covered} ({self.source})"
        )

"""A layer trace: one input run on a board operator by operator, each operator's outputs compared with the host's
(`harness debug layers`, `harness eval --trace-layers N`). Stored in summary.json; every view (console, report,
API) takes its first departure, headline and rows from here."""

from dataclasses import dataclass

from harness.results.ranges import Count, NonNegative
from harness.results.run_checks import Id, PlainText
from harness.results.schema import Source

# How a difference is counted: in quantization steps (integer tensors: one step is one unit of the stored
# integer) or as an absolute difference of values (float tensors).
STEPS, ABSOLUTE = "steps", "absolute"


@dataclass(frozen=True, kw_only=True)
class LayerDifference:
    """One operator of the invoke, in the order the interpreter ran it, against the host's same operator."""

    index: Count
    operator: PlainText  # its kind as the runtime names it: CONV_2D, DEPTHWISE_CONV_2D, ...
    shape: list[Count]  # of its first output
    equal: bool  # every output's digest (CRC-32, min, max, sum) equals the host's
    # Over the outputs whose bytes were fetched from the board; None where they were not (equal, or past the budget).
    largest: NonNegative | None = None  # the largest difference of one element, in `unit`
    unit: PlainText = STEPS
    differing: Count | None = None  # elements that differ
    elements: Count = 0  # elements in its outputs

    @property
    def fetched(self) -> bool:
        return self.differing is not None

    def difference_text(self) -> str:
        if self.equal:
            return "equal"
        if not self.fetched:
            return "differs (bytes not fetched)"
        if self.unit == STEPS:
            largest = f"{self.largest:g} step{'s' if self.largest != 1 else ''}"
        else:
            largest = f"{self.largest:.3g}"
        return f"{self.differing:,} of {self.elements:,} elements differ, by at most {largest}"


@dataclass(frozen=True, kw_only=True)
class LayerTrace:
    source: Source  # where the board's side ran: device, emulated (QEMU) or sim
    reference: PlainText  # the host interpreter compared with
    board: Id
    model: PlainText
    sample: PlainText  # the id of the sample traced
    operators_run: Count
    layers: list[LayerDifference]
    fetched_bytes: Count = 0  # tensor bytes fetched from the board to count the differences

    @property
    def first_departure(self) -> LayerDifference | None:
        return next((layer for layer in self.layers if not layer.equal), None)

    @property
    def departures(self) -> int:
        return sum(not layer.equal for layer in self.layers)

    def headline(self) -> str:
        """One line: where the board first departs from the host, or that it never does."""
        where = f"sample {self.sample} on {self.board} ({self.source}) against {self.reference}"
        first = self.first_departure
        if first is None:
            return f"all {len(self.layers)} operators equal the host's: {where}"
        return (
            f"first departure at operator {first.index} ({first.operator}): {first.difference_text()}; "
            f"{self.departures} of {len(self.layers)} operators differ: {where}"
        )

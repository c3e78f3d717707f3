"""The cells `harness runs` and the report's tables share: an accuracy with its interval, a latency with its
source. Plain text from figures already computed, so a command that only lists runs imports no plotting or
statistics package (harness/results/cross_run.py, which draws and compares, takes them from here)."""

from typing import TYPE_CHECKING

from harness.console import percent

if TYPE_CHECKING:
    from harness.results.runs import EvalHeadline


def interval_cell(accuracy: float | None, ci: tuple[float, float] | list[float] | None) -> str:
    """An accuracy with its Wilson 95 % interval, as the report shows it."""
    if accuracy is None:
        return "n/a"
    return f"{percent(accuracy)} % [{percent(ci[0])}-{percent(ci[1])}]" if ci else f"{percent(accuracy)} %"


def latency_cell(head: "EvalHeadline") -> str:
    """An eval run's median latency in its unit, with its source."""
    if head.instructions_median:
        return f"{head.instructions_median:,.0f} instr ({head.latency_source})"
    if head.latency_median_us:
        return f"{head.latency_median_us / 1000:.2f} ms ({head.latency_source})"
    return f"n/a ({head.latency_source})"

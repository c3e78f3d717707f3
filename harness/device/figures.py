"""A device timing as the figure it honestly is: cycles from a cycle counter, exact instruction
counts from QEMU -icount, microseconds from a wall clock — each with its source label."""

from dataclasses import dataclass

from harness.boards import Board
from harness.device.qemu import emulated_instructions
from harness.link.protocol import Timing


@dataclass(frozen=True)
class Figure:
    value: float | None
    unit: str  # "cycles", "instructions" or "µs"
    source: str  # the board's latency source: device, emulated or sim

    def text(self) -> str:
        if self.value is None:
            return "n/a"
        return f"{self.value:,.1f} {self.unit}" if self.unit == "µs" else f"{self.value:,.0f} {self.unit}"


def latency_figure(measured: Timing, board: Board) -> Figure:
    instructions = emulated_instructions(measured.ticks, measured.tick_hz, board)
    if instructions is not None:
        return Figure(instructions, "instructions", board.latency_source)
    if measured.cycles is not None:
        return Figure(measured.cycles, "cycles", board.latency_source)
    return Figure(measured.micros, "µs", board.latency_source)

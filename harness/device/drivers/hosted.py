"""Hosted boards (kind "hosted"): a real board's HAL compiled for this machine against framework stand-ins
(harness/device/hosted_hal.py), a process harness starts for the connection, served on a pseudo-terminal.
Its firmware is built as it starts: harness's protocol, or with --protocol eembc the card's MLPerf Tiny DUT
(harness/firmware/eembc_dut.py), the same C DUT the virtual board and QEMU boards run, at its own rate."""

from collections.abc import Iterator
from contextlib import contextmanager

from harness.device.drivers.base import Driver, Endpoint
from harness.device.hosted_hal import hosted_board_process
from harness.link.registry import PROTOCOL_NAMES


class HostedDriver(Driver):
    kind = "hosted"
    protocols = PROTOCOL_NAMES
    emulates = frozenset({"emulate_invoke_ms"})  # the UART's pace is the HAL's own

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        dut = self.dut_build()
        board = self.board.with_link(baudrate=dut.baud) if dut else self.board  # the DUT's serial rate
        with (
            hosted_board_process(board, self.model, dut=dut) as pty,
            self._open(pty, board, comes_back=False) as endpoint,  # its pty ends with its process
        ):
            yield endpoint

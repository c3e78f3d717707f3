"""Hosted boards (kind "hosted"): a real board's HAL compiled for this machine against framework stand-ins
(harness/device/hosted_hal.py), a process harness starts for the connection, served on a pseudo-terminal.
Its firmware is built as it starts; it speaks our protocol only."""

from collections.abc import Iterator
from contextlib import contextmanager

from harness.device.drivers.base import Driver, Endpoint
from harness.device.hosted_hal import hosted_board_process


class HostedDriver(Driver):
    kind = "hosted"
    emulates = frozenset({"emulate_invoke_ms"})  # the UART's pace is the HAL's own

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        with (
            hosted_board_process(self.board, self.model.path if self.model else None) as pty,
            self._open(pty, comes_back=False) as endpoint,  # its pty ends with its process
        ):
            yield endpoint

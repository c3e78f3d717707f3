"""A real board reached through a labgrid place (--labgrid-place NAME; harness/device/labgrid_place.py): the
place is acquired for the connection, its NetworkSerialPort opened over RFC 2217, and released after."""

from collections.abc import Iterator
from contextlib import contextmanager

from harness.device.drivers.base import Driver, Endpoint
from harness.device.labgrid_place import labgrid_port
from harness.errors import UserError, setting
from harness.link.protocol import DeviceInfo
from harness.link.session import Unsupported


class LabgridDriver(Driver):
    kind = "labgrid"
    protocols = ("harness", "eembc")

    @classmethod
    def refuse_port(cls, board, port) -> None:
        if port not in (None, "auto"):
            raise UserError(f"the labgrid place gives the port: drop {setting('port')} or {setting('labgrid_place')}")

    def check(self) -> None:
        if self.board.kind != "device":
            raise UserError(f"{setting('labgrid_place')} needs a real board, not {self.board.id} ({self.board.kind})")
        super().check()

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        with labgrid_port(self.options.labgrid_place) as url, self._open(url) as endpoint:
            yield endpoint

    def flash(self, project=None) -> DeviceInfo | None:
        raise Unsupported(
            f"flash a labgrid place's board with labgrid's own tools, then use {setting('labgrid_place')}"
        )

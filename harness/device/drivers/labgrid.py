"""A real board reached through a labgrid place (--labgrid-place NAME; harness/device/labgrid_place.py): the
place is acquired for the connection, its NetworkSerialPort opened over RFC 2217 (harness's client,
harness/link/rfc2217_fast.py), and released after."""

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from harness.boards import Board
from harness.device.drivers.base import Driver, Endpoint
from harness.device.labgrid_address import coordinator_address
from harness.device.labgrid_place import labgrid_port
from harness.errors import LinkError, UserError, setting
from harness.link.protocol import DeviceInfo
from harness.link.registry import PROTOCOL_NAMES
from harness.link.session import Unsupported

OPEN_SECONDS = 8
RETRY_SECONDS = 0.5


class LabgridDriver(Driver):
    kind = "labgrid"
    protocols = PROTOCOL_NAMES
    runs_users_firmware = True
    takes_baud = True

    @classmethod
    def refuse_port(cls, board, port) -> None:
        if port not in (None, "auto"):
            raise UserError(f"the labgrid place gives the port: drop {setting('port')} or {setting('labgrid_place')}")

    @classmethod
    def refuse_board(cls, board: Board, option: str = "labgrid_place") -> None:
        """A labgrid place holds a real board (kind "device"): refuse any other, naming the option."""
        if board.kind != "device":
            raise UserError(f"{setting(option)} needs a real board, not {board.id} ({board.kind})")

    def check(self) -> None:
        self.refuse_board(self.board)
        coordinator_address()
        super().check()

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        place = self.options.labgrid_place
        with labgrid_port(place) as url, ExitStack() as stack:
            # The exporter starts ser2net as the place is acquired; on a busy host it may not answer yet.
            deadline = time.monotonic() + OPEN_SECONDS
            while True:
                try:
                    endpoint = stack.enter_context(self._open(url))
                    break
                except UserError as exc:  # the farm gave this port: no port of the user's to fix
                    if time.monotonic() < deadline:
                        time.sleep(RETRY_SECONDS)
                        continue
                    raise LinkError(
                        f"labgrid place {place}'s serial port ({url}) did not open within {OPEN_SECONDS} s: "
                        f"{exc.__cause__ or exc}; check that the board is attached to the place's exporter"
                    ) from None
            yield endpoint

    def reflash_advice(self) -> str:
        place, board = self.options.labgrid_place, self.board.id
        return (
            f"flash place {place}'s board with it: build the firmware with `harness firmware build --board {board} "
            f"--model MODEL`, then write it with labgrid's tools (`labgrid-client -p {place} flashscript` or "
            f"`bootstrap`, as the place's environment sets them up), or on its exporter host with "
            f"`harness flash --board {board} --serial SERIAL`"
        )

    def flash(self, project=None) -> DeviceInfo | None:
        raise Unsupported(
            f"flash a labgrid place's board with labgrid's own tools, then use {setting('labgrid_place')}"
        )

"""Board drivers, one per board kind, registered here and nowhere else.

Each owns how its device starts and stops, how it is flashed (where that applies) and how its link
opens: virtual (the sim board process), emulated (QEMU), hosted (a real HAL compiled for this machine),
device (a serial port, found by USB id or named) and labgrid (a device board through a labgrid place).
`driver_for` picks one by the board's kind, labgrid when a place is given, and refuses before anything
starts what that board, its protocol or the command's needs cannot do.
"""

from harness.boards import Board
from harness.device.drivers.base import ConnectOptions, Driver, Endpoint
from harness.device.drivers.device import SerialDeviceDriver
from harness.device.drivers.emulated import EmulatedDriver
from harness.device.drivers.hosted import HostedDriver
from harness.device.drivers.labgrid import LabgridDriver
from harness.device.drivers.virtual import VirtualDriver
from harness.errors import UserError
from harness.model.tflite_file import TfliteModel

DRIVERS: dict[str, type[Driver]] = {
    driver.kind: driver for driver in (VirtualDriver, EmulatedDriver, HostedDriver, SerialDeviceDriver, LabgridDriver)
}

__all__ = ["DRIVERS", "ConnectOptions", "Driver", "Endpoint", "driver_for", "driver_type"]


def driver_type(board: Board, labgrid_place: str | None = None) -> type[Driver]:
    kind = "labgrid" if labgrid_place else board.kind
    if kind not in DRIVERS:
        raise UserError(f"board {board.id}: unknown kind {board.kind!r} in {board.source_file}")
    return DRIVERS[kind]


def driver_for(board: Board, model: TfliteModel | None, options: ConnectOptions | None = None) -> Driver:
    """The driver for this board and connection, its options checked."""
    options = options or ConnectOptions()
    return driver_type(board, options.labgrid_place)(board, model, options)

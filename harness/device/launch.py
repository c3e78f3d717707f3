"""Start the board a run talks to and hand back a connected device session: a lookup of its driver
(harness/device/drivers/, one per board kind) with the connection's options."""

from contextlib import AbstractContextManager

from harness.boards import Board
from harness.device.drivers import ConnectOptions, driver_for, driver_type
from harness.errors import UserError, setting
from harness.link.registry import NATIVE_PROTOCOL, session_type
from harness.link.session import DeviceSession
from harness.model.tflite_file import TfliteModel

__all__ = ["ConnectOptions", "connect", "with_link_options"]


def connect(
    board: Board, model: TfliteModel | None, options: ConnectOptions | None = None
) -> AbstractContextManager[DeviceSession]:
    """A session that has said hello to the board running `model` (None: self-test firmware), for the block.
    The board's driver starts it (virtual, QEMU and hosted boards) or finds it (real ones); what the board,
    the protocol or `options.roles` rule out is refused here, before anything starts."""
    return driver_for(board, model, options).session()


def with_link_options(
    board: Board,
    link_baud: int | None = None,
    emulate_invoke_ms: float | None = None,
    switch_baud: int | None = None,
    baud: int | None = None,
    protocol: str = NATIVE_PROTOCOL,
) -> Board:
    """The board with command-line link settings applied: the virtual board's emulated baud rate (also
    the rate the link starts at) and inference time, the rate to switch to after the handshake, and a real
    board's serial rate (`baud`; unless given, the rate a protocol's firmware sets for itself, as MLPerf
    Tiny's 115200, else the board file's)."""
    driver = driver_type(board)
    if baud is not None and not driver.takes_baud:
        raise UserError(
            f"{setting('baud')} sets a real board's serial rate: harness opens the link of {board.id} "
            f"({board.kind} board) itself; drop it (the virtual board's emulated rate is {setting('link_baud')})"
        )
    firmware_baud = session_type(protocol).FIRMWARE_BAUD
    if driver.takes_baud and (baud is not None or firmware_baud is not None):
        rate = baud if baud is not None else firmware_baud
        if rate in board.link.forbidden_baudrates:
            raise UserError(
                f"{setting('baud')} {rate} is a rate {board.id}'s USB bridge takes as a command "
                "(its forbidden_baudrates); choose another"
            )
        board = board.with_link(baudrate=rate)
    emulation = {"link_baud": link_baud, "emulate_invoke_ms": emulate_invoke_ms}
    emulation = {name: value for name, value in emulation.items() if value is not None}
    if emulation:
        if not emulation.keys() <= driver.emulates:
            raise UserError(
                f"{setting('link_baud')} and {setting('emulate_invoke_ms')} emulate a link on the virtual board: "
                f"use {setting('board')} sim"
            )
        board = board.with_sim(**emulation)
    return board if switch_baud is None else board.with_link(switch_baudrate=switch_baud)

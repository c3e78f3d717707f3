"""Find a board's serial port from the USB IDs in its board file."""

from serial.tools import list_ports

from harness.boards import Board
from harness.errors import UserError


def matching_ports(board: Board) -> list[str]:
    wanted = {usb_id.upper() for usb_id in board.usb_ids}
    found = []
    for port in list_ports.comports():
        if port.vid is not None and f"{port.vid:04X}:{port.pid:04X}" in wanted:
            found.append(port.device)
    return sorted(found)


def find_port(board: Board) -> str:
    ports = matching_ports(board)
    if len(ports) == 1:
        return ports[0]
    if not ports:
        raise UserError(
            f"no {board.id} found on USB (looked for {', '.join(board.usb_ids) or 'no IDs'}); connect it or pass --port"
        )
    raise UserError(f"several {board.id} boards found ({', '.join(ports)}); choose one with --port")

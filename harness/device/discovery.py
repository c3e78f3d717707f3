"""Find boards on USB from the VID:PID (and serial number) in their board files."""

from serial.tools import list_ports

from harness.boards import Board
from harness.errors import DeviceNotFound, UserError, setting


def _usb_id(port) -> str | None:
    return f"{port.vid:04X}:{port.pid:04X}" if port.vid is not None else None


def attached_boards(boards) -> list[dict]:
    """Every serial port whose USB id belongs to a board file: board, port, USB id, serial number."""
    found = []
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        usb_id = _usb_id(port)
        for board in boards:
            if usb_id and usb_id in {u.upper() for u in board.link.usb_ids}:
                found.append(
                    {"board": board.id, "port": port.device, "usb_id": usb_id, "serial_number": port.serial_number}
                )
    return found


def find_port(board: Board, serial_number: str | None = None) -> str:
    """The one attached port of this board (of this serial number, when several are attached)."""
    candidates = [f for f in attached_boards([board]) if serial_number in (None, f["serial_number"])]
    if len(candidates) == 1:
        return candidates[0]["port"]
    if not candidates:
        wanted = f" with serial number {serial_number}" if serial_number else ""
        raise DeviceNotFound(
            f"no {board.id}{wanted} found on USB (looked for {', '.join(board.link.usb_ids) or 'no IDs'}); "
            f"connect it or pass {setting('port')}"
        )
    listing = ", ".join(f"{c['port']} (serial {c['serial_number']})" for c in candidates)
    raise UserError(
        f"several {board.id} boards found: {listing}; choose one with {setting('port')} or {setting('serial')}"
    )

"""Open a link to a device: a serial device path or any pyserial URL (socket://, rfc2217://, loop://)."""

import serial

from harness.errors import UserError

POLL_SECONDS = 0.05


def open_link(url: str, baudrate: int = 115200) -> serial.SerialBase:
    try:
        port = serial.serial_for_url(url, baudrate=baudrate, timeout=POLL_SECONDS, write_timeout=10)
    except (serial.SerialException, ValueError) as exc:
        raise UserError(f"cannot open link {url!r}: {exc}; check the port or pass --port") from exc
    return port

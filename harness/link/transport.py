"""Open a link to a device: a serial device path or any pyserial URL (socket://, rfc2217://, loop://);
rfc2217:// opens with harness's faster client (harness/link/rfc2217_fast.py).

A transport of your own is a pyserial URL handler: a module `<package>.protocol_<scheme>` with a `Serial`
class (pyserial's `serial_for_url` finds it by the URL's scheme); HARNESS_URL_HANDLERS names the packages
(comma-separated) harness adds to pyserial's search before it opens a link.
"""

import os
import time

import serial

from harness.errors import DeviceNotFound, UserError, setting
from harness.link import rfc2217_fast
from harness.link.port_urls import PORT_FORMS, port_url_problem

POLL_SECONDS = 0.05
ESP32_RESET_SECONDS = 0.1
ESP32_BOOT_SECONDS = 1.5


def _add_url_handlers() -> None:
    for package in filter(None, (p.strip() for p in os.environ.get("HARNESS_URL_HANDLERS", "").split(","))):
        if package not in serial.protocol_handler_packages:
            serial.protocol_handler_packages.append(package)


def check_url(url: str) -> None:
    """A malformed URL (`socket://host:99999`, `socket://[::1`, `tcp://x`) is bad input, refused in one line
    naming it and the accepted forms, before pyserial words it in its own terms (or as a board not found)."""
    problem = port_url_problem(url, custom_schemes=len(serial.protocol_handler_packages) > 1)
    if problem:
        raise UserError(f"cannot open link {url!r}: {problem}; check the port: use {PORT_FORMS} with {setting('port')}")


def open_link(url: str, baudrate: int = 115200, reset_on_connect: str | None = None) -> serial.SerialBase:
    _add_url_handlers()
    check_url(url)
    try:
        settings = {"baudrate": baudrate, "timeout": POLL_SECONDS, "write_timeout": 10}
        if url.startswith("rfc2217://"):
            port = rfc2217_fast.Serial(**settings)  # pyserial's own RFC 2217 client is slower than a fast UART
            port.port = url
        else:
            port = serial.serial_for_url(url, **settings, do_not_open=True)
        if reset_on_connect == "esp32":
            port.dtr = False  # applied as the port opens: neither EN nor IO0 is pulled
            port.rts = False
        port.open()
    except (serial.SerialException, ValueError) as exc:
        # ValueError: a URL pyserial cannot read; otherwise nothing is there (no such device, nothing listening)
        refusal = UserError if isinstance(exc, ValueError) else DeviceNotFound
        raise refusal(f"cannot open link {url!r}: {exc}; check the port or pass {setting('port')}") from exc
    if reset_on_connect == "esp32":
        port.rts = True  # EN low: reset, with IO0 high so the application boots
        time.sleep(ESP32_RESET_SECONDS)
        port.rts = False
        time.sleep(ESP32_BOOT_SECONDS)
        port.reset_input_buffer()  # the ROM's boot messages
    return port

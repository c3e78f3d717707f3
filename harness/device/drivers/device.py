"""Real boards on a serial port (kind "device"): found by the USB id in the board file (and --serial), or
named with --port (a device path or any pyserial URL). harness neither starts nor stops them; `harness
flash` uploads their firmware with PlatformIO. They speak our protocol or MLPerf Tiny / EEMBC's."""

from collections.abc import Iterator
from contextlib import contextmanager

from harness.device.discovery import find_port
from harness.device.drivers.base import Driver, Endpoint
from harness.link.protocol import DeviceInfo
from harness.link.registry import PROTOCOL_NAMES


class SerialDeviceDriver(Driver):
    kind = "device"
    protocols = PROTOCOL_NAMES
    runs_users_firmware = True
    takes_port = True
    takes_baud = True
    uploads_project = True

    @property
    def named_port(self) -> str | None:
        return None if self.options.port in (None, "auto") else self.options.port

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        url = self.named_port or find_port(self.board, self.options.serial_number)
        with self._open(url) as endpoint:
            yield endpoint

    def flash(self, project=None) -> DeviceInfo | None:
        """The generated project uploaded, then HELLO from the firmware it loaded."""
        self.upload(project)
        return super().flash()

    def upload(self, project) -> None:
        """`pio run -t upload` of the generated project (PlatformIO finds the port unless one is named)."""
        from harness.firmware.platformio import upload

        upload(project, self.named_port)

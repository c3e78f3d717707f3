"""`--labgrid-place NAME`: a board in a labgrid farm. harness acquires the place with labgrid-client,
reads its serial port (NetworkSerialPort, served by the exporter over RFC 2217) through labgrid's
Python API, and releases the place when the command ends. labgrid is imported only here."""

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import LinkError, UserError, setting

ACQUIRE_SECONDS = 60


def _labgrid():
    try:
        import labgrid  # noqa: F401
        from labgrid import Target
        from labgrid.resource import NetworkSerialPort, RemotePlace
    except ImportError:
        raise UserError(
            f"{setting('labgrid_place')} needs labgrid: `pip install labgrid`, and LG_COORDINATOR set"
        ) from None
    if shutil.which("labgrid-client") is None:
        raise UserError(f"{setting('labgrid_place')} needs the labgrid-client command on PATH (it comes with labgrid)")
    return Target, RemotePlace, NetworkSerialPort


def _client(place: str, *command: str) -> None:
    done = subprocess.run(
        ["labgrid-client", "-p", place, *command], capture_output=True, text=True, timeout=ACQUIRE_SECONDS
    )
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LinkError(f"labgrid-client -p {place} {' '.join(command)} failed: {detail}")


@contextmanager
def labgrid_port(place: str) -> Iterator[str]:
    """The pyserial URL of the place's serial port, with the place acquired for the block."""
    Target, RemotePlace, NetworkSerialPort = _labgrid()
    _client(place, "acquire")
    try:
        target = Target(f"harness-{place}")
        RemotePlace(target, name=place)
        port = target.get_resource(NetworkSerialPort, wait_avail=True)
        yield f"rfc2217://{port.host}:{port.port}"
    finally:
        _client(place, "release")

"""QEMU boards: run our ARM firmware on an emulated Cortex-M, its UART0 on a local TCP socket.

Harness owns the process: it starts QEMU for one command and stops it afterwards, also on errors
and Ctrl-C; QEMU also dies with harness if harness is killed (PR_SET_PDEATHSIG).
"""

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import serial

from harness.boards import Board
from harness.device.processes import die_with_parent, stop
from harness.errors import LinkError, UserError

CONNECT_SECONDS = 20


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def qemu_command(board: Board, elf: Path, port: int, debug_log: Path) -> list[str]:
    qemu = shutil.which("qemu-system-arm")
    if qemu is None:
        raise UserError("qemu-system-arm not found: install Debian's qemu-system-arm (`scripts/install --test` does)")
    return [
        qemu,
        "-M",
        board.qemu.machine,
        "-display",
        "none",
        "-monitor",
        "none",
        "-icount",
        f"shift={board.qemu.icount_shift}",
        "-kernel",
        str(elf),
        "-serial",
        f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on",  # the link; QEMU waits for harness
        "-serial",
        f"file:{debug_log}",  # UART1: the firmware's diagnostics
    ]


def _connect(port: int, proc: subprocess.Popen) -> serial.SerialBase:
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        try:
            link = serial.serial_for_url(f"socket://127.0.0.1:{port}", timeout=0.05, write_timeout=10)
            # Small writes go at once: a command-and-answer protocol (EEMBC's m-ready after every 31 bytes)
            # would otherwise wait out Nagle's algorithm against delayed ACKs, ~40 ms a round trip.
            link._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return link
        except serial.SerialException:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def qemu_link(board: Board, elf: Path) -> Iterator[serial.SerialBase]:
    """QEMU running `elf`, for the duration of the block; yields the open link to its UART0."""
    with tempfile.TemporaryDirectory(prefix="harness-qemu-") as tmp, open(Path(tmp) / "qemu.stderr", "w+") as stderr:
        port = _free_port()
        proc = subprocess.Popen(
            qemu_command(board, elf, port, Path(tmp) / "uart1.log"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=die_with_parent,
        )
        link = None
        try:
            try:
                link = _connect(port, proc)
            except serial.SerialException as exc:
                stderr.seek(0)
                detail = (stderr.read().strip().splitlines() or [str(exc)])[-1]
                raise LinkError(f"QEMU for {board.id} did not start: {detail}") from exc
            yield link
        finally:
            if link is not None:
                link.close()
            stop(proc)


def emulated_instructions(ticks: int | None, tick_hz: int, board: Board) -> int | None:
    """Instructions executed during `ticks` of QEMU virtual time under -icount shift=N, where one
    instruction takes 2**N ns. With N = 7 the 25 MHz timer quantization (40 ns) is under half an
    instruction, so rounding recovers the exact count."""
    if ticks is None or not tick_hz or board.qemu is None:
        return None
    return round(ticks * 1e9 / tick_hz / 2**board.qemu.icount_shift)

"""Start the board a run talks to and hand back a connected protocol client."""

import hashlib
import importlib.util
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.boards import Board
from harness.device.discovery import find_port
from harness.device.processes import die_with_parent, stop
from harness.device.qemu import qemu_link
from harness.errors import LinkError, UserError
from harness.firmware.build import build_firmware
from harness.firmware.tflm_tree import TflmTree
from harness.link.client import DeviceClient
from harness.link.transport import open_link
from harness.model.tflite_file import TfliteModel, read_tflite

SIM_START_SECONDS = 60


def sim_build_id() -> str:
    """The virtual board's firmware is the compiled device core: name it by its hash."""
    origin = importlib.util.find_spec("harness._devicecore").origin
    return "sim-" + hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]


def _wait_for_line(proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            return proc.stdout.readline().decode().strip()
        if proc.poll() is not None:
            return ""
    return ""


@contextmanager
def sim_board_process(board: Board, model_path: Path | None, frontend: Path | None = None) -> Iterator[str]:
    """Run the virtual board for the duration of the block; yields its pseudo-terminal path.
    Without a model it runs as self-test firmware does: HELLO, LINK_TEST and PERF only."""
    fw = board.firmware
    command = [
        sys.executable,
        "-m",
        "harness.device.sim_board",
        *(["--model", str(model_path)] if model_path else []),
        *(["--frontend", str(frontend)] if frontend else []),
        "--arena",
        str(fw.get("arena_bytes", 8 << 20)),
        "--board-id",
        board.id,
        "--build-id",
        sim_build_id(),
        "--rx-frame",
        str(fw.get("rx_frame_bytes", 4108)),
        "--tx-frame",
        str(fw.get("tx_frame_bytes", 4108)),
        "--rx-buffer",
        str(fw.get("rx_buffer_bytes", 4096)),
    ]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            preexec_fn=die_with_parent,
        )
        try:
            line = _wait_for_line(proc, SIM_START_SECONDS)
            if not line.startswith("pty "):
                errors.seek(0)
                tail = errors.read().decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise LinkError(f"the virtual board did not start: {tail[0]}")
            yield line.removeprefix("pty ")
        finally:
            stop(proc)


@contextmanager
def connect(
    board: Board,
    model: TfliteModel | None,
    port: str | None = None,
    tflm: TflmTree | None = None,
    serial_number: str | None = None,
    frontend: Path | None = None,
) -> Iterator[DeviceClient]:
    """A client that has said HELLO to the board running `model` (None: self-test firmware), and
    for keyword streaming its audio `frontend` model (real boards have it flashed with the model).
    The virtual board and QEMU boards are started for the block; a real one is found or named."""
    if board.kind == "virtual":
        sim = sim_board_process(board, model.path if model else None, frontend)
        with sim as pty_path, _client(pty_path, board) as client:
            yield client
    elif board.kind == "emulated":
        firmware = build_firmware(board, model, tflm, read_tflite(frontend) if frontend else None)
        with qemu_link(board, firmware.elf) as link, _session(link) as client:
            client.firmware = firmware.provenance()
            yield client
    elif board.kind == "device":
        url = port if port not in (None, "auto") else find_port(board, serial_number)
        with _client(url, board) as client:
            yield client
    else:
        raise UserError(f"board {board.id}: unknown kind {board.kind!r} in {board.source_file}")


@contextmanager
def _client(url: str, board: Board) -> Iterator[DeviceClient]:
    link = open_link(url, board.baudrate, board.reset_on_connect)
    try:
        with _session(link) as client:
            yield client
    finally:
        link.close()


@contextmanager
def _session(link) -> Iterator[DeviceClient]:
    client = DeviceClient(link)
    client.hello()
    yield client

"""Start the board a run talks to and hand back a connected protocol client."""

import hashlib
import importlib.util
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.boards import Board
from harness.device.discovery import find_port
from harness.device.labgrid_place import labgrid_port
from harness.device.processes import BoardPty, pty_board_process
from harness.device.qemu import qemu_link
from harness.errors import UserError
from harness.firmware.build import build_firmware
from harness.firmware.tflm_tree import TflmTree
from harness.link.client import DeviceClient
from harness.link.eembc import EembcClient
from harness.link.faults import FaultProxy, FaultSpec
from harness.link.transport import open_link
from harness.model.tflite_file import TfliteModel, read_tflite

SIM_START_SECONDS = 60


def sim_build_id() -> str:
    """The virtual board's firmware is the compiled device core: name it by its hash."""
    origin = importlib.util.find_spec("harness._devicecore").origin
    return "sim-" + hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]


EEMBC_SIM_MODEL = "harness"  # what the virtual board's EEMBC DUT reports as m-model-[…]
PROTOCOLS = ("harness", "eembc")


@contextmanager
def sim_board_process(
    board: Board, model_path: Path | None, protocol: str = "harness", frontend: Path | None = None
) -> Iterator[BoardPty]:
    """Run the virtual board for the duration of the block; yields its pseudo-terminal path.
    Without a model it runs as self-test firmware does: HELLO, LINK_TEST and PERF only."""
    fw = board.firmware
    command = [
        sys.executable,
        "-m",
        "harness.device.sim_board",
        *(["--model", str(model_path)] if model_path else []),
        "--arena",
        str(fw.arena_bytes),
        "--board-id",
        board.id,
        "--build-id",
        sim_build_id(),
        "--rx-frame",
        str(fw.rx_frame_bytes),
        "--tx-frame",
        str(fw.tx_frame_bytes),
        "--rx-buffer",
        str(fw.rx_buffer_bytes),
        "--link-baud",
        str(board.sim.link_baud),
        "--max-baud",
        str(board.sim.max_baudrate),
        "--emulate-invoke-ms",
        str(board.sim.emulate_invoke_ms),
        *(["--eembc-model", EEMBC_SIM_MODEL] if protocol == "eembc" else []),
        *(["--frontend", str(frontend)] if frontend else []),
    ]
    with pty_board_process(command, "the virtual board", SIM_START_SECONDS) as path:
        yield path


def with_link_options(
    board: Board, link_baud: int | None = None, emulate_invoke_ms: float | None = None, switch_baud: int | None = None
) -> Board:
    """The board with command-line link settings applied: the virtual board's emulated baud rate (also
    the rate the link starts at) and inference time, and the rate to switch to after the handshake."""
    if link_baud is not None or emulate_invoke_ms is not None:
        if board.kind != "virtual" and not (board.kind == "hosted" and link_baud is None):
            raise UserError("--link-baud and --emulate-invoke-ms emulate a link on the virtual board: use --board sim")
        sim = {"link_baud": link_baud, "emulate_invoke_ms": emulate_invoke_ms}
        board = board.with_sim(**{name: value for name, value in sim.items() if value is not None})
    return board if switch_baud is None else board.with_link(switch_baudrate=switch_baud)


@contextmanager
def connect(
    board: Board,
    model: TfliteModel | None,
    port: str | None = None,
    tflm: TflmTree | None = None,
    serial_number: str | None = None,
    protocol: str = "harness",
    faults: FaultSpec | None = None,
    labgrid_place: str | None = None,
    frontend: Path | None = None,
) -> Iterator[DeviceClient]:
    """A client that has said HELLO to the board running `model` (None: self-test firmware), and
    for keyword streaming its audio `frontend` model (real boards have it flashed with the model).
    The virtual board and QEMU boards are started for the block; a real one is found or named.
    protocol "eembc": the board runs MLPerf Tiny / EEMBC DUT firmware and `model` says what it runs."""
    if protocol not in PROTOCOLS:
        raise UserError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    if protocol == "eembc" and (model is None or board.kind in ("emulated", "hosted")):
        raise UserError(
            "--protocol eembc needs a model and the virtual board or a real one (QEMU and hosted boards run ours)"
        )
    if labgrid_place and board.kind != "device":
        raise UserError(f"--labgrid-place needs a real board, not {board.id} ({board.kind})")
    if board.kind == "virtual":
        if board.sim.link_baud:  # the emulated link starts where the host's port does
            board = board.with_link(baudrate=board.sim.link_baud)
        with (
            sim_board_process(board, model.path if model else None, protocol, frontend) as pty_path,
            _through_faults(pty_path, board, faults, lambda: os.kill(pty_path.pid, signal.SIGUSR1)) as (url, counts),
            _client(url, board, model if protocol == "eembc" else None) as client,
        ):
            client.stats.faults_injected = counts
            yield client
    elif board.kind == "hosted":  # a real board's HAL compiled for this machine (harness/device/hosted_hal.py)
        from harness.device.hosted_hal import hosted_board_process

        with (
            hosted_board_process(board, model.path if model else None) as pty_path,
            _through_faults(pty_path, board, faults, None) as (url, counts),
            _client(url, board) as client,
        ):
            client.stats.faults_injected = counts
            yield client
    elif board.kind == "emulated":
        if faults:
            raise UserError("--faults works with the virtual board and real boards, not QEMU boards")
        firmware = build_firmware(board, model, tflm, read_tflite(frontend) if frontend else None)
        with qemu_link(board, firmware.elf) as link, _session(link) as client:
            client.firmware = firmware.provenance()
            yield client
    elif board.kind == "device" and labgrid_place:
        with labgrid_port(labgrid_place) as url, connect(board, model, url, None, None, protocol, faults) as client:
            yield client
    elif board.kind == "device":
        url = port if port not in (None, "auto") else find_port(board, serial_number)
        with (
            _through_faults(url, board, faults, None) as (url, counts),
            _client(url, board, model if protocol == "eembc" else None) as client,
        ):
            client.stats.faults_injected = counts
            yield client
    else:
        raise UserError(f"board {board.id}: unknown kind {board.kind!r} in {board.source_file}")


@contextmanager
def _through_faults(url: str, board: Board, faults: FaultSpec | None, reset) -> Iterator[tuple[str, dict | None]]:
    """With faults: a proxy pseudo-terminal that damages the link, and its running counts."""
    if not faults:
        yield url, None
        return
    device = open_link(url, board.link.baudrate, board.link.reset_on_connect)
    try:
        with FaultProxy(device, faults, reset) as proxy:
            yield proxy.path, proxy.counts
    finally:
        device.close()


@contextmanager
def _client(url: str, board: Board, eembc_model: TfliteModel | None = None) -> Iterator[DeviceClient]:
    link = open_link(url, board.link.baudrate, board.link.reset_on_connect)
    try:
        if eembc_model is not None:
            client = EembcClient(link, eembc_model.input, eembc_model.output)
            client.hello()
            yield client
        else:
            with _session(link, board) as client:
                yield client
    finally:
        link.close()


@contextmanager
def _session(link, board: Board | None = None) -> Iterator[DeviceClient]:
    client = DeviceClient(link)
    client.hello()
    client.stats.baud = getattr(link, "baudrate", 0)
    if board is not None and board.link.switch_baudrate:
        client.switch_baud(board.link.switch_baudrate)
    yield client

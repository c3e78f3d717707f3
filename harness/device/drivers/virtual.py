"""The virtual board (kind "virtual"): the device core compiled for this machine (harness/device/sim_board.py),
a process harness starts for the connection, served on a pseudo-terminal; TFLM's host interpreter runs the
model. It speaks our protocol or, as the MLPerf Tiny / EEMBC DUT, theirs; it emulates a UART's pace and
an inference's length when asked (docs/link.md); the fault proxy resets it with SIGUSR1."""

import hashlib
import importlib.util
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.boards import Board
from harness.device.drivers.base import Driver, Endpoint
from harness.device.processes import BoardPty, pty_board_process
from harness.firmware.eembc_dut import EEMBC_DEFAULT_MODEL
from harness.link.protocol import DeviceInfo
from harness.link.registry import NATIVE_PROTOCOL, PROTOCOL_NAMES, session_type
from harness.model.card import EembcDut

SIM_START_SECONDS = 60


def sim_build_id() -> str:
    """The virtual board's firmware is the compiled device core: name it by its hash."""
    origin = importlib.util.find_spec("harness._devicecore").origin
    return "sim-" + hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]


@contextmanager
def sim_board_process(
    board: Board,
    model_path: Path | None,
    protocol: str = NATIVE_PROTOCOL,
    frontend: Path | None = None,
    eembc: EembcDut | None = None,
    computation: str = "model",
) -> Iterator[BoardPty]:
    """Run the virtual board for the duration of the block; yields its pseudo-terminal path.
    Without a model it runs as self-test firmware does: HELLO, LINK_TEST and PERF only. With the eembc
    protocol it is the card's DUT (`eembc`: its [eembc] table) computing `computation` (harness/model/dut.py)."""
    from harness.device.planted_fault import planted_fault_op

    fw = board.firmware
    fault = planted_fault_op(model_path)
    dut = ["--eembc-model", eembc.model if eembc else EEMBC_DEFAULT_MODEL, "--eembc-computation", computation]
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
        *(dut if session_type(protocol).DUT_FIRMWARE else []),
        *(["--frontend", str(frontend)] if frontend else []),
        *(["--plant-fault-op", str(fault)] if fault >= 0 else []),
    ]
    with pty_board_process(command, "the virtual board", SIM_START_SECONDS) as path:
        yield path


class VirtualDriver(Driver):
    kind = "virtual"
    protocols = PROTOCOL_NAMES
    runs_cards_dut = False  # its DUT takes the model's own input tensor, whatever the card's [eembc] input
    emulates = frozenset({"link_baud", "emulate_invoke_ms"})
    flashes = False
    profiles = False
    no_profiler = "the virtual board's TFLM host interpreter has no per-operator timer"

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        board = self.board
        if board.sim.link_baud:  # the emulated link starts where the host's port does
            board = board.with_link(baudrate=board.sim.link_baud)
        model_path = self.model.path if self.model else None
        options = self.options
        computes = self.device_computes
        with (
            sim_board_process(board, model_path, options.protocol, options.frontend, options.eembc, computes) as pty,
            self._open(pty, board, lambda: os.kill(pty.pid, signal.SIGUSR1), comes_back=False) as endpoint,
        ):
            yield endpoint

    def flash(self, project=None) -> DeviceInfo | None:
        return None  # it runs the model each command names

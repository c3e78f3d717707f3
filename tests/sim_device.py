"""The virtual board run as a standalone process and described as a real board (kind "device"), for tests that
reach it the way harness reaches real boards: through named ports or a labgrid farm. Its figures stay `sim`:
they come from a virtual board."""

import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.device.drivers.virtual import sim_build_id
from harness.device.processes import pty_board_process

BOARD = "lab_sim"

BOARD_FILE = f"""
id = "{BOARD}"
name = "The virtual board, reached like a real board (tests)"
kind = "device"
latency_source = "sim"  # its timings are this machine's: the virtual board's
core = "host"

[memory]
flash_bytes = 67108864
ram_bytes = 67108864

[link]
baudrate = 921600

[firmware]
family = "arduino_cortex_m"
cmsis_core = "cortex-m7"
arena_bytes = 8388608
rx_frame_bytes = 8204
tx_frame_bytes = 4108
rx_buffer_bytes = 16384

[platformio]
platform = "platformio/ststm32@19.6.0"
board = "nucleo_h743zi"
framework = "arduino"
upload_protocol = "stlink"

[tflm]
kernels = "cmsis_nn"
target = "cortex_m_generic"
target_arch = "cortex-m7"
"""


def write_board_file(folder: Path) -> Path:
    path = folder / f"{BOARD}.toml"
    path.write_text(BOARD_FILE)
    return path


def sim_board_command(model: Path, invoke_ms: float = 0, build_id: str | None = None) -> list[str]:
    """The virtual board serving `model` (for harness.device.processes.pty_board_process)."""
    command = [sys.executable, "-m", "harness.device.sim_board", "--model", str(model), "--arena", "8388608"]
    command += ["--board-id", BOARD, "--build-id", build_id or sim_build_id(), "--rx-frame", "8204"]
    command += ["--tx-frame", "4108", "--rx-buffer", "16384", "--max-baud", "4000000"]
    return [*command, "--emulate-invoke-ms", str(invoke_ms)]


@contextmanager
def swappable_board(link: Path, model: Path, replacement: Path, invoke_ms: float = 0) -> Iterator[Callable[[], None]]:
    """The virtual board serving `model` behind the symlink `link` (as /dev/serial/by-id/… is one), and beside
    it another serving `replacement`; yields swap(): the link now leads to the other, and the first is killed."""
    with (
        pty_board_process(sim_board_command(model, invoke_ms), "the virtual board", 30) as first,
        pty_board_process(sim_board_command(replacement, invoke_ms), "its replacement", 30) as second,
    ):
        link.symlink_to(first)

        def swap() -> None:
            staged = link.with_name(link.name + ".new")
            staged.symlink_to(second)
            staged.replace(link)
            os.kill(first.pid, signal.SIGKILL)

        yield swap


def journaled(results: Path, board: str) -> int:
    """Samples the journal of the run being written under `results` holds from `board` so far."""
    count = 0
    for journal in results.glob(".*.partial/journal.jsonl"):
        for line in journal.read_text().splitlines():
            try:
                count += json.loads(line).get("board") == board
            except ValueError:
                continue  # a line being written
    return count

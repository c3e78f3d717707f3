"""A model runner for exercising the device core without a model: output is a checksum pattern."""

import ctypes
import threading
from contextlib import contextmanager

import serial

from harness.device.sim_board import SimBoard
from harness.link.client import DeviceClient
from harness.native import ModelInfo

UINT8 = 3


def expected_output(data: bytes, size: int) -> bytes:
    total = sum(data)
    return bytes((total + i) % 256 for i in range(size))


class ChecksumRunner:
    def __init__(self, input_bytes: int, output_bytes: int, status: int = 0):
        self.model_info = ModelInfo()
        for tensor, size in ((self.model_info.input, input_bytes), (self.model_info.output, output_bytes)):
            tensor.dtype = UINT8
            tensor.rank = 2
            tensor.dims[0], tensor.dims[1] = 1, size
            tensor.scale, tensor.bytes = 1.0, size
        self.model_info.model_sha256_prefix[:] = list(range(8))
        self.model_info.arena_configured, self.model_info.arena_used = 1000, 600
        self.status = status
        self.input_ptr = self.output_ptr = None
        self.invokes = 0

    def invoke(self, _user) -> int:
        self.invokes += 1
        data = ctypes.string_at(self.input_ptr, self.model_info.input.bytes)
        out = expected_output(data, self.model_info.output.bytes)
        ctypes.memmove(self.output_ptr, out, len(out))
        return 0


@contextmanager
def core_on_pty(runner, rx_frame=524, tx_frame=524, timeout=0.5, emulation=None, rx_buffer=4096):
    """The C device core serving `runner` on a pseudo-terminal; yields (pyserial port, client)."""
    with SimBoard(
        runner,
        board_id="test-board",
        build_id="test-build",
        rx_frame=rx_frame,
        tx_frame=tx_frame,
        rx_buffer=rx_buffer,
        emulation=emulation,
    ) as board:
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                board.poll(20)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        port = serial.Serial(
            board.pty_path, baudrate=emulation.baud if emulation and emulation.baud else 921600, timeout=0.05
        )
        try:
            yield port, DeviceClient(port, timeout=timeout, invoke_timeout=2 * timeout, retries=3)
        finally:
            stop.set()
            thread.join()
            port.close()

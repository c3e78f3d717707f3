"""A model runner for exercising the device core without a model: output is a checksum pattern."""

import ctypes
import threading
from contextlib import contextmanager

import numpy as np
import serial

from harness.device.sim_board import SimBoard
from harness.link.client import DeviceClient
from harness.native import ModelInfo

UINT8 = 3
SCORE_TYPES = {9: np.int8, 3: np.uint8, 1: np.float32}  # TfLiteType -> numpy


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


class ScriptedFrontend:
    """An audio frontend whose feature row is one byte: the window's last sample."""

    def __init__(self, window_samples: int):
        self.model_info = ModelInfo()
        self.model_info.input.bytes, self.model_info.output.bytes = 2 * window_samples, 1
        self.status, self.setups = 0, 0
        self.input_ptr = self.output_ptr = None

    def setup(self, _user) -> int:
        self.setups += 1
        return 0

    def invoke(self, _user) -> int:
        window = ctypes.string_at(self.input_ptr, self.model_info.input.bytes)
        ctypes.memmove(self.output_ptr, window[-2:-1], 1)
        return 0


class ScriptedClassifier(ChecksumRunner):
    """Scores `top` for the class named by the newest feature row, `bottom` for the others, as an
    output of TfLiteType `dtype` (int8 by default: 127 and -128)."""

    def __init__(self, frames: int, classes: int, dtype: int = 9, top=127, bottom=-128):
        self.numpy_type = np.dtype(SCORE_TYPES[dtype])
        super().__init__(frames, classes * self.numpy_type.itemsize)
        self.model_info.output.dtype = dtype
        self.classes, self.top, self.bottom = classes, top, bottom

    def invoke(self, _user) -> int:
        self.invokes += 1
        newest = ctypes.string_at(self.input_ptr, self.model_info.input.bytes)[-1]
        values = [self.top if c == newest else self.bottom for c in range(self.classes)]
        scores = np.array(values, self.numpy_type).tobytes()
        ctypes.memmove(self.output_ptr, scores, len(scores))
        return 0


@contextmanager
def serving(board, pause: float = 0.0):
    """`board` (a SimBoard) polled on a thread for the block; `pause`: seconds asleep after each poll (a device
    the host starves of CPU)."""
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            board.poll(20)
            stop.wait(pause)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield board
    finally:
        stop.set()
        thread.join()


@contextmanager
def core_on_pty(
    runner, rx_frame=524, tx_frame=524, timeout=0.5, emulation=None, rx_buffer=4096, frontend=None, wrap=None
):
    """The C device core serving `runner` on a pseudo-terminal; yields (pyserial port, client). With
    `wrap`, the client talks through wrap(port, board) instead of the port itself."""
    with (
        SimBoard(
            runner,
            board_id="test-board",
            build_id="test-build",
            rx_frame=rx_frame,
            tx_frame=tx_frame,
            rx_buffer=rx_buffer,
            emulation=emulation,
            frontend=frontend,
        ) as board,
        serving(board),
    ):
        port = serial.Serial(
            board.pty_path, baudrate=emulation.baud if emulation and emulation.baud else 921600, timeout=0.05
        )
        try:
            client_port = wrap(port, board) if wrap else port
            yield port, DeviceClient(client_port, timeout=timeout, invoke_timeout=2 * timeout, retries=3)
        finally:
            port.close()


class PortProxy:
    """Passes everything to the wrapped port; subclasses change what write and read do."""

    def __init__(self, port):
        self._port = port

    def __getattr__(self, name):
        return getattr(self._port, name)

    @property
    def baudrate(self):
        return self._port.baudrate

    @baudrate.setter
    def baudrate(self, value):
        self._port.baudrate = value

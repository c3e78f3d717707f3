"""The boards benchmarks/link.py streams to: the virtual board's C core on a pseudo-terminal paced to a baud rate
(its runner a small int8 model computing the per-channel mean, so that every output can be checked), and the
hosted HALs (the real HAL sources compiled for this machine over an emulated UART, harness/device/hosted_hal.py)."""

import ctypes
import multiprocessing
import os
from contextlib import ExitStack, contextmanager

import numpy as np
import serial

from harness.boards import get_board
from harness.device.drivers.virtual import sim_build_id
from harness.device.hosted_hal import hal_of
from harness.device.launch import connect
from harness.device.sim_board import LinkEmulation, SimBoard
from harness.link.client import DeviceClient
from harness.link.eembc import EembcClient
from harness.link.faults import FaultProxy, FaultSpec
from harness.model.tflite_file import read_tflite
from harness.native import ModelInfo
from harness.tensors import TensorSpec

SHAPE = (1, 96, 96, 3)
INT8 = 9
INPUT_BYTES = 96 * 96 * 3
SPEC_IN = TensorSpec(INT8, SHAPE, 1.0, 0, INPUT_BYTES)
SPEC_OUT = TensorSpec(INT8, (1, 3), 1.0, 0, 3)
FAULT_SEED = 11


class MeanRunner:
    """int8[1,96,96,3] -> int8[1,3]: the per-channel mean, computed for real on every invoke."""

    def __init__(self):
        self.model_info = ModelInfo()
        for tensor, dims in ((self.model_info.input, SHAPE), (self.model_info.output, (1, 3))):
            tensor.dtype, tensor.rank, tensor.scale, tensor.bytes = INT8, len(dims), 1.0, int(np.prod(dims))
            for i, dim in enumerate(dims):
                tensor.dims[i] = dim
        self.status = 0
        self.input_ptr = self.output_ptr = None

    @staticmethod
    def compute(data: bytes) -> bytes:
        return np.frombuffer(data, np.int8).reshape(SHAPE).mean(axis=(0, 1, 2)).astype(np.int8).tobytes()

    def invoke(self, _user) -> int:
        out = self.compute(ctypes.string_at(self.input_ptr, INPUT_BYTES))
        ctypes.memmove(self.output_ptr, out, len(out))
        return 0


def _serve_board(conn, baud: int, invoke_ms: float, eembc: bool) -> None:
    """The board's process: its own interpreter, so the host's never waits on the board's lock."""
    fw = get_board("sim").firmware
    with SimBoard(
        MeanRunner(),
        board_id="sim",
        build_id=sim_build_id(),
        rx_frame=fw.rx_frame_bytes,
        tx_frame=fw.tx_frame_bytes,
        rx_buffer=fw.rx_buffer_bytes,
        emulation=LinkEmulation(baud, 4_000_000, invoke_ms),
        eembc_model="vww01" if eembc else None,
    ) as board:
        conn.send(board.pty_path)
        while not conn.poll() and board.poll(20) >= 0:
            pass


@contextmanager
def sim_client(
    baud: int, invoke_ms: float = 0.0, eembc: bool = False, switch_to: int = 0, faults: FaultSpec | None = None
):
    """The virtual board's C core on a pseudo-terminal paced to `baud`, in a process of its own; eembc:
    the EEMBC DUT instead of ours on the same board; switch_to: SET_BAUD after the handshake; faults: the
    fault-injection proxy (harness/link/faults.py) between the host and the board."""
    ours, theirs = multiprocessing.Pipe()
    board = multiprocessing.get_context("fork").Process(target=_serve_board, args=(theirs, baud, invoke_ms, eembc))
    board.start()
    with ExitStack() as stack:
        path = ours.recv()
        if faults is not None:
            device = stack.enter_context(serial.Serial(path, baudrate=baud, timeout=0.05))
            path = stack.enter_context(FaultProxy(device, faults, seed=FAULT_SEED)).path
        port = stack.enter_context(serial.Serial(path, baudrate=baud, timeout=0.05))
        try:
            client = EembcClient(port, SPEC_IN, SPEC_OUT) if eembc else DeviceClient(port)
            client.hello()
            if switch_to:
                assert client.switch_baud(switch_to), "the baud switch fell back"
            yield client
        finally:
            ours.send("stop")
            board.join()


HALS = ("hal_stm32duino", "hal_espidf", "hal_mbed")
HAL_BAUDS = (921600, 2000000)
HAL_MODEL = "wake_vision_zoo/wv_quality_k_2_c_3.tflite"


def shared_model(relative: str = HAL_MODEL):
    """A model of the shared fixtures (../shared/fixtures/models/`relative`), or None without them."""
    shared = os.environ.get("HARNESS_SHARED_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    path = os.path.join(shared, "fixtures", "models", relative)
    return read_tflite(path) if os.path.isfile(path) else None


def hal_is_paced(name: str) -> bool:
    """Whether a hosted HAL's link is a UART paced to its baud rate (not USB CDC, which has none)."""
    return hal_of(get_board(name)).paced


@contextmanager
def hal_client(name: str, baud: int, model, invoke_ms: float = 0.0):
    board = get_board(name)
    board = board.with_link(switch_baudrate=baud).with_sim(emulate_invoke_ms=invoke_ms)
    with connect(board, model) as client:
        yield client

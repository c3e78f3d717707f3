"""The virtual board process: firmware/core on a pseudo-terminal, the TFLM host interpreter as runner.

Run by harness itself (see launch.py): it prints `pty <path>` once the board is ready, then serves
protocol v1 until it is terminated or its parent exits.
"""

import argparse
import ctypes
import hashlib
import os
import signal
import sys
import tty

import numpy as np

from harness.model.tflm import arena_used_bytes, make_interpreter
from harness.native import SIM_INVOKE, ModelInfo, TensorInfo, device_core
from harness.tensors import DTYPE_CODES

RUNNER_OK = 0
RUNNER_SETUP_FAILED = 1


def _exit_with_parent() -> None:
    """Ask Linux to end this process when the harness that started it ends, however it ends."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _tensor_info(details: dict) -> TensorInfo:
    info = TensorInfo()
    dtype = np.dtype(details["dtype"])
    shape = [int(d) for d in details["shape"]]
    info.dtype = DTYPE_CODES[dtype]
    info.rank = len(shape)
    for i, dim in enumerate(shape):
        info.dims[i] = dim
    quant = details["quantization_parameters"]
    info.scale = float(quant["scales"][0]) if len(quant["scales"]) else 0.0
    info.zero_point = int(quant["zero_points"][0]) if len(quant["zero_points"]) else 0
    info.bytes = int(np.prod(shape)) * dtype.itemsize
    return info


class TflmRunner:
    """Runs invokes for the C core: reads its input buffer, writes its output buffer."""

    def __init__(self, model_data: bytes, arena_bytes: int):
        self.model_info = ModelInfo()
        self.model_info.arena_configured = arena_bytes
        self.model_info.model_sha256_prefix[:] = list(hashlib.sha256(model_data).digest()[:8])
        try:
            self.interpreter = make_interpreter(model_data, arena_bytes)
        except (RuntimeError, ValueError) as exc:
            print(f"sim board: the model failed to load: {exc}", file=sys.stderr)
            self.status = RUNNER_SETUP_FAILED
            return
        input_details = self.interpreter.get_input_details(0)
        self.input_dtype = np.dtype(input_details["dtype"])
        self.input_shape = tuple(int(d) for d in input_details["shape"])
        self.model_info.input = _tensor_info(input_details)
        self.model_info.output = _tensor_info(self.interpreter.get_output_details(0))
        self.model_info.arena_used = arena_used_bytes(self.interpreter) or 0
        self.status = RUNNER_OK
        self.input_ptr = self.output_ptr = None

    def invoke(self, _user) -> int:
        try:
            raw = ctypes.string_at(self.input_ptr, self.model_info.input.bytes)
            tensor = np.frombuffer(raw, self.input_dtype).reshape(self.input_shape)
            self.interpreter.set_input(tensor, 0)
            self.interpreter.invoke()
            out = np.ascontiguousarray(self.interpreter.get_output(0)).tobytes()
            ctypes.memmove(self.output_ptr, out, len(out))
            return 0
        except Exception as exc:  # reported to the host as INVOKE_FAILED, never crashes the board
            print(f"sim board: invoke failed: {exc}", file=sys.stderr)
            return 1


def serve(args: argparse.Namespace) -> None:
    lib = device_core()
    with open(args.model, "rb") as f:
        runner = TflmRunner(f.read(), args.arena)
    master, slave = os.openpty()
    tty.setraw(slave)  # no echo and no line discipline before the host configures the port
    os.set_blocking(master, False)
    invoke_callback = SIM_INVOKE(runner.invoke)  # kept referenced for the board's lifetime
    board_id, build_id = args.board_id.encode(), args.build_id.encode()
    board = lib.sim_board_create(
        master, board_id, build_id, ctypes.byref(runner.model_info), runner.status,
        args.rx_frame, args.tx_frame, args.rx_buffer, invoke_callback, None,
    )
    if not board:
        sys.exit("sim board: could not create the device core (buffers too small?)")
    runner.input_ptr = lib.sim_board_input(board)
    runner.output_ptr = lib.sim_board_output(board)

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    print(f"pty {os.ttyname(slave)}", flush=True)
    try:
        while not stopping and lib.sim_board_poll(board, 100) >= 0:
            pass
    finally:
        lib.sim_board_destroy(board)
        os.close(master)
        os.close(slave)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--arena", type=int, required=True)
    parser.add_argument("--board-id", default="sim")
    parser.add_argument("--build-id", required=True)
    parser.add_argument("--rx-frame", type=int, default=4108)
    parser.add_argument("--tx-frame", type=int, default=4108)
    parser.add_argument("--rx-buffer", type=int, default=4096)
    _exit_with_parent()
    serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()

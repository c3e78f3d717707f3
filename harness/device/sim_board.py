"""The virtual board process: firmware/core on a pseudo-terminal, the TFLM host interpreter as runner.

Run by harness itself (harness/device/drivers/virtual.py): it prints `pty <path>` once the board is ready,
then serves protocol v1 until it is terminated or its parent exits.
"""

import argparse
import contextlib
import ctypes
import hashlib
import os
import signal
import sys
import tty
from dataclasses import dataclass

import numpy as np

from harness.device.layer_tracer import GraphTracer, hand_to_sink
from harness.firmware.eembc_dut import EEMBC_COMPUTATIONS, EEMBC_DEFAULT_MODEL
from harness.model.tflm import arena_used_bytes, make_interpreter
from harness.native import SIM_INVOKE, SIM_SETUP, SIM_TRACE, ModelInfo, TensorInfo, device_core
from harness.tensors import DTYPE_CODES

EEMBC_BUFFER_BYTES = 27648  # MAX_DB_INPUT_SIZE of the MLPerf Tiny reference firmware (96x96x3)
RUNNER_OK = 0
RUNNER_SETUP_FAILED = 1
RUNNER_NO_MODEL = 2  # as firmware/app/runner.h's HARNESS_RUNNER_NO_MODEL
FRONTEND_ARENA_BYTES = 1 << 20


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
    """Runs invokes for the C core: reads its input buffer, writes its output buffer. With
    `fresh_on_setup` every setup (a stream start, for a frontend) starts a new interpreter, so
    state the model keeps between invokes (a noise estimate) begins afresh. invoke_traced runs one
    operator by operator for a layer trace (harness/device/layer_tracer.py); with `plant_fault_op` every
    invoke goes that way, perturbing that operator's output (a test build's planted fault)."""

    def __init__(self, model_data: bytes, arena_bytes: int, fresh_on_setup: bool = False, plant_fault_op: int = -1):
        self.model_info = ModelInfo()
        self.model_info.arena_configured = arena_bytes
        self.model_info.model_sha256_prefix[:] = list(hashlib.sha256(model_data).digest()[:8])
        self._model_data, self._arena_bytes = model_data, arena_bytes
        if fresh_on_setup:
            self.setup = self._fresh_interpreter
        try:
            self.interpreter = make_interpreter(model_data, arena_bytes)
        except Exception as exc:  # a damaged model file fails in the flatbuffer reader too (struct.error)
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
        self._tracer: GraphTracer | None = None
        self._plant_fault_op = plant_fault_op
        if plant_fault_op >= 0:  # every invoke carries the fault
            self.invoke = lambda _user: self.invoke_traced(_user, None)

    def _fresh_interpreter(self, _user) -> int:
        try:  # an exception would leave the C caller's status undefined
            self.interpreter = make_interpreter(self._model_data, self._arena_bytes)
        except Exception as exc:
            print(f"sim board: the model failed to load again: {exc}", file=sys.stderr)
            return RUNNER_SETUP_FAILED
        return RUNNER_OK

    def invoke_traced(self, _user, sink) -> int:
        """One invoke, each operator's outputs handed to the C core's trace `sink` (None: only run)."""
        try:
            if self._tracer is None:
                self._tracer = GraphTracer(self._model_data, self._plant_fault_op)
            raw = ctypes.string_at(self.input_ptr, self.model_info.input.bytes)
            operators, output = self._tracer.run(raw)
            for operator in operators if sink else ():
                hand_to_sink(sink, operator)
            if output is None:  # the model's output is its input: nothing wrote it
                return self._invoke_plain()
            out = np.ascontiguousarray(output).tobytes()
            ctypes.memmove(self.output_ptr, out, len(out))
            return 0
        except Exception as exc:  # reported to the host as INVOKE_FAILED, never crashes the board
            print(f"sim board: traced invoke failed: {exc}", file=sys.stderr)
            return 1

    def invoke(self, _user) -> int:
        return self._invoke_plain()

    def _invoke_plain(self) -> int:
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


class NativeRunner:
    """A Python runner behind the C core's runner interface (firmware/sim/sim_runner.c): the audio
    frontend of a streaming board and the host's streaming reference. The runner needs model_info,
    status and invoke, and may have setup; it gets input_ptr and output_ptr."""

    def __init__(self, runner):
        self._lib = device_core()
        self.runner = runner
        self._invoke = SIM_INVOKE(runner.invoke)  # the callbacks must outlive the C runner
        self._setup = SIM_SETUP(runner.setup) if hasattr(runner, "setup") else ctypes.cast(None, SIM_SETUP)
        self.handle = self._lib.sim_runner_create(
            ctypes.byref(runner.model_info), runner.status, self._invoke, self._setup, None
        )
        if not self.handle:
            raise MemoryError("could not allocate the runner's tensors")
        runner.input_ptr = self._lib.sim_runner_input(self.handle)
        runner.output_ptr = self._lib.sim_runner_output(self.handle)

    def close(self) -> None:
        if self.handle:
            self._lib.sim_runner_destroy(self.handle)
            self.handle = None


@dataclass(frozen=True)
class LinkEmulation:
    """The virtual board's link paced like a UART at `baud` (0: as fast as the pseudo-terminal goes),
    switchable up to max_baud (0: any rate), and invokes lasting at least invoke_ms. input_slots=1 serves
    as firmware with a blocking invoke does (one input slot; what arrives meanwhile waits in the link)."""

    baud: int = 0
    max_baud: int = 0
    invoke_ms: float = 0.0
    input_slots: int = 2


class SimBoard:
    """The device core on a fresh pseudo-terminal, driving `runner` (needs model_info, status, invoke),
    and for keyword streaming a `frontend` runner too (see NativeRunner)."""

    def __init__(
        self,
        runner,
        *,
        board_id: str,
        build_id: str,
        rx_frame: int,
        tx_frame: int,
        rx_buffer: int,
        emulation: "LinkEmulation | None" = None,
        eembc_model: str | None = None,
        eembc_computation: str = "model",
        eembc_energy: bool = False,
        frontend=None,
    ):
        """eembc_model set (e.g. "vww01"): the board speaks the MLPerf Tiny / EEMBC DUT protocol, computing
        eembc_computation (a key of EEMBC_COMPUTATIONS) as that benchmark's reference DUT does; eembc_energy: as
        its energy-mode build (the boot banner says so, timestamps print nothing)."""
        self._lib = device_core()
        self._runner = runner
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo and no line discipline before the host configures the port
        os.set_blocking(self._master, False)
        self._invoke = SIM_INVOKE(runner.invoke)  # must outlive the board
        self._trace = SIM_TRACE(runner.invoke_traced) if hasattr(runner, "invoke_traced") else None
        try:
            self._frontend = NativeRunner(frontend) if frontend else None
        except BaseException:
            self.close()  # the pty pair, which nothing else would close
            raise
        self._ids = (board_id.encode(), build_id.encode())
        self._board = self._lib.sim_board_create(
            self._master,
            *self._ids,
            ctypes.byref(runner.model_info),
            runner.status,
            rx_frame,
            tx_frame,
            rx_buffer,
            self._invoke,
            None,
            self._frontend.handle if self._frontend else None,
        )
        if not self._board:
            self.close()
            raise RuntimeError("could not create the device core (frame buffers too small?)")
        if self._trace:
            self._lib.sim_board_trace(self._board, self._trace)
        if emulation:
            self._lib.sim_board_emulate(
                self._board, emulation.baud, emulation.max_baud, round(emulation.invoke_ms * 1000)
            )
            if emulation.input_slots < 2:
                self._lib.sim_board_one_slot(self._board)
        if eembc_model is not None:
            self._eembc_ids = (board_id.encode(), eembc_model.encode())  # must outlive the board
            buffer = max(runner.model_info.input.bytes, EEMBC_BUFFER_BYTES)
            computation = EEMBC_COMPUTATIONS[eembc_computation]
            if self._lib.sim_board_use_eembc(self._board, *self._eembc_ids, buffer, computation, eembc_energy) != 0:
                self.close()
                raise RuntimeError("could not set up the EEMBC DUT")
        runner.input_ptr = self._lib.sim_board_input(self._board)
        runner.output_ptr = self._lib.sim_board_output(self._board)

    @property
    def pty_path(self) -> str:
        return os.ttyname(self._slave)

    @property
    def baud(self) -> int:
        """The rate the board's link is at now: the emulated rate, switched by SET_BAUD."""
        return self._lib.sim_board_baud(self._board)

    def reset(self) -> None:
        """Lose every bit of protocol state and send the boot notice, as a real reset would."""
        self._lib.sim_board_reset(self._board)

    def poll(self, timeout_ms: int = 100) -> int:
        return self._lib.sim_board_poll(self._board, timeout_ms)

    def close(self) -> None:
        if getattr(self, "_board", None):
            self._lib.sim_board_destroy(self._board)
            self._board = None
        if getattr(self, "_frontend", None):
            self._frontend.close()
            self._frontend = None
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> "SimBoard":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class NoModelRunner:
    """The virtual board without a model, like self-test firmware: HELLO, LINK_TEST and PERF."""

    status = RUNNER_NO_MODEL

    def __init__(self):
        self.model_info = ModelInfo()
        self.input_ptr = self.output_ptr = None

    def invoke(self, _user) -> int:
        return 1


def serve(args: argparse.Namespace) -> None:
    if args.model:
        with open(args.model, "rb") as f:
            runner = TflmRunner(f.read(), args.arena, plant_fault_op=args.plant_fault_op)
    else:
        runner = NoModelRunner()
    frontend = None
    if args.frontend:
        with open(args.frontend, "rb") as f:
            frontend = TflmRunner(f.read(), FRONTEND_ARENA_BYTES, fresh_on_setup=True)
    board = SimBoard(
        runner,
        frontend=frontend,
        board_id=args.board_id,
        build_id=args.build_id,
        rx_frame=args.rx_frame,
        tx_frame=args.tx_frame,
        rx_buffer=args.rx_buffer,
        emulation=LinkEmulation(args.link_baud, args.max_baud, args.emulate_invoke_ms),
        eembc_model=args.eembc_model,
        eembc_computation=args.eembc_computation,
    )
    stopping, resets = [], []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGUSR1, lambda *_: resets.append(True))  # the fault proxy's reset-every
    print(f"pty {board.pty_path}", flush=True)
    with board:
        while not stopping and board.poll(100) >= 0:
            if resets:
                resets.clear()
                board.reset()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", help="the .tflite to run; without it the board serves self-tests only")
    parser.add_argument("--arena", type=int, required=True)
    parser.add_argument("--frontend", help="an audio frontend .tflite: the board then streams keywords")
    parser.add_argument("--board-id", default="sim")
    parser.add_argument("--build-id", required=True)
    parser.add_argument("--rx-frame", type=int, default=4108)
    parser.add_argument("--tx-frame", type=int, default=4108)
    parser.add_argument("--rx-buffer", type=int, default=4096)
    parser.add_argument("--link-baud", type=int, default=0, help="pace the link like a UART at this rate")
    parser.add_argument("--max-baud", type=int, default=0, help="the highest rate SET_BAUD accepts (0: any)")
    parser.add_argument(
        "--eembc-model",
        nargs="?",
        const=EEMBC_DEFAULT_MODEL,
        help="speak the MLPerf Tiny / EEMBC DUT protocol, reporting this model as m-model-[…]: the MLPerf Tiny "
        f"runner's test name (ad01, ic01, kws01, vww01; {EEMBC_DEFAULT_MODEL} without a value)",
    )
    parser.add_argument(
        "--eembc-computation",
        choices=tuple(EEMBC_COMPUTATIONS),
        default="model",
        help="with --eembc-model: what the DUT computes from what it is sent (model: the model's tensors; "
        "reconstruction_mse: float32 features quantized, the reconstruction's mean squared error, as ad01's)",
    )
    parser.add_argument("--emulate-invoke-ms", type=float, default=0.0, help="the least time an invoke takes")
    parser.add_argument("--plant-fault-op", type=int, default=-1, help=argparse.SUPPRESS)  # docs/debug.md
    serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()

"""Real board HALs on this machine: the board glue of real firmware, compiled for the host.

firmware/boards/arduino_cortex_m/board_arduino_cortex_m.cpp (as stm32duino or Arduino mbed builds it)
and firmware/boards/espidf/board_espidf.c run unchanged, with firmware/app/firmware_main.c and
firmware/core (or, for `--protocol eembc`, firmware/app/eembc_main.c and the MLPerf Tiny DUT
firmware/eembc/ee_dut.c, as harness/firmware/eembc_dut.py settles it), against the small framework
stand-ins under firmware/hosted/: a UART emulated on a pseudo-terminal (a receive thread filling a ring
of the configured size, paced to the baud rate) and a model runner that calls the TFLM host interpreter.
Boards of kind "hosted" (boards/hal_*.toml) name the HAL in `[sim] hal`; harness starts this module for
them as it starts the virtual board: it prints `pty <path>` once the firmware runs (started --powered-off: once
the port is there, the firmware booting at SIGUSR1), then serves until it is terminated.

Figures measured through it are `sim`: the real HAL sources over an emulated UART, not a board.
"""

import argparse
import ctypes
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.boards import Board
from harness.device.processes import BoardPty, pty_board_process
from harness.errors import UserError
from harness.firmware.assemble import config_header
from harness.firmware.eembc_dut import EembcDutBuild
from harness.model.tflite_file import TfliteModel
from harness.native import SIM_INVOKE, SIM_TRACE, ModelInfo
from harness.paths import cache_dir, share_dir

FIRMWARE = share_dir() / "firmware"
POWER_ON = signal.SIGUSR1  # a process started --powered-off boots its firmware when it gets this
START_SECONDS = 60


@dataclass(frozen=True)
class Hal:
    """One framework's build of a board HAL against its stand-in."""

    family: str  # the folder under firmware/boards
    hal_source: str
    stub: str  # the stand-in's folder under firmware/hosted
    stub_source: str
    defines: tuple[str, ...] = ()
    paced: bool = True  # a UART paced to the baud rate; False: USB CDC, which has no baud rate


HALS = {
    "stm32duino": Hal(
        "arduino_cortex_m", "board_arduino_cortex_m.cpp", "arduino", "arduino_stub.cpp", ("HOSTED_CPU_HZ=480000000u",)
    ),
    "mbed": Hal(
        "arduino_cortex_m",
        "board_arduino_cortex_m.cpp",
        "arduino",
        "arduino_stub.cpp",
        ("SERIAL_CDC=1", "HOSTED_CPU_HZ=64000000u"),
        paced=False,
    ),
    "espidf": Hal("espidf", "board_espidf.c", "espidf", "espidf_stub.c", ("HOSTED_CPU_HZ=240000000u",)),
}


def hal_of(board: Board) -> Hal:
    name = board.sim.hal
    if name not in HALS:
        raise UserError(f"board file {board.source_file}: [sim] hal must be one of {', '.join(HALS)}, not {name!r}")
    return HALS[name]


def _defines(board: Board) -> list[str]:
    hal = hal_of(board)
    defines = ["HARNESS_HOSTED", *hal.defines]
    if board.sim.serial_rx_buffer_size:  # stm32duino's ring, a build flag on the real board
        defines.append(f"SERIAL_RX_BUFFER_SIZE={board.sim.serial_rx_buffer_size}")
    if board.sim.cdc_callback_slots is not None:  # tests only: a USBSerial callback table without room for the HAL's
        defines.append(f"MAX_CALLBACKS_ON_IRQ={board.sim.cdc_callback_slots}")
    return defines


def _sources(hal: Hal, dut: EembcDutBuild | None) -> list[Path]:
    core = sorted(p for p in (FIRMWARE / "core").glob("*.c"))
    dut_body = [FIRMWARE / "app" / "eembc_main.c", FIRMWARE / "eembc" / "ee_dut.c"]
    body = dut_body if dut else [FIRMWARE / "app" / "firmware_main.c"]
    return [
        *core,
        *body,
        FIRMWARE / "boards" / hal.family / hal.hal_source,
        FIRMWARE / "hosted" / hal.stub / hal.stub_source,
        FIRMWARE / "hosted" / "hosted_uart.c",
        FIRMWARE / "hosted" / "hosted_runner.c",
    ]


def _headers(hal: Hal) -> list[Path]:
    folders = ("core", "app", "eembc", "sim", "hosted", f"hosted/{hal.stub}", f"boards/{hal.family}")
    return sorted(p for folder in folders for p in (FIRMWARE / folder).rglob("*.h"))


def build_id_and_header(
    board: Board, dut: EembcDutBuild | None = None, model: TfliteModel | None = None
) -> tuple[str, str]:
    """The build's id (a hash of every source, header and setting) and its harness_build_config.h. With
    `dut`, the MLPerf Tiny DUT for `model` (its db buffer is the model's input) in place of our protocol."""
    hal = hal_of(board)
    model = model if dut else None  # harness's protocol takes the model at run time: one build for all
    digest = hashlib.sha256()
    for path in [*_sources(hal, dut), *_headers(hal)]:
        digest.update(str(path.relative_to(FIRMWARE)).encode() + b"\0" + path.read_bytes())
    digest.update(repr(_defines(board)).encode())
    digest.update(config_header(board, "", model, dut=dut).encode())
    kind = f"eembc-{dut.mode}-" if dut else ""
    build_id = f"hosted-{board.sim.hal}-{kind}{digest.hexdigest()[:12]}"
    return build_id, config_header(board, build_id, model, dut=dut)


def build_library(board: Board, dut: EembcDutBuild | None = None, model: TfliteModel | None = None) -> tuple[Path, str]:
    """The HAL, firmware_main.c (with `dut`: eembc_main.c and ee_dut.c), firmware/core and the stand-ins as
    one shared library, built with the host's gcc/g++ once per build id (cached); returns its path and the
    build id."""
    hal = hal_of(board)
    if dut and dut.energy and hal.family != "arduino_cortex_m":
        raise UserError(
            f"{board.id}: EEMBC energy mode needs a timestamp pin, which only the Arduino glue drives; "
            "use hal_stm32duino or hal_mbed, or performance mode"
        )
    build_id, header = build_id_and_header(board, dut, model)
    folder = cache_dir() / "hosted" / build_id
    library = folder / "libhosted.so"
    if library.is_file():
        return library, build_id
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=folder))
    (work / "harness_build_config.h").write_text(header)
    includes = [work, *(FIRMWARE / f for f in ("core", "app", "eembc", "sim", "hosted", f"hosted/{hal.stub}"))]
    includes.append(FIRMWARE / "boards" / hal.family)
    flags = ["-O2", "-fPIC", "-Wall", "-Wextra", *(f"-D{d}" for d in _defines(board)), *(f"-I{i}" for i in includes)]
    objects = []
    for source in _sources(hal, dut):
        cpp = source.suffix == ".cpp"
        obj = work / f"{source.stem}.o"
        command = ["g++", "-std=c++17"] if cpp else ["gcc", "-std=c99"]
        _compile([*command, *flags, "-c", str(source), "-o", str(obj)])
        objects.append(str(obj))
    linked = work / "libhosted.so"
    _compile(["g++", "-shared", "-Wl,-Bsymbolic", "-o", str(linked), *objects, "-lpthread"])
    os.replace(linked, library)  # atomic: a concurrent build of the same id finds a whole library
    return library, build_id


def _compile(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise UserError(f"hosted boards need {command[0]} on this machine") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"building the hosted HAL failed: {tail}")


_SIGNATURES = {
    "hosted_uart_attach": (None, [ctypes.c_int]),
    "hosted_uart_baud": (ctypes.c_uint32, []),
    "hosted_uart_lost_full": (ctypes.c_uint64, []),
    "hosted_uart_lost_wrong_rate": (ctypes.c_uint64, []),
    "hosted_uart_invoke_delivered": (ctypes.c_uint64, []),
    "hosted_uart_invoke_held": (ctypes.c_uint32, []),
    "hosted_runner_configure": (
        ctypes.c_int32,
        [ctypes.POINTER(ModelInfo), ctypes.c_int32, SIM_INVOKE, ctypes.c_void_p, ctypes.c_uint32],
    ),
    "hosted_runner_trace": (None, [SIM_TRACE]),
    "hosted_runner_input": (ctypes.c_void_p, []),
    "hosted_runner_output": (ctypes.c_void_p, []),
    "hosted_main": (None, []),
}


def load_library(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def serve(args: argparse.Namespace) -> None:
    from harness.device.sim_board import NoModelRunner, TflmRunner

    lib = load_library(Path(args.library))
    if args.model:
        with open(args.model, "rb") as f:
            runner = TflmRunner(f.read(), args.arena, plant_fault_op=args.plant_fault_op)
    else:
        runner = NoModelRunner()
    master, slave = os.openpty()
    tty.setraw(slave)  # no echo and no line discipline before the host configures the port
    invoke = SIM_INVOKE(runner.invoke)  # must outlive the firmware
    if lib.hosted_runner_configure(ctypes.byref(runner.model_info), runner.status, invoke, None, args.invoke_us):
        raise MemoryError("could not allocate the runner's tensors")
    trace = SIM_TRACE(runner.invoke_traced) if hasattr(runner, "invoke_traced") else None  # outlives it too
    if trace:
        lib.hosted_runner_trace(trace)
    runner.input_ptr, runner.output_ptr = lib.hosted_runner_input(), lib.hosted_runner_output()
    lib.hosted_uart_attach(master)
    stopping, powered = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(POWER_ON, lambda *_: powered.set())
    if not args.powered_off:
        powered.set()
    print(f"pty {os.ttyname(slave)}", flush=True)
    while not powered.wait(0.2) and not stopping.is_set():
        pass
    if powered.is_set():
        threading.Thread(target=lib.hosted_main, daemon=True).start()  # setup() / app_main(): never returns
    while not stopping.wait(0.2):
        pass
    print(
        f"hosted: {lib.hosted_uart_lost_full()} bytes lost at a full receive buffer, "
        f"{lib.hosted_uart_lost_wrong_rate()} at mismatched rates; link at {lib.hosted_uart_baud()} baud; "
        f"last invoke: {lib.hosted_uart_invoke_delivered()} bytes handed to the firmware while it ran, "
        f"{lib.hosted_uart_invoke_held()} still in the framework's buffers at its end",
        file=sys.stderr,
        flush=True,
    )
    os._exit(0)  # the firmware's thread runs for ever, as firmware does


@contextmanager
def hosted_board_process(
    board: Board,
    model: TfliteModel | None,
    report: list | None = None,
    dut: EembcDutBuild | None = None,
    powered: bool = True,
) -> Iterator[BoardPty]:
    """The board's HAL built for this machine, serving for the duration of the block. With `report`,
    the process's closing line (bytes the emulated UART lost, its final rate, what the framework handed
    the firmware during the last invoke and still held at its end) is appended to it. With `dut`, the
    firmware is the MLPerf Tiny DUT (at dut.baud) instead of harness's protocol. With powered=False the
    pseudo-terminal is there but the firmware starts only at power_on(path): a DUT whose supply is switched
    on once the host has opened its port (as an energy monitor does), so nothing it prints at boot is lost."""
    from harness.device.planted_fault import planted_fault_op

    model_path = model.path if model else None
    fault = planted_fault_op(model_path)
    library, _ = build_library(board, dut, model)
    fw = board.firmware
    command = [
        sys.executable,
        "-m",
        "harness.device.hosted_hal",
        "--library",
        str(library),
        *(["--model", str(model_path)] if model_path else []),
        "--arena",
        str(fw.arena_bytes),
        "--invoke-us",
        str(round(board.sim.emulate_invoke_ms * 1000)),
        *(["--plant-fault-op", str(fault)] if fault >= 0 else []),
        *([] if powered else ["--powered-off"]),
    ]
    with pty_board_process(command, "the hosted board", START_SECONDS, report) as path:
        yield path


def power_on(board: BoardPty) -> None:
    """Switch on the supply of a board process started with powered=False: its firmware boots now."""
    os.kill(board.pid, POWER_ON)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--library", required=True, help="the hosted build (build_library)")
    parser.add_argument("--model", help="the .tflite to run; without it the board serves self-tests only")
    parser.add_argument("--arena", type=int, required=True)
    parser.add_argument("--invoke-us", type=int, default=0, help="the least time an invoke takes")
    parser.add_argument("--plant-fault-op", type=int, default=-1, help=argparse.SUPPRESS)  # docs/debug.md
    parser.add_argument("--powered-off", action="store_true", help="start the firmware only at SIGUSR1")
    serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()

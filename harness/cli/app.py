"""The `harness` command line: the parser and the entry point.

Every run of `harness` builds the whole parser, and a bad flag is refused while parsing, so this module and
what it imports stay light (argparse, harness/values.py, harness/defaults.py, the eval settings' declarations):
a command's handler is named as "module:function" and imported by main() when that command runs.
tests/unit/architecture/test_cli_startup.py checks that building the parser imports nothing heavy."""

import argparse
import contextlib
import errno
import importlib
import os
import select
import sys
import threading
from typing import NoReturn

from harness import __version__, console
from harness.cli import exits
from harness.cli.args import BOARD, PORT, RESULTS, Parser, add_protocol_option, command, group, link_options
from harness.cli.energy import add_lpirc_commands, add_meter_command
from harness.cli.guards import one_line, refuse_outputs_over_inputs
from harness.cli.parsers.cache import add_cache
from harness.cli.parsers.debug import add_debug
from harness.cli.parsers.models import add_dataset, add_models
from harness.cli.parsers.runs import add_runs
from harness.cli.parsers.streaming import add_stream
from harness.cli.signals import sigterm_as_interrupt
from harness.cli.spellings import modern_spelling
from harness.cli.tflm import add_tflm_commands
from harness.defaults import DEFAULT_MODEL, DEMO, MLPERF_WINDOW_SECONDS
from harness.errors import InterruptedRun, UserError, WordedError
from harness.eval.settings import TFLM_HELP
from harness.eval.settings import add_arguments as add_eval_settings
from harness.firmware.eembc_dut import EEMBC_MODES
from harness.values import (
    link_bytes,
    output_folder,
    run_reference,
    timed_runs,
    warmup_runs,
    window_seconds,
)


def platformio_board_help() -> str:
    """The PlatformIO boards, read from the board files (a broken user board file must not break --help)."""
    from harness.boards import board_ids  # the board files are read (and validated) only when help is shown

    try:
        return f"a PlatformIO board ({', '.join(board_ids(platformio=True))}) or a board file's path"
    except UserError:
        return "a PlatformIO board (`harness boards list` lists them) or a board file's path"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="harness",
        description="Benchmark TinyML models on microcontrollers. Commands by group: docs/cli.md.",
        epilog="example:\n  harness flash --board nucleo_h743\n  harness eval --board nucleo_h743 --subset all",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_main_job(commands)
    _add_timing(commands)
    add_meter_command(commands)
    _add_boards(commands)
    _add_farm(commands)
    _add_firmware(commands)
    add_tflm_commands(commands)
    add_models(commands)
    add_debug(commands)
    add_dataset(commands)
    add_runs(commands)
    add_stream(commands)
    add_lpirc_commands(commands)
    add_cache(commands)
    return parser


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    parser.add_argument("--model-file", help="a .tflite to use instead of the card's own file")


def _add_main_job(commands) -> None:
    run = command(
        commands,
        "eval",
        "harness.cli.evaluation:cmd_eval",
        "stream a benchmark subset to a board and compare with the host",
        ("harness eval --board sim --subset all --limit 24", "harness eval --resume RUN"),
    )
    add_eval_settings(run)  # every setting of the run, declared in harness/eval/settings.py
    RESULTS.add(run, writes=True)
    run.add_argument(
        "--resume",
        metavar="RUN",
        type=run_reference,
        help="finish an interrupted run (its id under --results, or its .partial folder) from its journal",
    )

    flash = command(
        commands,
        "flash",
        "harness.cli.flash:cmd_flash",
        "build the firmware for a board and load it (QEMU: boot and check)",
        ("harness flash --board nucleo_h743", "harness flash --board qemu_m4 --tflm ~/tflm-tree"),
    )
    BOARD.add(flash, required=True)
    _model_options(flash)
    flash.add_argument(
        "--tflm",
        help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package, see "
        "`harness tflm`); QEMU boards without it: self-test firmware",
    )
    PORT.add(flash)
    flash.add_argument("--serial", help="with several boards of a kind attached: the USB serial number to use")
    flash.add_argument(
        "--out", type=output_folder("--out"), default="build", help="where PlatformIO projects are generated"
    )
    _add_dut_options(flash)


def _add_timing(commands) -> None:
    for name, text, example in (
        ("perf", "time repeated invokes of one input: min, median, p95", "harness perf --board qemu_m4 --runs 100"),
        ("profile", "time one invoke operator by operator", "harness profile --board qemu_m4"),
    ):
        timed = command(commands, name, f"harness.cli.devices:cmd_{name}", text, example)
        BOARD.add(timed)
        _model_options(timed)
        PORT.add(timed)
        timed.add_argument("--dataset", default=DEMO, help="where the input comes from (its first image)")
        timed.add_argument("--tflm", help=TFLM_HELP)
        add_protocol_option(timed)
        add_eval_settings(timed, ("baud", "emulate_invoke_ms", "meter") if name == "perf" else ("baud",))
        if name == "perf":
            timed.add_argument("--runs", type=timed_runs, default=50, help="timed invokes")
            timed.add_argument("--warmups", type=warmup_runs, default=5, help="untimed invokes first")
            timed.add_argument("--mlperf", action="store_true", help="also the median of 5 windows of >= 10 s")
            timed.add_argument(
                "--window-seconds",
                type=window_seconds,
                default=MLPERF_WINDOW_SECONDS,
                help="with --meter: the least device time per energy window (default: MLPerf Tiny's 10)",
            )


def _add_boards(commands) -> None:
    boards = group(commands, "boards", "the boards: list them, check their link", "harness boards list")
    command(
        boards,
        "list",
        "harness.cli.devices:cmd_boards",
        "list the board files and the boards attached on USB",
        "harness boards list --json",
    )
    link = command(
        boards,
        "link-test",
        "harness.cli.devices:cmd_link_test",
        "check and time the link: echo frames both ways, PERF workload",
        "harness boards link-test --board nucleo_h743 --bytes 65536",
        parents=[link_options()],
    )
    BOARD.add(link)
    PORT.add(link)
    link.add_argument("--bytes", type=link_bytes, default=1 << 20, help="bytes through the link, both ways")


def _add_farm(commands) -> None:
    farm = group(
        commands, "farm", "a labgrid farm's places (LG_COORDINATOR): release one", "harness farm release lab-1"
    )
    release = command(
        farm,
        "release",
        "harness.cli.farm:cmd_farm_release",
        "release a place this host/user holds that no running harness uses (one a killed harness left acquired)",
        "harness farm release lab-1",
    )
    release.add_argument("place", help="the labgrid place")


def _add_firmware(commands) -> None:
    firmware = group(
        commands,
        "firmware",
        "PlatformIO firmware projects: generate one, build it (no upload)",
        "harness firmware build --board nucleo_h743",
    )
    for name, text in (
        ("build", "generate the PlatformIO project for a board and build it (no upload)"),
        ("generate", "write the PlatformIO project for a board"),
    ):
        project = command(
            firmware,
            name,
            f"harness.cli.devices:cmd_{name}",
            text,
            f"harness firmware {name} --board nucleo_h743 --model mlperf_tiny_vww",
        )
        BOARD.add(project, required=True, purpose_on_demand=platformio_board_help)
        _model_options(project)
        project.add_argument(
            "--tflm", help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package)"
        )
        project.add_argument(
            "--out", type=output_folder("--out"), default="build", help="where projects go: OUT/<board>/<model hash>/"
        )
        _add_dut_options(project)
        if name == "generate":
            project.add_argument(
                "--archive",
                action="store_true",
                help="also pack the project as OUT/<board>/<model hash>.zip, with a manifest.json of sha256s",
            )


def _add_dut_options(parser) -> None:
    """--protocol and --eembc-mode of the commands that make firmware: harness's, or the card's MLPerf Tiny DUT."""
    add_protocol_option(parser)
    parser.add_argument(
        "--eembc-mode",
        choices=EEMBC_MODES,
        default=EEMBC_MODES[0],
        help="with --protocol eembc: performance (115200 baud, m-lap-us- timestamps; accuracy runs too) or "
        "energy (9600 baud, timestamps on the board's [eembc] timestamp_pin)",
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command line; a reader that closed our stdout (`harness models list | head -1`) ends it quietly,
    with 0, whatever the command was doing."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at interpreter exit
        return code
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return _after_closed_stdout()


def exit_process(argv: list[str] | None = None) -> NoReturn:
    """The process's entry (`harness`, `python -m harness`): main's code is the exit status.

    Once pyarrow is loaded the interpreter's teardown is skipped after the command's own threads are joined and its
    output flushed: Arrow's thread pools, torn down with the interpreter, now and then abort a finished process
    ("terminate called without an active exception", exit -6; apache/arrow#34314, #39862). Files, locks and
    children are all closed by then (with-blocks), so only that teardown is left out."""
    code = main(argv)
    if "pyarrow" not in sys.modules:
        sys.exit(code)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that closed the pipe: main said what it had to
            stream.flush()
    os._exit(code)


def _run(argv: list[str] | None) -> int:
    argv, deprecated = modern_spelling(sys.argv[1:] if argv is None else list(argv))
    if deprecated:
        print(f"harness: warning: {deprecated}", file=sys.stderr)
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    with sigterm_as_interrupt() as terminated:
        return _handled(parser, args, quiet, terminated)


def _handled(parser, args, quiet: bool, terminated: list[int]) -> int:
    """The command's exit code; its error, or its interruption, in one line on stderr."""
    try:
        refuse_outputs_over_inputs(parser, args)
        with console.quieted(quiet):
            return handler_of(args)(args)
    except exits.HANDLED as exc:
        row = exits.error_exit(exc, bool(terminated))
        say(f"harness: {row.says}: " + (exc.worded_for_cli() if isinstance(exc, WordedError) else str(exc)))
        return row.code
    except KeyboardInterrupt:
        row = exits.error_exit(InterruptedRun(), bool(terminated))
        kept = "this command wrote no results (a run it resumed keeps the samples it had)"
        print(f"harness: {row.says}; {kept}", file=sys.stderr)
        return row.code
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            return _after_closed_stdout()
        if isinstance(exc, BrokenPipeError | ConnectionResetError):  # a socket or a child's pipe, not a file
            why = exc.strerror or exc
            say(
                f"harness: link error: the other end of a connection harness was writing to closed ({why}): a board, "
                "QEMU or a program harness ran went away; check that it is running, then run again"
            )
            return exits.LINK
        if _port_failed(exc):  # the board's port failed under us: a board or QEMU that died mid-run
            print(
                f"harness: link error: the board's port failed ({exc.strerror or exc}); check that the board "
                "is running and connected, then run again",
                file=sys.stderr,
            )
            return exits.LINK
        # A file the checks above did not foresee: unreadable, a folder, a full disk.
        where = f" {exc.filename}" if exc.filename else ""
        say(f"harness: error: cannot use{where} ({exc.strerror or exc}); check the path and its permissions")
        return exits.USAGE


def say(line: str) -> None:
    """The command's one line on stderr, whatever the values it echoes hold (harness/cli/guards.py)."""
    print(one_line(line), file=sys.stderr)


def handler_of(args: argparse.Namespace):
    """The command's handler: a function, or "module:function" (imported now, only for the command that runs)."""
    handler = args.handler
    if isinstance(handler, str):
        module, _, name = handler.partition(":")
        handler = getattr(importlib.import_module(module), name)
    return handler


def _port_failed(exc: OSError) -> bool:
    """A serial port's failure (pyserial's own, or EIO/ENXIO/ENODEV from a terminal whose other end went
    away), not a file's: those name their file."""
    import serial

    return isinstance(exc, serial.SerialException) or (
        exc.filename is None and exc.errno in (errno.EIO, errno.ENXIO, errno.ENODEV)
    )


def _stdout_closed() -> bool:
    """Whether the reader of our stdout has gone (a pipe whose other end closed), rather than some other pipe
    (a board's socket) breaking."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture): not a closed pipe
        return False


def _after_closed_stdout() -> int:
    """stdout pointed at /dev/null, so that the interpreter's last flush does not fail (and exit 120) on the
    closed pipe; the command's work is done or abandoned: a closed reader is a quiet success."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return exits.OK

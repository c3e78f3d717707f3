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
from harness.cli.args import Parser, command, group, link_options
from harness.cli.energy import add_lpirc_commands, add_meter_command
from harness.cli.guards import one_line, refuse_outputs_over_inputs
from harness.cli.signals import sigterm_as_interrupt
from harness.cli.spellings import modern_spelling
from harness.cli.tflm import add_tflm_commands
from harness.defaults import DEFAULT_MODEL, DEFAULT_SPLIT_SEED, DEMO, MLPERF_WINDOW_SECONDS, PROTOCOL_NAMES
from harness.errors import InterruptedRun, UserError, WordedError
from harness.eval.settings import TFLM_HELP
from harness.eval.settings import add_arguments as add_eval_settings
from harness.values import (
    age_days,
    calibration_samples,
    clip_count,
    clip_placements,
    decibels,
    distinct_names,
    exposure_ms,
    gap_ms,
    link_bytes,
    output_file,
    output_folder,
    path_text,
    port_names,
    relative_change,
    run_reference,
    seed_number,
    stream_ms,
    timed_runs,
    tolerance_ms,
    warmup_runs,
    window_seconds,
)

PROTOCOL_HELP = "the board's wire protocol: harness firmware (default) or MLPerf Tiny / EEMBC DUT firmware"


def add_protocol_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    parser.add_argument("--protocol", choices=PROTOCOL_NAMES, default="harness", help=prefix + PROTOCOL_HELP)


def platformio_board_help() -> str:
    """The PlatformIO boards, read from the board files (a broken user board file must not break --help)."""
    from harness.boards import board_ids  # the board files are read (and validated) only when help is shown

    try:
        return f"a PlatformIO board ({', '.join(board_ids(platformio=True))}) or a board file's path"
    except UserError:
        return "a PlatformIO board (`harness boards list` lists them) or a board file's path"


class _StoreHelpOnDemand(argparse.Action):
    """argparse's plain store, whose help text `help_text()` makes only when help is shown: building the parser
    for every command must not read every board file."""

    def __init__(self, option_strings, dest, help_text, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self._help_text = help_text

    @property
    def help(self) -> str:
        return self._help_text()

    @help.setter
    def help(self, value) -> None:  # argparse sets help=None first
        pass

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)


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
    _add_models(commands)
    _add_dataset(commands)
    _add_runs(commands)
    _add_stream(commands)
    add_lpirc_commands(commands)
    _add_cache(commands)
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
    run.add_argument("--results", type=output_folder("--results"), default="results", help="folder for run folders")
    run.add_argument(
        "--resume",
        metavar="RUN",
        type=run_reference,
        help="finish an interrupted run (its id under --results, or its .partial folder) from its journal",
    )

    flash = command(
        commands,
        "flash",
        "harness.cli.devices:cmd_flash",
        "build the firmware for a board and load it (QEMU: boot and check)",
        ("harness flash --board nucleo_h743", "harness flash --board qemu_m4 --tflm ~/tflm-tree"),
    )
    flash.add_argument("--board", required=True, help="board id from boards/")
    _model_options(flash)
    flash.add_argument(
        "--tflm",
        help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package, see "
        "`harness tflm`); QEMU boards without it: self-test firmware",
    )
    flash.add_argument(
        "--port", type=port_names, help="serial port of a real board, or 'auto' (default: found by USB id)"
    )
    flash.add_argument("--serial", help="with several boards of a kind attached: the USB serial number to use")
    flash.add_argument(
        "--out", type=output_folder("--out"), default="build", help="where PlatformIO projects are generated"
    )


def _add_timing(commands) -> None:
    for name, text, example in (
        ("perf", "time repeated invokes of one input: min, median, p95", "harness perf --board qemu_m4 --runs 100"),
        ("profile", "time one invoke operator by operator", "harness profile --board qemu_m4"),
    ):
        timed = command(commands, name, f"harness.cli.devices:cmd_{name}", text, example)
        timed.add_argument("--board", default="sim", help="board id from boards/")
        _model_options(timed)
        timed.add_argument("--port", type=port_names, help="serial device or pyserial URL of a real board")
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
    link.add_argument("--board", default="sim", help="board id from boards/")
    link.add_argument("--port", type=port_names, help="serial device or pyserial URL of a real board")
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
        project.add_argument("--board", required=True, action=_StoreHelpOnDemand, help_text=platformio_board_help)
        _model_options(project)
        project.add_argument(
            "--tflm", help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package)"
        )
        project.add_argument(
            "--out", type=output_folder("--out"), default="build", help="where projects go: OUT/<board>/<model hash>/"
        )


def _add_models(commands) -> None:
    models = group(
        commands, "models", "model cards: list, fetch, inspect, convert", "harness models inspect mlperf_tiny_vww"
    )
    command(models, "list", "harness.cli.models:cmd_models_list", "list the model cards", "harness models list")
    pull = command(
        models,
        "pull",
        "harness.cli.models:cmd_models_pull",
        "fetch a card's model (and a keyword card's frontend) and check its sha256, for offline runs",
        "harness models pull mlperf_tiny_vww",
    )
    pull.add_argument("name", help="the card whose model to fetch and verify")

    inspect = command(
        models,
        "inspect",
        "harness.cli.models:cmd_inspect",
        "operators, MACs, arena and board fit of a model",
        ("harness models inspect mlperf_tiny_vww --board nucleo_h743", "harness models inspect my_model.tflite"),
    )
    inspect.add_argument("model", help="model card name or a .tflite file")
    inspect.add_argument("--board", help="only this board's fit (default: every board)")
    inspect.add_argument("--no-fit", action="store_true", help="skip the board fit table")
    inspect.add_argument("--layers", action="store_true", help="print every layer with its MACs")

    conv = command(
        models,
        "convert",
        "harness.cli.models:cmd_convert",
        "a float Keras model to full-integer TFLite",
        "harness models convert --card my_float_card.toml --model model.keras --out model.tflite",
    )
    conv.add_argument("--card", required=True, help="the float model's card: its preprocessing and output")
    conv.add_argument("--model", help="the .keras/.h5 file or SavedModel folder (default: the card's file)")
    conv.add_argument("--out", type=output_file("--out MODEL.tflite"), required=True, help="the .tflite to write")
    conv.add_argument("--dataset", default=DEMO, help="calibration and check data")
    conv.add_argument("--subset", type=distinct_names, default="all", help="subsets to draw samples from")
    conv.add_argument(
        "--samples", type=calibration_samples, default=50, help="calibration samples; the rest are held out"
    )
    conv.add_argument(
        "--seed",
        type=seed_number,
        default=DEFAULT_SPLIT_SEED,
        help="seed of the shuffled, class-stratified calibration / held-out split",
    )
    conv.add_argument("--io", default="int8", help="input/output type: int8, uint8 or float32")
    conv.add_argument("--reference", help="a published model's card to compare top-1 with on every sample")


def _add_dataset(commands) -> None:
    dataset = group(
        commands, "dataset", "datasets and subsets: list, build labels, score predictions", "harness dataset subsets"
    )
    command(
        dataset, "list", "harness.cli.models:cmd_datasets", "list the dataset sources", "harness dataset list --json"
    )
    build = command(
        dataset,
        "build",
        "harness.cli.models:cmd_dataset_build",
        "Wake Vision labels for your images from Open Images-style boxes",
        "harness dataset build --annotations oi/ --images photos/ --out my_dataset",
    )
    build.add_argument(
        "--annotations", required=True, help="folder with *bbox*.csv, *class-descriptions*.csv, *miap*.csv"
    )
    build.add_argument("--images", required=True, help="folder with the images (named by ImageID)")
    build.add_argument(
        "--out",
        type=output_folder("--out"),
        required=True,
        help="folder for labels.csv (and an images/ link): a --dataset",
    )
    command(
        dataset,
        "subsets",
        "harness.cli.models:cmd_subsets",
        "list the benchmark subsets",
        "harness dataset subsets",
    )
    scorer = command(
        dataset,
        "score",
        "harness.cli.evaluation:cmd_score",
        "the eval metrics for predictions made elsewhere, against a dataset's labels",
        "harness dataset score --labels wake_vision_test.csv --predictions predictions.csv --subset all,far",
    )
    scorer.add_argument(
        "--labels",
        required=True,
        help="label CSV: the 20 Wake Vision columns, the cleaned filename,original_label,clean_label, or "
        "filename,label (0/1)",
    )
    scorer.add_argument("--predictions", required=True, help="CSV with filename,prediction[,score]")
    scorer.add_argument(
        "--clean-labels",
        metavar="PATH",
        type=distinct_names,
        help="cleaned label CSVs (or folders holding them; comma-separated) whose clean_label replaces --labels' "
        "person label ('none' or not given: none)",
    )
    scorer.add_argument(
        "--subset",
        type=distinct_names,
        help="comma-separated subsets (default: every subset the labels have the flags for)",
    )


def _add_runs(commands) -> None:
    runs = group(
        commands,
        "runs",
        "the runs in a results folder: list, report, compare, gate",
        "harness runs check RUN --gates gates.toml",
    )
    listing = command(
        runs, "list", "harness.cli.evaluation:cmd_runs", "list the runs in a results folder", "harness runs list"
    )
    listing.add_argument("--results", type=path_text, default="results", help="results folder")

    report = command(
        runs,
        "report",
        "harness.cli.evaluation:cmd_report",
        "write a self-contained HTML report of runs",
        "harness runs report RUN_A RUN_B --out report.html",
    )
    report.add_argument("runs", nargs="+", help="run ids (under --results) or run folders")
    report.add_argument(
        "--out", type=output_file("--out REPORT.html"), default="report.html", help="the HTML file to write"
    )
    report.add_argument("--results", type=path_text, default="results", help="results folder")

    compare = command(
        runs,
        "compare",
        "harness.cli.evaluation:cmd_compare",
        "what changed between two runs, with significance",
        "harness runs compare RUN_A RUN_B",
    )
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--results", type=path_text, default="results", help="results folder")
    compare.add_argument(
        "--latency-tolerance",
        type=relative_change,
        help="smallest relative latency change called significant (default by source: emulated 0, device 0.02; "
        "sim latency is host time and is judged only with this option)",
    )

    check = command(
        runs,
        "check",
        "harness.cli.evaluation:cmd_check",
        f"gate a run: exit {exits.FAILED} when a gate fails",
        "harness runs check RUN --gates gates.toml --baseline BASELINE --junit gates.xml",
    )
    check.add_argument("run")
    check.add_argument("--gates", required=True, help="gates TOML file (see docs/lab-ci.md)")
    check.add_argument("--baseline", help="run to compare latency, arena and flash against")
    check.add_argument(
        "--junit", type=output_file("--junit GATES.xml"), help="write JUnit XML with one test case per gate and subset"
    )
    check.add_argument(
        "--strict", action="store_true", help="fail a gate that cannot be judged (no baseline, no such figure)"
    )
    check.add_argument("--results", type=path_text, default="results", help="results folder")


def _add_stream(commands) -> None:
    stream = group(
        commands,
        "stream",
        "keyword spotting on continuous audio: compose a stream, run it, score it",
        "harness stream run --wav stream.wav --ledger stream.csv",
    )
    build = command(
        stream,
        "build",
        "harness.cli.streaming:cmd_stream_build",
        "compose a test stream from keyword clips, and its ledger",
        "harness stream build --clips clips/ --out stream.wav --count 20 --seed 1",
    )
    build.add_argument("--clips", required=True, help="folder of 16 kHz mono clips (label from folder or file name)")
    build.add_argument("--out", type=output_file("--out STREAM.wav"), required=True, help="the stream WAV to write")
    build.add_argument(
        "--ledger", type=output_file("--ledger LEDGER.csv"), help="the ledger to write (default: OUT with .csv)"
    )
    build.add_argument(
        "--at", type=clip_placements, help="clips at fixed times, label:start_ms,... (e.g. yes:1000,no:3500)"
    )
    build.add_argument("--count", type=clip_count, help="this many clips at random times instead of --at")
    build.add_argument(
        "--words", type=distinct_names, help="with --count: labels to draw from, comma-separated (default: all)"
    )
    build.add_argument("--min-gap-ms", type=gap_ms, default=1000, help="with --count: least gap")
    build.add_argument("--duration-ms", type=stream_ms, help="stream length (default: last clip + 1 s)")
    build.add_argument("--background", default="silence", help="'silence' or a WAV looped underneath")
    build.add_argument("--snr-db", type=decibels, help="each clip's power over the background's, in dB")
    build.add_argument("--seed", type=seed_number, default=0, help="random seed for times and clip choice")

    run = command(
        stream,
        "run",
        "harness.cli.streaming:cmd_stream_run",
        "run a stream on a board: detections on device and host, scored against the ledger",
        "harness stream run --board sim --wav stream.wav --ledger stream.csv",
    )
    run.add_argument("--wav", required=True, help="the stream, 16 kHz mono 16-bit")
    run.add_argument("--ledger", help="the events to score the detections against")
    run.add_argument("--board", default="sim", help="board id (sim: the virtual board)")
    run.add_argument("--model", default="tflm_micro_speech", help="a keyword card with [streaming]")
    run.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    run.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit when not ms")
    run.add_argument("--tolerance-ms", type=tolerance_ms, help="matching tolerance for optimal and tf-compat")
    run.add_argument("--wakeword", help="mlperf-sww's wakeword (default: the card's first keyword)")
    run.add_argument("--results", type=output_folder("--results"), default="results", help="folder for run folders")
    run.add_argument("--port", type=port_names, help="serial device or pyserial URL of a real board")
    run.add_argument("--serial", help="the USB serial number, with several boards of a kind")
    run.add_argument("--tflm", help=TFLM_HELP)
    add_protocol_option(run)

    score = command(
        stream,
        "score",
        "harness.cli.streaming:cmd_stream_score",
        "score keyword detections on continuous audio against an event ledger",
        "harness stream score --ledger stream.csv --detections detections.csv --audio stream.wav",
    )
    score.add_argument("--ledger", required=True, help="CSV of label,start_ms[,end_ms]")
    score.add_argument("--detections", required=True, help="CSV of label,time_ms,score,reference")
    score.add_argument(
        "--policy", default="optimal", choices=("optimal", "tf-compat", "mlperf-sww"), help="matching rules"
    )
    score.add_argument(
        "--tolerance-ms",
        type=tolerance_ms,
        help="match window either side of an event (default: optimal 1000, tf-compat 1500)",
    )
    exposure = score.add_mutually_exclusive_group()
    exposure.add_argument("--audio", help="the stream's WAV: its length is the exposure and bounds the ledger")
    exposure.add_argument("--duration-ms", type=exposure_ms, help="the exposure, when the WAV is not at hand")
    score.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit, when not ms")
    score.add_argument("--wakeword", help="mlperf-sww: the wakeword label (default: the ledger's only label)")


def _add_cache(commands) -> None:
    cache = group(
        commands,
        "cache",
        "the input cache of prepared input tensors ($HARNESS_CACHE_DIR/tensors)",
        "harness cache prune --older-than 30",
    )
    command(cache, "list", "harness.cli.cache:cmd_cache_list", "list the input cache's entries", "harness cache list")
    prune = command(
        cache,
        "prune",
        "harness.cli.cache:cmd_cache_prune",
        "remove input cache entries",
        ("harness cache prune --older-than 30", "harness cache prune --all --dry-run"),
    )
    prune.add_argument("--older-than", type=age_days, metavar="DAYS", help="entries unused this long")
    prune.add_argument("--all", action="store_true", help="every entry")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")


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
        print(f"harness: {row.says}; no results were written", file=sys.stderr)
        return row.code
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            return _after_closed_stdout()
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

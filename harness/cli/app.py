"""The `harness` command line: the parser and the entry point.

Every run of `harness` builds the whole parser, and a bad flag is refused while parsing, so this module and
what it imports stay light (argparse, harness/values.py, harness/defaults.py, the eval settings' declarations):
a command's handler is named as "module:function" and imported by main() when that command runs.
tests/unit/architecture/test_cli_startup.py checks that building the parser imports nothing heavy."""

import argparse
import errno
import importlib
import sys

from harness import __version__, console
from harness.cli.args import EXIT_USAGE, Parser, link_options, output_options
from harness.cli.energy import add_energy_commands
from harness.cli.tflm import add_tflm_commands
from harness.defaults import DEFAULT_MODEL, DEFAULT_SPLIT_SEED, DEMO, MLPERF_WINDOW_SECONDS, PROTOCOL_NAMES
from harness.errors import BuildError, InterruptedRun, LinkError, UserError
from harness.eval.settings import TFLM_HELP
from harness.eval.settings import add_arguments as add_eval_settings
from harness.values import (
    decibels,
    fraction,
    milliseconds,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    seed_number,
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
        return "a PlatformIO board (`harness boards` lists them) or a board file's path"


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


def _platformio_board_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--board", required=True, action=_StoreHelpOnDemand, help_text=platformio_board_help)


def build_parser() -> argparse.ArgumentParser:
    output = output_options()
    link = link_options()
    parser = Parser(prog="harness", description="Benchmark TinyML models on microcontrollers.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    run = commands.add_parser(
        "eval", parents=[output], help="stream a benchmark subset to a board and compare with the host"
    )
    add_eval_settings(run)  # every setting of the run, declared in harness/eval/settings.py
    run.add_argument("--results", default="results", help="folder for run folders (default: results)")
    run.add_argument(
        "--resume",
        metavar="RUN",
        help="finish an interrupted run (its id under --results, or its .partial folder) from its journal",
    )
    run.set_defaults(handler="harness.cli.evaluation:cmd_eval")

    flash = commands.add_parser("flash", help="build the firmware for a board and load it (QEMU: boot and check)")
    flash.add_argument("--board", required=True, help="board id from boards/")
    flash.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    flash.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    flash.add_argument(
        "--tflm",
        help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package, see "
        "`harness tflm`); QEMU boards without it: self-test firmware",
    )
    flash.add_argument("--port", help="serial port of a real board, or 'auto' (default: found by USB id)")
    flash.add_argument("--serial", help="with several boards of a kind attached: the USB serial number to use")
    flash.add_argument("--out", default="build", help="where PlatformIO projects are generated (default: build)")
    flash.set_defaults(handler="harness.cli.devices:cmd_flash")

    build = commands.add_parser(
        "build", parents=[output], help="generate the PlatformIO project for a board and build it (no upload)"
    )
    _platformio_board_option(build)
    build.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    build.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    build.add_argument("--tflm", help="TFLM source tree (default: $HARNESS_TFLM_TREE, else the board's choice)")
    build.add_argument("--out", default="build", help="where projects go: OUT/<board>/<model hash>/")
    build.set_defaults(handler="harness.cli.devices:cmd_build")

    generate = commands.add_parser("generate", parents=[output], help="write the PlatformIO project for a board")
    _platformio_board_option(generate)
    generate.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    generate.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    generate.add_argument(
        "--tflm", help="TFLM tree (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree or its pinned package)"
    )
    generate.add_argument("--out", default="build", help="where projects go: OUT/<board>/<model hash>/")
    generate.set_defaults(handler="harness.cli.devices:cmd_generate")

    link = commands.add_parser(
        "link-test",
        parents=[output, link],
        help="check and time the link: echo frames both ways, PERF workload",
    )
    link.add_argument("--board", default="sim", help="board id from boards/ (default: sim)")
    link.add_argument("--port", help="serial device or pyserial URL of a real board")
    link.add_argument("--bytes", type=positive_int, default=1 << 20, help="bytes through the link, both ways")
    link.set_defaults(handler="harness.cli.devices:cmd_link_test")

    for name, handler, text in (
        ("perf", "harness.cli.devices:cmd_perf", "time repeated invokes of one input: min, median, p95"),
        ("profile", "harness.cli.devices:cmd_profile", "time one invoke operator by operator"),
    ):
        timed = commands.add_parser(name, parents=[output], help=text)
        timed.add_argument("--board", default="sim", help="board id from boards/ (default: sim)")
        timed.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
        timed.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
        timed.add_argument("--port", help="serial device or pyserial URL of a real board")
        timed.add_argument("--dataset", default=DEMO, help="where the input comes from (its first image)")
        timed.add_argument("--tflm", help=TFLM_HELP)
        add_protocol_option(timed)
        add_eval_settings(timed, ("baud", "emulate_invoke_ms", "meter") if name == "perf" else ("baud",))
        timed.set_defaults(handler=handler)
        if name == "perf":
            timed.add_argument("--runs", type=positive_int, default=50, help="timed invokes (default: 50)")
            timed.add_argument("--warmups", type=non_negative_int, default=5, help="untimed invokes first (default: 5)")
            timed.add_argument("--mlperf", action="store_true", help="also the median of 5 windows of >= 10 s")
            timed.add_argument(
                "--window-seconds",
                type=positive_float,
                default=MLPERF_WINDOW_SECONDS,
                help="with --meter: the least device time per energy window (default: MLPerf Tiny's 10)",
            )

    runs = commands.add_parser("runs", parents=[output], help="list the runs in a results folder")
    runs.add_argument("--results", default="results", help="results folder (default: results)")
    runs.set_defaults(handler="harness.cli.evaluation:cmd_runs")

    report = commands.add_parser("report", parents=[output], help="write a self-contained HTML report of runs")
    report.add_argument("runs", nargs="+", help="run ids (under --results) or run folders")
    report.add_argument("--out", default="report.html", help="the HTML file to write (default: report.html)")
    report.add_argument("--results", default="results", help="results folder (default: results)")
    report.set_defaults(handler="harness.cli.evaluation:cmd_report")

    compare = commands.add_parser("compare", parents=[output], help="what changed between two runs, with significance")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--results", default="results", help="results folder (default: results)")
    compare.add_argument(
        "--latency-tolerance",
        type=fraction,
        help="smallest relative latency change called significant (default by source: emulated 0, device 0.02; "
        "sim latency is host time and is judged only with this option)",
    )
    compare.set_defaults(handler="harness.cli.evaluation:cmd_compare")

    check = commands.add_parser("check", parents=[output], help="gate a run: exit 1 when a gate fails")
    check.add_argument("run")
    check.add_argument("--gates", required=True, help="gates TOML file (see docs/lab-ci.md)")
    check.add_argument("--baseline", help="run to compare latency, arena and flash against")
    check.add_argument("--junit", help="write JUnit XML with one test case per gate")
    check.add_argument(
        "--strict", action="store_true", help="fail a gate that cannot be judged (no baseline, no such figure)"
    )
    check.add_argument("--results", default="results", help="results folder (default: results)")
    check.set_defaults(handler="harness.cli.evaluation:cmd_check")

    conv = commands.add_parser("convert", parents=[output], help="a float Keras model to full-integer TFLite")
    conv.add_argument("--card", required=True, help="the float model's card: its preprocessing and output")
    conv.add_argument("--model", help="the .keras/.h5 file or SavedModel folder (default: the card's file)")
    conv.add_argument("--out", required=True, help="the .tflite to write")
    conv.add_argument("--dataset", default=DEMO, help="calibration and check data (default: demo)")
    conv.add_argument("--subset", default="all", help="subsets to draw samples from (default: all)")
    conv.add_argument("--samples", type=positive_int, default=50, help="calibration samples; the rest are held out")
    conv.add_argument(
        "--seed",
        type=seed_number,
        default=DEFAULT_SPLIT_SEED,
        help=f"seed of the shuffled, class-stratified calibration / held-out split (default: {DEFAULT_SPLIT_SEED})",
    )
    conv.add_argument("--io", default="int8", help="input/output type: int8, uint8 or float32 (default: int8)")
    conv.add_argument("--reference", help="a published model's card to compare top-1 with on every sample")
    conv.set_defaults(handler="harness.cli.models:cmd_convert")

    inspect = commands.add_parser("inspect", parents=[output], help="operators, MACs, arena and board fit of a model")
    inspect.add_argument("model", help="model card name or a .tflite file")
    inspect.add_argument("--board", help="only this board's fit (default: every board)")
    inspect.add_argument("--no-fit", action="store_true", help="skip the board fit table")
    inspect.add_argument("--layers", action="store_true", help="print every layer with its MACs")
    inspect.set_defaults(handler="harness.cli.models:cmd_inspect")

    scorer = commands.add_parser("score", parents=[output], help="the eval metrics for predictions made elsewhere")
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
        help="cleaned label CSVs (or folders holding them; comma-separated) whose clean_label replaces --labels' "
        "person label ('none' or not given: none)",
    )
    scorer.add_argument(
        "--subset", help="comma-separated subsets (default: every subset the labels have the flags for)"
    )
    scorer.set_defaults(handler="harness.cli.evaluation:cmd_score")

    commands.add_parser("boards", parents=[output], help="list the boards").set_defaults(
        handler="harness.cli.devices:cmd_boards"
    )
    commands.add_parser("datasets", parents=[output], help="list the dataset sources").set_defaults(
        handler="harness.cli.models:cmd_datasets"
    )
    dataset = commands.add_parser("dataset", help="work on datasets")
    dataset_commands = dataset.add_subparsers(
        dest="dataset_command", metavar="{build}", required=True, parser_class=Parser
    )
    build = dataset_commands.add_parser(
        "build", parents=[output], help="Wake Vision labels for your images from Open Images-style boxes"
    )
    build.add_argument(
        "--annotations", required=True, help="folder with *bbox*.csv, *class-descriptions*.csv, *miap*.csv"
    )
    build.add_argument("--images", required=True, help="folder with the images (named by ImageID)")
    build.add_argument("--out", required=True, help="folder for labels.csv (and an images/ link): a --dataset")
    build.set_defaults(handler="harness.cli.models:cmd_dataset_build")
    cache = commands.add_parser(
        "cache",
        parents=[output],
        help="list the input cache, or prune it",
        description="The input cache holds each run's prepared input tensors ($HARNESS_CACHE_DIR/tensors).",
        epilog="example: harness cache prune --older-than 30",
    )
    cache.add_argument("action", nargs="?", choices=("list", "prune"), default="list")
    cache.add_argument("--older-than", type=non_negative_float, metavar="DAYS", help="prune: entries unused this long")
    cache.add_argument("--all", action="store_true", help="prune: every entry")
    cache.add_argument("--dry-run", action="store_true", help="prune: say what would go, remove nothing")
    cache.set_defaults(handler="harness.cli.cache:cmd_cache")
    models = commands.add_parser("models", parents=[output], help="list the model cards, or pull one")
    models.add_argument("action", nargs="?", choices=("list", "pull"), default="list")
    models.add_argument("name", nargs="?", help="with pull: the card whose model to fetch and verify")
    models.set_defaults(handler="harness.cli.models:cmd_models")
    stream_score = commands.add_parser(
        "stream-score", parents=[output], help="score keyword detections on continuous audio against an event ledger"
    )
    stream_score.add_argument("--ledger", required=True, help="CSV of label,start_ms[,end_ms]")
    stream_score.add_argument("--detections", required=True, help="CSV of label,time_ms,score,reference")
    stream_score.add_argument(
        "--policy",
        default="optimal",
        choices=("optimal", "tf-compat", "mlperf-sww"),
        help="matching rules (default: optimal)",
    )
    stream_score.add_argument(
        "--tolerance-ms",
        type=milliseconds,
        help="match window either side of an event (default: optimal 1000, tf-compat 1500)",
    )
    exposure = stream_score.add_mutually_exclusive_group()
    exposure.add_argument("--audio", help="the stream's WAV: its length is the exposure and bounds the ledger")
    exposure.add_argument("--duration-ms", type=positive_int, help="the exposure, when the WAV is not at hand")
    stream_score.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit, when not ms")
    stream_score.add_argument("--wakeword", help="mlperf-sww: the wakeword label (default: the ledger's only label)")
    stream_score.set_defaults(handler="harness.cli.streaming:cmd_stream_score")

    stream = commands.add_parser(
        "stream", parents=[output], help="continuous audio: `stream build` composes a test stream and its ledger"
    )
    stream.add_argument(
        "action", nargs="?", choices=("build",), help="build: compose a stream; without it: run a stream on a board"
    )
    stream.add_argument("--board", default="sim", help="run: board id (default: sim, the virtual board)")
    stream.add_argument("--model", default="tflm_micro_speech", help="run: a keyword card with [streaming]")
    stream.add_argument("--model-file", help="run: a .tflite to use instead of the card's own file")
    stream.add_argument("--wav", help="run: the stream, 16 kHz mono 16-bit")
    stream.add_argument("--ledger-unit", choices=("ms", "s"), help="run: the ledger's time unit when not ms")
    stream.add_argument("--tolerance-ms", type=milliseconds, help="run: matching tolerance for optimal and tf-compat")
    stream.add_argument("--wakeword", help="run: mlperf-sww's wakeword (default: the card's first keyword)")
    stream.add_argument("--results", default="results", help="run: folder for run folders (default: results)")
    stream.add_argument("--port", help="run: serial device or pyserial URL of a real board")
    stream.add_argument("--serial", help="run: the USB serial number, with several boards of a kind")
    stream.add_argument("--tflm", help="run: " + TFLM_HELP)
    add_protocol_option(stream, "run: ")
    stream.add_argument("--clips", help="build: folder of 16 kHz mono clips (label from folder or file name)")
    stream.add_argument("--out", help="build: the stream WAV to write")
    stream.add_argument("--ledger", help="build: the ledger to write (default: OUT with .csv); run: events to score")
    stream.add_argument("--at", help="build: clips at fixed times, label:start_ms,... (e.g. yes:1000,no:3500)")
    stream.add_argument("--count", type=positive_int, help="build: this many clips at random times instead of --at")
    stream.add_argument("--words", help="build with --count: labels to draw from, comma-separated (default: all)")
    stream.add_argument(
        "--min-gap-ms", type=milliseconds, default=1000, help="build with --count: least gap (default: 1000)"
    )
    stream.add_argument("--duration-ms", type=positive_int, help="build: stream length (default: last clip + 1 s)")
    stream.add_argument("--background", default="silence", help="build: 'silence' or a WAV looped underneath")
    stream.add_argument("--snr-db", type=decibels, help="build: each clip's power over the background's, in dB")
    stream.add_argument("--seed", type=seed_number, default=0, help="build: random seed for times and clip choice")
    stream.set_defaults(handler="harness.cli.streaming:cmd_stream")
    commands.add_parser("subsets", parents=[output], help="list the benchmark subsets").set_defaults(
        handler="harness.cli.models:cmd_subsets"
    )
    add_energy_commands(commands, output)
    add_tflm_commands(commands, output)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    try:
        with console.quieted(quiet):
            return handler_of(args)(args)
    except UserError as exc:
        print(f"harness: error: {exc.worded_for_cli()}", file=sys.stderr)
        return EXIT_USAGE
    except (LinkError, BuildError) as exc:
        print(f"harness: link error: {exc.worded_for_cli()}", file=sys.stderr)
        return 1
    except InterruptedRun as exc:
        print(f"harness: interrupted: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("harness: interrupted; no results were written", file=sys.stderr)
        return 130
    except OSError as exc:
        if _port_failed(exc):  # the board's port failed under us: a board or QEMU that died mid-run
            print(
                f"harness: link error: the board's port failed ({exc.strerror or exc}); check that the board "
                "is running and connected, then run again",
                file=sys.stderr,
            )
            return 1
        # A file the checks above did not foresee: unreadable, a folder, a full disk.
        where = f" {exc.filename}" if exc.filename else ""
        print(
            f"harness: error: cannot use{where} ({exc.strerror or exc}); check the path and its permissions",
            file=sys.stderr,
        )
        return EXIT_USAGE


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

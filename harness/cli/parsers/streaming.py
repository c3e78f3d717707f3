"""`harness stream`: compose a keyword stream, run it on a board, score it."""

from harness.cli.args import BOARD, PORT, RESULTS, add_protocol_option, command, group
from harness.cli.registry_names import RegistryNames
from harness.eval.settings import TFLM_HELP
from harness.values import (
    clip_count,
    clip_placements,
    decibels,
    distinct_names,
    exposure_ms,
    gap_ms,
    output_file,
    seed_number,
    stream_ms,
    tolerance_ms,
)


def add_stream(commands) -> None:
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
    BOARD.add(run)
    run.add_argument("--model", default="tflm_micro_speech", help="a keyword card with [streaming]")
    run.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    run.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit when not ms")
    run.add_argument("--tolerance-ms", type=tolerance_ms, help="matching tolerance of the policies that take one")
    run.add_argument("--wakeword", help="mlperf-sww's wakeword (default: the card's first keyword)")
    RESULTS.add(run, writes=True)
    PORT.add(run)
    run.add_argument("--serial", help="the USB serial number, with several boards of a kind")
    run.add_argument("--tflm", help=TFLM_HELP)
    add_protocol_option(run)
    run.add_argument(
        "--verbose", action="store_true", help="each policy's tables, per-label rows and notes (default: a line each)"
    )

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
        "--policy",
        default="optimal",
        choices=RegistryNames("harness.streaming.policies:policy_names"),
        metavar="POLICY",
        help="matching rules: %(choices)s (harness/streaming/policies/)",
    )
    score.add_argument(
        "--tolerance-ms",
        type=tolerance_ms,
        help="match window either side of an event (default: the policy's own, docs/streaming.md)",
    )
    exposure = score.add_mutually_exclusive_group()
    exposure.add_argument("--audio", help="the stream's WAV: its length is the exposure and bounds the ledger")
    exposure.add_argument("--duration-ms", type=exposure_ms, help="the exposure, when the WAV is not at hand")
    score.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit, when not ms")
    score.add_argument("--wakeword", help="mlperf-sww: the wakeword label (default: the ledger's only label)")

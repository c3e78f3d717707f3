"""Hostile files for the streaming and energy commands (issue #31): ledgers, detections, WAVs (--audio, --wav,
clips, background), meter logs and referee sessions. Every reader meets every form a hostile file takes (a FIFO,
a link to /dev/zero, a folder, bytes that are not UTF-8, JSON nested 10,000 deep, ...) and refuses it in one line
naming the file, without a hang, a traceback or a file changed; then the cases where a file parses but would
make a figure silently wrong (a BOM in a label, a header that is data, a WAV whose header lies, two meter logs
joined) and the outputs `stream build` must never write over."""

import io
import json
import os
import stat
import struct
import wave

import numpy as np
import pytest

from harness import reading
from tests.hostile import (
    DEV_ZERO,
    FIFO,
    FOLDER,
    NOT_A_FILE,
    NOT_JSON,
    NOT_TEXT,
    Case,
    every_bad_form,
    run_case,
    run_harness,
    tree,
)


def _wav(seconds: float = 1.0, rate: int = 16000, level: int = 0) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.full(int(rate * seconds), level, "<i2").tobytes())
    return buffer.getvalue()


def _claiming(data: bytes, seconds: float) -> bytes:
    """A WAV whose header claims `seconds` of 16 kHz audio, whatever it holds (a truncated recording)."""
    claimed = int(16000 * seconds) * 2
    data = bytearray(data)
    data[4:8] = struct.pack("<I", 36 + claimed)  # RIFF size
    data[40:44] = struct.pack("<I", claimed)  # the data chunk's size
    return bytes(data)


def _at_zero_hz(data: bytes) -> bytes:
    data = bytearray(data)
    data[24:32] = struct.pack("<II", 0, 0)  # sample rate and byte rate
    return bytes(data)


CLIP = _wav(level=1000)
DETECTIONS = b"label,time_ms,score,reference\nyes,1500,0.9,decision\n"
LEDGER = b"label,start_ms,end_ms\nyes,1000,2000\n"
METER_LOG = b"5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0002,2\n5,0.1,0.5,0.0003,3\n"


def score(*extra: str) -> tuple[str, ...]:
    return ("stream", "score", "--ledger", "l.csv", "--detections", "d.csv", *extra)


SCORE = score("--duration-ms", "10000")
BUILD = ("stream", "build", "--clips", "clips", "--out", "s.wav")
BUILD_COUNT = (*BUILD, "--count", "1", "--duration-ms", "5000")
STREAM_RUN = ("stream", "run", "--model", "tflm_micro_speech", "--wav", "s.wav", "--results", "r")
SESSION = "r/referee-demo-1/summary.json"
LPIRC_SCORE = ("lpirc", "score", "referee-demo-1", "--results", "r")


def _generated() -> list[Case]:
    cases: list[Case] = []
    readers = (
        ("ledger", SCORE, "l.csv", {"d.csv": DETECTIONS}, NOT_A_FILE | NOT_TEXT),
        ("detections", SCORE, "d.csv", {"l.csv": LEDGER}, NOT_A_FILE | NOT_TEXT),
        ("audio", score("--audio", "a.wav"), "a.wav", {"l.csv": LEDGER, "d.csv": DETECTIONS}, NOT_A_FILE),
        ("wav", STREAM_RUN, "s.wav", {}, NOT_A_FILE),
        ("run-ledger", (*STREAM_RUN, "--ledger", "l.csv"), "l.csv", {"s.wav": _wav(2)}, NOT_A_FILE | NOT_TEXT),
        ("clip", BUILD_COUNT, "clips/yes/a.wav", {}, NOT_A_FILE),
        ("background", (*BUILD_COUNT, "--background", "b.wav"), "b.wav", {"clips/yes/a.wav": CLIP}, NOT_A_FILE),
        ("meter-log", ("meter", "csv:log.csv"), "log.csv", {}, NOT_A_FILE | NOT_TEXT),
        ("referee-summary", LPIRC_SCORE, SESSION, {}, NOT_A_FILE | NOT_TEXT | NOT_JSON),
    )
    for reader, args, name, others, forms in readers:
        cases += every_bad_form(reader, args, name, forms, others)
    return cases


SPECIFIC = [
    # a first row is a header only if it is not data
    Case("ledger-first-row-letter-o", SCORE, ("l.csv line 1", "'1O00' is not a time"), {"l.csv": b"yes,1O00\n"}),
    Case("ledger-first-row-hex", SCORE, ("l.csv line 1", "'0x10' is not a time"), {"l.csv": b"yes,0x10\nno,2000\n"}),
    Case("ledger-first-row-nan", SCORE, ("l.csv line 1", "'nan' is not a time"), {"l.csv": b"yes,nan\n"}),
    Case("ledger-first-row-empty-time", SCORE, ("l.csv line 1", "is not a time"), {"l.csv": b"yes,\nno,2000\n"}),
    Case("ledger-underscore-digits", SCORE, ("l.csv line 1", "'1_000' is not a time"), {"l.csv": b"yes,1_000\n"}),
    Case(
        "ledger-arabic-indic-digits",
        SCORE,
        ("l.csv line 2", "is not a time"),
        {"l.csv": "label,start_ms\nyes,\u0661\u0660\u0660\u0660\n".encode()},
    ),
    Case("ledger-huge-time", SCORE, ("l.csv line 1", "past any audio"), {"l.csv": b"yes,1e300\n"}),
    Case("ledger-nul-byte", SCORE, ("l.csv line 2", "NUL"), {"l.csv": b"yes,100\nno,\x00200\n"}),
    Case(
        "ledger-bom-then-garbage-time",
        SCORE,
        ("l.csv line 1", "'1O00' is not a time"),
        {"l.csv": b"\xef\xbb\xbfyes,1O00\n"},
    ),
    Case(
        "ledger-huge-field",
        SCORE,
        ("l.csv", "not valid CSV", "65,536 characters"),
        {"l.csv": b"yes," + b"1" * 200_000 + b"\n", "d.csv": DETECTIONS},
    ),
    # detections
    Case(
        "detections-hex-time",
        SCORE,
        ("d.csv line 2", "finite decimal numbers"),
        {"l.csv": LEDGER, "d.csv": b"label,time_ms,score,reference\nyes,0x10,0.9,decision\n"},
    ),
    Case(
        "detections-inf-score",
        SCORE,
        ("d.csv line 2", "finite decimal numbers"),
        {"l.csv": LEDGER, "d.csv": b"label,time_ms,score,reference\nyes,100,inf,decision\n"},
    ),
    Case(
        "detections-empty",
        SCORE,
        ("d.csv needs the columns",),
        {"l.csv": LEDGER, "d.csv": b""},
    ),
    # --wakeword
    Case(
        "wakeword-not-in-ledger",
        score("--duration-ms", "10000", "--policy", "mlperf-sww", "--wakeword", "marvin"),
        ("wakeword 'marvin' is not in the ledger l.csv", "whose labels are no, yes", "--wakeword"),
        {"l.csv": b"label,start_ms,end_ms\nyes,1000,2000\nno,4000,5000\n", "d.csv": DETECTIONS},
    ),
    Case(
        "wakeword-in-neither-empty-ledger",
        score("--duration-ms", "10000", "--policy", "mlperf-sww", "--wakeword", "marvin"),
        ("wakeword 'marvin' is not in the detections", "whose labels are yes"),
        {"l.csv": b"label,start_ms,end_ms\n", "d.csv": DETECTIONS},
    ),
    # WAVs: 0 Hz, no frames
    Case(
        "audio-zero-hz",
        score("--audio", "a.wav"),
        ("cannot read a.wav as a WAV file", "0 Hz"),
        {"l.csv": LEDGER, "d.csv": DETECTIONS, "a.wav": _at_zero_hz(_wav(5))},
    ),
    Case(
        "audio-no-frames",
        score("--audio", "a.wav"),
        ("a.wav holds no audio (0 frames)",),
        {"l.csv": LEDGER, "d.csv": DETECTIONS, "a.wav": _wav(0)},
    ),
    Case("wav-zero-hz", STREAM_RUN, ("s.wav", "0 Hz"), {"s.wav": _at_zero_hz(_wav(2))}),
    Case("clip-zero-hz", BUILD_COUNT, ("clips/yes/a.wav", "0 Hz"), {"clips/yes/a.wav": _at_zero_hz(CLIP)}),
    Case(
        "clip-no-frames",
        BUILD_COUNT,
        ("clips/yes/b.wav holds no audio (0 frames)",),
        {"clips/yes/a.wav": CLIP, "clips/yes/b.wav": _wav(0)},
    ),
    Case(
        "clip-header-claims-frames-it-lacks",
        BUILD_COUNT,
        ("clips/yes/a.wav holds no audio (0 frames)",),
        {"clips/yes/a.wav": _claiming(_wav(0), 1.0)},
    ),
    Case(
        "background-zero-hz",
        (*BUILD_COUNT, "--background", "b.wav"),
        ("b.wav", "0 Hz"),
        {"clips/yes/a.wav": CLIP, "b.wav": _at_zero_hz(_wav(2, level=50))},
    ),
    # stream build: what --out and --ledger may name
    Case(
        "build-out-csv-is-its-own-ledger",
        ("stream", "build", "--clips", "clips", "--out", "s.csv", "--count", "1", "--duration-ms", "5000"),
        ("the stream s.csv and its ledger s.csv are the same file", "--ledger"),
        {"clips/yes/a.wav": CLIP, "s.csv": b"keep me\n"},
    ),
    Case(
        "build-ledger-is-out",
        (*BUILD_COUNT, "--ledger", "s.wav"),
        ("the stream s.wav and its ledger s.wav are the same file",),
        {"clips/yes/a.wav": CLIP, "s.wav": b"keep me"},
    ),
    Case(
        "build-ledger-is-out-through-a-link",
        (*BUILD_COUNT, "--ledger", "link.csv"),
        ("the stream s.wav and its ledger link.csv are the same file",),
        {"clips/yes/a.wav": CLIP, "s.wav": b"keep me"},
    ),
    Case(
        "build-out-is-a-clip",
        ("stream", "build", "--clips", "clips", "--out", "clips/yes/a.wav", "--count", "1", "--duration-ms", "5000"),
        ("--out", "is the clip clips/yes/a.wav", "write elsewhere"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-ledger-is-a-clip",
        (*BUILD_COUNT, "--ledger", "clips/yes/a.wav"),
        ("--ledger", "is the clip clips/yes/a.wav"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-ledger-is-the-background",
        (*BUILD_COUNT, "--background", "b.wav", "--ledger", "b.wav"),
        ("--ledger b.wav is also this command's input (--background b.wav)",),
        {"clips/yes/a.wav": CLIP, "b.wav": _wav(6, level=50)},
    ),
    Case(
        "build-out-fifo",
        BUILD_COUNT,
        ("argument --out", "s.wav is a FIFO", "pass a file to write"),
        {"clips/yes/a.wav": CLIP, "s.wav": FIFO},
    ),
    Case(
        "build-out-dev-zero-link",
        BUILD_COUNT,
        ("argument --out", "s.wav is a character device", "pass a file"),
        {"clips/yes/a.wav": CLIP, "s.wav": DEV_ZERO},
    ),
    Case(
        "build-ledger-fifo",
        (*BUILD_COUNT, "--ledger", "l.csv"),
        ("l.csv is a FIFO",),
        {"clips/yes/a.wav": CLIP, "l.csv": FIFO},
    ),
    Case(
        "build-ledger-folder",
        (*BUILD_COUNT, "--ledger", "l.csv"),
        ("l.csv is a folder",),
        {"clips/yes/a.wav": CLIP, "l.csv": FOLDER},
    ),
    Case(
        "build-duration-512-gib",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--count", "1", "--duration-ms", "17179869184"),
        ("argument --duration-ms", "at most 3,600,000", "17179869184"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-count-beyond-duration",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--count", "4294967296", "--duration-ms", "5000"),
        ("argument --count", "at most 100,000", "4294967296"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-at-past-an-hour",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--at", "yes:99999999999"),
        ("argument --at", "'yes:99999999999'", "start_ms from 0 to 3,600,000"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-at-arabic-indic",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--at", "yes:\u0661\u0660\u0660\u0660"),
        ("argument --at", "is not label:start_ms"),
        {"clips/yes/a.wav": CLIP},
    ),
    Case(
        "build-default-length-past-an-hour",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--at", "yes:3599500"),
        ("--duration-ms 3601500 is outside 1 to 3600000 ms",),
        {"clips/yes/a.wav": CLIP},
    ),
    # meter logs: joined, jumping, fractional counts
    Case(
        "meter-two-logs-back-to-back",
        ("meter", "csv:log.csv"),
        ("log.csv:4", "sample count falls from 3 to 1", "a second log starts here"),
        {"log.csv": METER_LOG + METER_LOG},
    ),
    Case(
        "meter-count-jumps",
        ("meter", "csv:log.csv"),
        ("log.csv:2", "sample count jumps from 1 to 1e+15", "damaged"),
        {"log.csv": b"5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0002,1e15\n5,0.1,0.5,0.0003,1000000000000001\n"},
    ),
    Case(
        "meter-first-count-huge",
        ("meter", "csv:log.csv"),
        ("log.csv:1", "jumps from 0 to 1e+15"),
        {"log.csv": b"5,0.1,0.5,0.0001,1e15\n5,0.1,0.5,0.0002,1000000000000001\n"},
    ),
    Case(
        "meter-count-fractional",
        ("meter", "csv:log.csv"),
        ("log.csv:2", "sample count 1.5 is not a whole number"),
        {"log.csv": b"5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0002,1.5\n"},
    ),
    Case(
        "meter-count-negative",
        ("meter", "csv:log.csv"),
        ("log.csv:1", "sample count -1 is not a whole number"),
        {"log.csv": b"5,0.1,0.5,0.0001,-1\n5,0.1,0.5,0.0002,2\n"},
    ),
    Case(
        "meter-bom-then-text",
        ("meter", "csv:log.csv"),
        ("log.csv:1", "expected 5 numbers"),
        {"log.csv": b"\xef\xbb\xbfV,I,W,Wh,n\n"},
    ),
    # referee sessions: the summary's schema
    Case(
        "referee-summary-accuracy-above-one",
        LPIRC_SCORE,
        (SESSION, "accuracy.value", "less than or equal to 1"),
        {SESSION: json.dumps({"kind": "referee", "metric": "accuracy", "accuracy": {"value": 5.0}}).encode()},
    ),
    Case(
        "referee-summary-metric-without-figures",
        LPIRC_SCORE,
        (SESSION, "its metric is map but it has no map figures"),
        {SESSION: json.dumps({"kind": "referee", "metric": "map"}).encode()},
    ),
    Case(
        "referee-summary-unknown-metric",
        LPIRC_SCORE,
        (SESSION, "field 'metric'"),
        {SESSION: json.dumps({"kind": "referee", "metric": "speed"}).encode()},
    ),
    Case(
        "referee-summary-energy-a-list",
        LPIRC_SCORE,
        (SESSION, "field 'energy'"),
        {SESSION: json.dumps({"kind": "referee", "metric": "map", "map": {"map": 0.5}, "energy": [1]}).encode()},
    ),
    Case(
        "referee-summary-a-string",
        LPIRC_SCORE,
        (SESSION, "holds a str, not an object"),
        {SESSION: b'"referee"'},
    ),
]

CASES = _generated() + SPECIFIC


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_stream_input_is_refused_in_one_line(tmp_path, case):
    if case.id == "build-ledger-is-out-through-a-link":
        (tmp_path / "link.csv").symlink_to("s.wav")
    run_case(tmp_path, case)


@pytest.mark.parametrize(
    ("kind", "args", "name", "others"),
    [
        (reading.LEDGER, SCORE, "l.csv", {"d.csv": DETECTIONS}),
        (reading.DETECTIONS, SCORE, "d.csv", {"l.csv": LEDGER}),
        (reading.METER_LOG, ("meter", "csv:log.csv"), "log.csv", {}),
        (reading.SUMMARY, LPIRC_SCORE, SESSION, {}),
    ],
    ids=["ledger", "detections", "meter-log", "referee-summary"],
)
def test_a_file_over_its_size_cap_is_refused_unread(tmp_path, kind, args, name, others):
    """A sparse file one byte over the kind's cap: refused from its size, never read into memory."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(kind.max_bytes + 1)
    run_case(tmp_path, Case(f"{kind.name}-too-large", args, (name, "more than the"), others))


def _score_json(tmp_path, ledger: bytes, detections: bytes, *extra: str) -> dict:
    (tmp_path / "l.csv").write_bytes(ledger)
    (tmp_path / "d.csv").write_bytes(detections)
    done = run_harness(tmp_path, *score(*extra), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_bom_is_no_part_of_the_first_label(tmp_path):
    figures = _score_json(tmp_path, b"\xef\xbb\xbfyes,1000,2000\n", DETECTIONS, "--duration-ms", "10000")
    assert (figures["hits"], figures["substitutions"], figures["events"]) == (1, 0, 1)


def test_a_header_is_still_a_header(tmp_path):
    figures = _score_json(
        tmp_path, b"\xef\xbb\xbflabel,start_ms,end_ms\nyes,1000,2000\n", DETECTIONS, "--duration-ms", "10000"
    )
    assert (figures["hits"], figures["events"]) == (1, 1)


def test_false_alarms_per_hour_count_the_frames_present_not_the_header(tmp_path):
    """5 s of audio whose header claims an hour: one false alarm is 720 an hour, not 1, and the lie is said."""
    (tmp_path / "a.wav").write_bytes(_claiming(_wav(5), 3600))
    alarms = b"label,time_ms,score,reference\nyes,1500,0.9,decision\nyes,4000,0.9,decision\n"
    figures = _score_json(tmp_path, LEDGER, alarms, "--audio", "a.wav")
    assert figures["duration_ms"] == 5000
    assert figures["false_alarms"] == 1 and figures["false_alarms_per_hour"] == pytest.approx(720)
    done = run_harness(tmp_path, *score("--audio", "a.wav"))
    assert "a.wav: its header declares 57600000 frames but it holds 80000" in done.stderr


def test_a_wakeword_in_the_ledger_is_scored(tmp_path):
    ledger = b"label,start_ms,end_ms\nyes,1000,2000\n"
    figures = _score_json(
        tmp_path, ledger, DETECTIONS, "--duration-ms", "10000", "--policy", "mlperf-sww", "--wakeword", "yes"
    )
    assert (figures["true_positives"], figures["false_positives"]) == (1, 0)


def test_two_logs_a_count_apart_are_one_log_with_missed_polls(tmp_path):
    (tmp_path / "log.csv").write_bytes(b"5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0002,2\n5,0.1,0.5,0.0005,3600\n")
    done = run_harness(tmp_path, "meter", "csv:log.csv", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["samples"] == 4  # the origin and three readings


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
@pytest.mark.parametrize("flag", ["--out", "--ledger"])
def test_stream_build_leaves_a_fifo_and_a_device_as_they_were(tmp_path, flag):
    """The issue's /dev/full: an --out naming a device node or a FIFO in a private folder is refused, not replaced."""
    private = tmp_path / "private"
    private.mkdir()
    os.mkfifo(private / "fifo")
    os.mknod(private / "full", 0o600 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's numbers
    (tmp_path / "clips" / "yes").mkdir(parents=True)
    (tmp_path / "clips" / "yes" / "a.wav").write_bytes(CLIP)
    for target in ("fifo", "full"):
        before = tree(tmp_path)
        args = (
            (*BUILD_COUNT, flag, f"private/{target}")
            if flag == "--ledger"
            else (*BUILD_COUNT[:5], f"private/{target}", *BUILD_COUNT[6:])
        )
        done = run_harness(tmp_path, *args)
        assert done.returncode == 2 and "pass a file to write" in done.stderr, done.stderr
        assert tree(tmp_path) == before
    assert stat.S_ISFIFO((private / "fifo").lstat().st_mode) and stat.S_ISCHR((private / "full").lstat().st_mode)

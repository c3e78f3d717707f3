"""Hostile inputs, one table: each case is a command, the files it is given and the words of its one-line refusal.

Every case is checked for its exit code (2, a usage error, unless the case says another), one line on stderr
holding every expected word, no traceback and no file left in the working folder beyond those the case made."""

import io
import json
import os
import struct
import subprocess
import wave
import zlib
from pathlib import Path

import numpy as np
import pytest

from harness.cli import exits
from tests.conftest import assert_refused_in_one_line, cli_commands
from tests.forked_cli import run_harness_command
from tests.hostile import FIFO, Case, make_files

LABEL_COLUMNS = (
    "filename,person,depiction,body_part,predominantly_female,predominantly_male,gender_unknown,young,"
    "middle_age,older,age_unknown,near,medium_distance,far,dark,normal_lighting,bright,person_depiction,"
    "non-person_depiction,non-person_non-depiction"
)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims width x height pixels (what a decompression bomb says before it is decoded)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _wav(channels: int = 1, seconds: float = 1.0, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.zeros(int(rate * seconds) * channels, "<i2").tobytes())
    return buffer.getvalue()


def _labels(*rows: str, bom: bool = False) -> bytes:
    text = LABEL_COLUMNS + "\n" + "".join(row + "\n" for row in rows)
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def _label_row(name: str, person: int = 1) -> str:
    flags = [person] + [0] * 18
    return ",".join([name, *map(str, flags)])


CASES = [
    Case(
        "labels-flag-out-of-range",
        ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("labels.csv line 3", "person is '2'", "b.png", "1 (yes), 0 (no) or -1 (unknown"),
        {"labels.csv": _labels(_label_row("a.png"), _label_row("b.png", 2)), "p.csv": b"filename,prediction\n"},
    ),
    Case(
        "eval-dataset-flag-out-of-range",
        ("eval", "--model", "wv_quality_k_2_c_3", "--dataset", "ds", "--results", "results"),
        ("line 2", "person is '2'", "1 (yes), 0 (no) or -1"),
        {"ds/labels.csv": _labels(_label_row("a.png", 2)), "ds/images/a.png": b""},
    ),
    Case(
        "dataset-build-annotations-lack-columns",
        ("dataset", "build", "--annotations", "ann", "--images", "img", "--out", "out"),
        ("bbox.csv lacks the columns LabelName", "ImageID,LabelName,XMin,XMax,YMin,YMax"),
        {
            "ann/class-descriptions.csv": b"/m/01g317,Person\n",
            "ann/bbox.csv": b"ImageID,Label,XMin,XMax,YMin,YMax\na,/m/01g317,0.1,0.9,0.1,0.9\n",
            "img/a.png": _png_header_only(4, 4),
        },
    ),
    Case(
        "map-nan-box",
        ("lpirc", "map", "--truth", "truth.csv", "--detections", "det.csv"),
        ("det.csv:2", "not a finite number"),
        {"truth.csv": b"1,1,1,10,10,20,20\n", "det.csv": b"1,1,0.9,10,10,20,20\n1,1,0.5,nan,10,20,20\n"},
    ),
    Case(
        "map-infinite-truth",
        ("lpirc", "map", "--truth", "truth.csv", "--detections", "det.csv"),
        ("truth.csv:1", "not a finite number"),
        {"truth.csv": b"1,1,1,10,10,inf,20\n", "det.csv": b"1,1,0.9,10,10,20,20\n"},
    ),
    Case(
        "labels-other-flag-out-of-range",
        ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("labels.csv line 2", "depiction is '5'", "or -1"),
        {"labels.csv": _labels("a.png,1,5" + ",0" * 17), "p.csv": b"filename,prediction\n"},
    ),
    Case(
        "score-prediction-for-unknown-file",
        ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("p.csv line 3", "zz.png is not in", "labels.csv"),
        {"labels.csv": _labels(_label_row("a.png")), "p.csv": b"filename,prediction\na.png,1\nzz.png,0\n"},
    ),
    Case(
        "score-nan",
        ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("p.csv line 2", "score 'nan'", "finite number"),
        {"labels.csv": _labels(_label_row("a.png")), "p.csv": b"filename,prediction,score\na.png,1,nan\n"},
    ),
    Case(
        "score-predictions-fifo",
        ("dataset", "score", "--labels", "labels.csv", "--predictions", "fifo"),
        ("predictions file fifo is a FIFO, not a regular file", "name a file"),
        {"labels.csv": _labels(_label_row("a.png")), "fifo": FIFO},
    ),
    Case(
        "stream-build-stereo-clip",
        ("stream", "build", "--clips", "clips", "--out", "s.wav", "--count", "1", "--duration-ms", "5000"),
        ("clips/yes/b.wav", "2 channel(s)", "16 kHz mono 16-bit"),
        {"clips/yes/a.wav": _wav(), "clips/yes/b.wav": _wav(channels=2)},
    ),
    Case(
        "meter-csv-wh-decreasing",
        ("meter", "csv:log.csv"),
        ("log.csv:3", "Wh falls from 0.0005 to 0.0001", "one uninterrupted integration"),
        {"log.csv": b"5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0005,2\n5,0.1,0.5,0.0001,3\n5,0.1,0.5,0.0002,4\n"},
    ),
    Case(
        "stream-with-image-card",
        ("stream", "run", "--model", "wv_quality_k_2_c_3", "--wav", "s.wav", "--results", "results"),
        ("wv_quality_k_2_c_3 is an image_classification card", "keyword spotting card", "--model"),
        {"s.wav": _wav(seconds=2.0)},
    ),
    Case(
        "perf-with-a-files-card-and-no-folder",
        ("perf", "--model", "mlperf_tiny_kws01", "--protocol", "eembc"),
        ("card mlperf_tiny_kws01 takes the runner's files", "--dataset", "y_labels.csv"),
    ),
    Case(
        "eval-sim-with-port",
        ("eval", "--board", "sim", "--port", "/dev/null", "--results", "results"),
        ("sim is a virtual board", "no port", "drop --port /dev/null"),
    ),
    Case(
        "flash-qemu-with-port",
        ("flash", "--board", "qemu_m4", "--port", "/dev/null"),
        ("qemu_m4 is an emulated board", "no port", "drop --port /dev/null"),
    ),
    Case(
        "eval-resume-empty",
        ("eval", "--resume", "", "--results", "results"),
        ("--resume needs the id of an unfinished run",),
    ),
    Case(
        "eval-resume-with-another-model",
        ("eval", "--resume", "RUN", "--model", "wv_quality_k_2_c_3", "--results", "results"),
        ("drop --model", "only --results, --json and --quiet"),
    ),
    Case(
        "eval-resume-with-limit",
        ("eval", "--resume", "RUN", "--limit", "3", "--results", "results"),
        ("drop --limit",),
    ),
    Case(
        "inspect-keras-h5",
        ("models", "inspect", "x.h5"),
        ("x.h5 is a Keras model", "harness models convert"),
        {"x.h5": b"\x89HDF\r\n\x1a\n"},
    ),
]


def c(
    case_id: str, expected: tuple[str, ...], *args: str, files: dict[str, object] | None = None, code=exits.USAGE
) -> None:
    """One more case for the table, written as the command line reads."""
    CASES.append(Case(case_id, args, expected, files or {}, code))


LAB = {"labels.csv": _labels(_label_row("a.png"))}
PRED = b"filename,prediction\na.png,1\n"
GATES_OK = b"[agreement]\nmin = 0.5\n"


def TOML(text: str) -> bytes:
    return text.encode()


# eval
c(
    "eval-unknown-board",
    ("unknown board 'nosuch'", "valid boards:", "nucleo_h743", "a board file's path"),
    "eval",
    "--board",
    "nosuch",
    "--results",
    "r",
)
c(
    "eval-unknown-subset",
    ("unknown subset nosuch", "valid subsets:", "distance_far"),
    "eval",
    "--subset",
    "nosuch",
    "--results",
    "r",
)
c(
    "eval-unknown-model",
    ("unknown model 'nosuch'", "valid models:", "wv_quality_k_2_c_3", "a path to a card .toml"),
    "eval",
    "--model",
    "nosuch",
    "--results",
    "r",
)
c("eval-limit-zero", ("--limit", "whole number of at least 1", "'0'"), "eval", "--limit", "0", "--results", "r")
c("eval-limit-negative", ("--limit", "whole number of at least 1", "'-3'"), "eval", "--limit", "-3", "--results", "r")
c("eval-limit-text", ("--limit", "whole number of at least 1", "'many'"), "eval", "--limit", "many", "--results", "r")
c(
    "eval-dataset-missing",
    ("dataset 'nowhere' not found", "pass 'demo'", "labels.csv and images/"),
    "eval",
    "--dataset",
    "nowhere",
    "--results",
    "r",
)
c(
    "eval-dataset-is-file",
    ("dataset 'd.txt' not found", "pass 'demo'"),
    "eval",
    "--dataset",
    "d.txt",
    "--results",
    "r",
    files={"d.txt": b"x"},
)
c(
    "eval-dataset-no-labels",
    ("dataset 'ds' not found", "labels.csv and images/"),
    "eval",
    "--model",
    "wv_quality_k_2_c_3",
    "--dataset",
    "ds",
    "--results",
    "r",
    files={"ds/images/a.png": b""},
)
c(
    "eval-labels-empty",
    ("ds/labels.csv lacks the Wake Vision columns", "filename, person"),
    "eval",
    "--model",
    "wv_quality_k_2_c_3",
    "--dataset",
    "ds",
    "--results",
    "r",
    files={"ds/labels.csv": b"", "ds/images/a.png": b""},
)
c(
    "eval-labels-header-only",
    ("dataset ds has no samples in all", "choose other subsets"),
    "eval",
    "--model",
    "wv_quality_k_2_c_3",
    "--dataset",
    "ds",
    "--results",
    "r",
    files={"ds/labels.csv": _labels(), "ds/images/a.png": b""},
)
c(
    "eval-labels-missing-image",
    ("1 files could not be read", "zz.png", "drop --strict"),
    "eval",
    "--model",
    "wv_quality_k_2_c_3",
    "--dataset",
    "ds",
    "--results",
    "r",
    "--strict",
    files={"ds/labels.csv": _labels(_label_row("zz.png")), "ds/images/a.png": b""},
)
c(
    "eval-model-file-missing",
    ("model file m.tflite does not exist", "check the path"),
    "eval",
    "--model-file",
    "m.tflite",
    "--results",
    "r",
)
c(
    "eval-model-file-not-tflite",
    ("m.tflite is not a TFLite model", "no TFL3 flatbuffer identifier", "pass a .tflite file"),
    "eval",
    "--model-file",
    "m.tflite",
    "--results",
    "r",
    files={"m.tflite": b"hello world" * 10},
)
c(
    "eval-model-file-empty",
    ("m.tflite is not a TFLite model", "pass a .tflite file"),
    "eval",
    "--model-file",
    "m.tflite",
    "--results",
    "r",
    files={"m.tflite": b""},
)
c(
    "eval-protocol-unknown",
    ("--protocol", "invalid choice: 'mqtt'", "'harness', 'eembc'"),
    "eval",
    "--protocol",
    "mqtt",
    "--results",
    "r",
)
c(
    "eval-link-baud-text",
    ("--link-baud", "expected a baud rate", "'fast'"),
    "eval",
    "--link-baud",
    "fast",
    "--results",
    "r",
)
c(
    "eval-baud-zero",
    ("--baud", "expected a baud rate: a whole number of at least 1", "'0'"),
    "eval",
    "--baud",
    "0",
    "--results",
    "r",
)
c(
    "eval-baud-text",
    ("--baud", "expected a baud rate", "'fast'"),
    "eval",
    "--protocol",
    "eembc",
    "--baud",
    "fast",
    "--results",
    "r",
)
c(
    "eval-baud-on-virtual",
    ("--baud sets a real board's serial rate", "sim (virtual board)", "drop it", "--link-baud"),
    "eval",
    "--baud",
    "9600",
    "--results",
    "r",
)
c(
    "link-test-baud-on-qemu",
    ("--baud sets a real board's serial rate", "qemu_m4 (emulated board)", "drop it"),
    "boards",
    "link-test",
    "--board",
    "qemu_m4",
    "--baud",
    "115200",
)
c(
    "eval-baud-forbidden",
    ("--baud 1200", "nano33ble's USB bridge takes as a command", "choose another"),
    "eval",
    "--board",
    "nano33ble",
    "--baud",
    "1200",
    "--results",
    "r",
)
c(
    "eval-switch-baud-negative",
    ("--switch-baud", "expected a baud rate", "'-1'"),
    "eval",
    "--switch-baud",
    "-1",
    "--results",
    "r",
)
c(
    "eval-emulate-invoke-negative",
    ("--emulate-invoke-ms", "milliseconds from 0", "'-5'"),
    "eval",
    "--emulate-invoke-ms",
    "-5",
    "--results",
    "r",
)
c(
    "eval-faults-unknown",
    ("--faults 'lose=0.1'", "name=value pairs among drop, corrupt, dup, reset-every"),
    "eval",
    "--faults",
    "lose=0.1",
    "--results",
    "r",
)
c(
    "eval-faults-rate-high",
    ("--faults", "drop=0.9 is out of range", "below 0.5"),
    "eval",
    "--faults",
    "drop=0.9",
    "--results",
    "r",
)
c("eval-faults-text", ("--faults", "drop=x is not a number"), "eval", "--faults", "drop=x", "--results", "r")
c(
    "eval-meter-unknown",
    ("unknown meter kind 'nosuch'", "kinds: wt310, joulescope, ppk2, csv"),
    "eval",
    "--meter",
    "nosuch:x",
    "--results",
    "r",
)
c(
    "eval-meter-csv-missing",
    ("--meter csv:", "replays an old log", "use a live meter"),
    "eval",
    "--meter",
    "csv:nowhere.csv",
    "--results",
    "r",
)
c("eval-shuffle-text", ("--shuffle", "expected a seed", "'abc'"), "eval", "--shuffle", "abc", "--results", "r")
c("eval-split-unknown", ("unknown split nosuch", "has: test"), "eval", "--split", "nosuch", "--results", "r")
c(
    "eval-results-is-file",
    ("r.txt is a regular file, not a folder", "pass a writable --results"),
    "eval",
    "--results",
    "r.txt",
    files={"r.txt": b"x"},
)
c(
    "eval-resume-unknown",
    ("no unfinished run 20990101T000000Z-x in r", "harness runs --results r"),
    "eval",
    "--resume",
    "20990101T000000Z-x",
    "--results",
    "r",
    files={"r/.keep": b""},
)
c(
    "eval-resume-with-board",
    ("--resume RUN continues the run with the settings it started with", "drop --board"),
    "eval",
    "--resume",
    "RUN",
    "--board",
    "qemu_m4",
    "--results",
    "r",
)
c(
    "eval-real-board-no-port",
    ("no nucleo_h743 found on USB", "0483:374B", "connect it or pass --port"),
    "eval",
    "--board",
    "nucleo_h743",
    "--results",
    "r",
    code=exits.DEVICE_NOT_FOUND,
)
c(
    "eval-references-missing",
    ("--references", "unknown reference nowhere.parquet", "valid: tflm, litert_ref, litert"),
    "eval",
    "--references",
    "nowhere.parquet",
    "--results",
    "r",
)
c(
    "eval-tflm-missing",
    ("nowhere is not a TFLM tree", "create_tflm_tree.py"),
    "eval",
    "--board",
    "qemu_m4",
    "--tflm",
    "nowhere",
    "--results",
    "r",
)
c(
    "eval-port-missing-tty",
    ("cannot open link '/dev/ttyNOSUCH9'", "No such file or directory", "check the port"),
    "eval",
    "--board",
    "nucleo_h743",
    "--port",
    "/dev/ttyNOSUCH9",
    "--results",
    "r",
    code=exits.DEVICE_NOT_FOUND,
)
c(
    "eval-port-devnull",
    ("cannot open link '/dev/null'", "check the port or pass --port"),
    "eval",
    "--board",
    "nucleo_h743",
    "--port",
    "/dev/null",
    "--results",
    "r",
    code=exits.DEVICE_NOT_FOUND,
)
c(
    "eval-port-closed-socket",
    ("cannot open link 'socket://127.0.0.1:1'", "Connection refused", "check the port"),
    "eval",
    "--board",
    "nucleo_h743",
    "--port",
    "socket://127.0.0.1:1",
    "--results",
    "r",
    code=exits.DEVICE_NOT_FOUND,
)
c(
    "eval-port-bad-url",
    ("cannot open link 'nosuch://x'", "protocol 'nosuch' not known", "check the port"),
    "eval",
    "--board",
    "nucleo_h743",
    "--port",
    "nosuch://x",
    "--results",
    "r",
)
c(
    "eval-board-file-unknown-field",
    ("board file b.toml", "unknown field 'baudrat'", "valid here", "docs/boards.md"),
    "eval",
    "--board",
    "b.toml",
    "--results",
    "r",
    files={"b.toml": TOML('id="mine"\nkind="virtual"\nbaudrat=1\n')},
)
c(
    "eval-board-file-bad-toml",
    ("board file b.toml is not valid TOML", "line 1"),
    "eval",
    "--board",
    "b.toml",
    "--results",
    "r",
    files={"b.toml": b"id = = 3\n"},
)
c(
    "eval-labgrid-on-sim",
    ("--labgrid-place needs a real board", "not sim (virtual)"),
    "eval",
    "--labgrid-place",
    "p1",
    "--results",
    "r",
)
c(
    "eval-boards-on-a-real-board",
    ("--boards 2 starts boards harness runs itself", "nucleo_h743 is a real board", "--port A,B", "--labgrid-tags"),
    *("eval", "--board", "nucleo_h743", "--boards", "2", "--results", "r"),
)
c("eval-boards-zero", ("--boards", "whole number of at least 1", "'0'"), "eval", "--boards", "0", "--results", "r")
c(
    "eval-port-named-twice",
    ("--port names a board twice", "name each board once"),
    *("eval", "--board", "nucleo_h743", "--port", "/dev/ttyX0,/dev/ttyX0", "--results", "r"),
)
c(
    "eval-ports-and-serials",
    ("name several boards one way", "--port or --serial"),
    *("eval", "--board", "nucleo_h743", "--port", "/dev/ttyX0,/dev/ttyX1", "--serial", "A,B", "--results", "r"),
)
c(
    "eval-boards-and-ports-disagree",
    ("--boards 3 with 2 boards named by --port", "drop --boards"),
    *("eval", "--board", "nucleo_h743", "--port", "/dev/ttyX0,/dev/ttyX1", "--boards", "3", "--results", "r"),
)
c("eval-tags-no-value", ("--labgrid-tags", "key=value", "'board'"), "eval", "--labgrid-tags", "board", "--results", "r")
c(
    "eval-tags-on-sim",
    ("--labgrid-tags needs a real board", "not sim (virtual)"),
    *("eval", "--labgrid-tags", "board=x", "--results", "r"),
)
c(
    "eval-tags-and-place",
    ("--labgrid-tags reserves the places itself", "drop --labgrid-place"),
    *("eval", "--board", "nucleo_h743", "--labgrid-tags", "board=x", "--labgrid-place", "p1", "--results", "r"),
)
c(
    "eval-meter-on-several-boards",
    ("--meter measures one board", "run each board alone"),
    *("eval", "--boards", "2", "--meter", "sim:0.5", "--results", "r"),
)
c(
    "eval-eembc-with-faults",
    ("--protocol eembc", "no resends", "--faults needs harness firmware"),
    "eval",
    "--protocol",
    "eembc",
    "--faults",
    "drop=1e-3",
    "--results",
    "r",
)
c(
    "eval-qemu-with-faults",
    ("--faults works with the virtual board and real boards", "not QEMU boards"),
    "eval",
    "--board",
    "qemu_m4",
    "--faults",
    "drop=1e-3",
    "--results",
    "r",
)
c(
    "eval-emulate-on-real",
    ("--link-baud and --emulate-invoke-ms emulate a link on the virtual board", "use --board sim"),
    "eval",
    "--board",
    "nucleo_h743",
    "--emulate-invoke-ms",
    "5",
    "--results",
    "r",
)
# flash/build/generate
c("flash-no-board", ("the following arguments are required: --board", "harness flash --help"), "flash")
c("flash-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "flash", "--board", "nosuch")
c(
    "flash-model-unknown",
    ("unknown model 'nosuch'", "valid models:"),
    "flash",
    "--board",
    "nucleo_h743",
    "--model",
    "nosuch",
)
c(
    "flash-tflm-missing",
    ("nowhere is not a TFLM tree", "create_tflm_tree.py"),
    "flash",
    "--board",
    "nucleo_h743",
    "--tflm",
    "nowhere",
)
c(
    "flash-eembc-mode-without-eembc",
    ("--eembc-mode energy is for DUT firmware", "add --protocol eembc"),
    *("flash", "--board", "qemu_m4", "--eembc-mode", "energy"),
)
c(
    "flash-qemu-energy-mode",
    ("--eembc-mode energy builds firmware that pulses a timestamp pin", "qemu_m4", "drop --eembc-mode"),
    *("flash", "--board", "qemu_m4", "--protocol", "eembc", "--eembc-mode", "energy"),
)
c("build-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "firmware", "build", "--board", "nosuch")
c(
    "build-sim",
    ("sim is not a PlatformIO board", "valid: ", "esp32dev, nano33ble, nucleo_h743"),
    "firmware",
    "build",
    "--board",
    "sim",
)
c(
    "build-model-file-bad",
    ("m.tflite is not a TFLite model", "pass a .tflite file"),
    "firmware",
    "build",
    "--board",
    "nucleo_h743",
    "--model-file",
    "m.tflite",
    files={"m.tflite": b"junk"},
)
c("generate-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "firmware", "generate", "--board", "nosuch")
c(
    "generate-model-file-missing",
    ("model file nowhere.tflite does not exist", "check the path"),
    "firmware",
    "generate",
    "--board",
    "nucleo_h743",
    "--model-file",
    "nowhere.tflite",
)
c(
    "generate-tflm-not-a-tree",
    ("t is not a TFLM tree", "micro_interpreter.h", "create_tflm_tree.py"),
    "firmware",
    "generate",
    "--board",
    "nucleo_h743",
    "--tflm",
    "t",
    files={"t/readme": b"x"},
)
# farm release
c("farm-release-empty-place", ("argument place", "the value is empty"), "farm", "release", "")
# link-test
c("link-test-bytes-zero", ("--bytes", "whole number of at least 1", "'0'"), "boards", "link-test", "--bytes", "0")
c("link-test-bytes-text", ("--bytes", "whole number of at least 1", "'lots'"), "boards", "link-test", "--bytes", "lots")
c("link-test-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "boards", "link-test", "--board", "nosuch")
c(
    "link-test-closed-socket",
    ("cannot open link 'socket://127.0.0.1:1'", "Connection refused", "check the port"),
    "boards",
    "link-test",
    "--board",
    "nucleo_h743",
    "--port",
    "socket://127.0.0.1:1",
    code=exits.DEVICE_NOT_FOUND,
)
c("link-test-faults-bad", ("--faults 'drop'", "name=value pairs"), "boards", "link-test", "--faults", "drop")
# perf/profile
c("perf-runs-zero", ("--runs", "whole number of at least 1", "'0'"), "perf", "--runs", "0")
c("perf-warmups-negative", ("--warmups", "whole number of at least 0", "'-1'"), "perf", "--warmups", "-1")
c("perf-unknown-model", ("unknown model 'nosuch'", "valid models:"), "perf", "--model", "nosuch")
c(
    "perf-dataset-missing",
    ("dataset 'nowhere' not found", "pass 'demo'"),
    "perf",
    "--model",
    "wv_quality_k_2_c_3",
    "--dataset",
    "nowhere",
)
c("profile-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "profile", "--board", "nosuch")
c(
    "profile-eembc",
    ("--protocol eembc", "times whole inferences, not", "harness firmware"),
    "profile",
    "--protocol",
    "eembc",
)
c(
    "profile-model-file-missing",
    ("model file nowhere.tflite does not exist", "check the path"),
    "profile",
    "--model-file",
    "nowhere.tflite",
)
# debug layers / float-vs-int8
c(
    "debug-layers-unknown-sample",
    ("has no sample 'nosuch.jpg'", "--sample", "its file name"),
    "debug",
    "layers",
    "--model",
    "wv_quality_k_2_c_3",
    "--sample",
    "nosuch.jpg",
)
c(
    "debug-layers-model-file-fifo",
    ("model file m.tflite is a FIFO", "regular file"),
    "debug",
    "layers",
    "--model-file",
    "m.tflite",
    files={"m.tflite": FIFO},
)
c("debug-layers-fetch-negative", ("--fetch-bytes", "at least 0", "'-1'"), "debug", "layers", "--fetch-bytes", "-1")
c(
    "debug-layers-eembc",
    ("unrecognized arguments: --protocol eembc",),
    "debug",
    "layers",
    "--protocol",
    "eembc",
)
c(
    "debug-float-vs-int8-int8-card",
    ("card wv_quality_k_2_c_3 has no float source", "--float-model"),
    "debug",
    "float-vs-int8",
    "--model",
    "wv_quality_k_2_c_3",
)
c(
    "debug-float-vs-int8-float-model-fifo",
    ("float model file f.tflite is a FIFO", "regular file"),
    "debug",
    "float-vs-int8",
    "--model",
    "mlperf_tiny_vww_float",
    "--float-model",
    "f.tflite",
    files={"f.tflite": FIFO},
)
c(
    "debug-float-vs-int8-samples-zero",
    ("--samples", "at least 1", "'0'"),
    "debug",
    "float-vs-int8",
    "--model",
    "mlperf_tiny_vww_float",
    "--samples",
    "0",
)
c("eval-trace-layers-negative", ("--trace-layers", "at least 0", "'-1'"), "eval", "--trace-layers", "-1")
# runs/report/compare/check
c(
    "runs-results-missing",
    ("results folder nowhere does not exist", "--results"),
    "runs",
    "list",
    "--results",
    "nowhere",
)
c(
    "report-unknown-run",
    ("nosuch is not a run folder", "manifest.json and summary.json missing", "harness runs"),
    "runs",
    "report",
    "nosuch",
    "--results",
    "r",
    files={"r/.keep": b""},
)
c("report-results-missing", ("x is not a run folder", "harness runs"), "runs", "report", "x", "--results", "nowhere")
c(
    "compare-unknown-runs",
    ("a is not a run folder", "manifest.json and summary.json missing"),
    "runs",
    "compare",
    "a",
    "b",
    "--results",
    "r",
    files={"r/.keep": b""},
)
c(
    "compare-tolerance-negative",
    ("--latency-tolerance", "relative change of at least 0", "'-1'"),
    "runs",
    "compare",
    "a",
    "b",
    "--latency-tolerance",
    "-1",
)
c(
    "check-unknown-run",
    ("nosuch is not a run folder", "harness runs"),
    "runs",
    "check",
    "nosuch",
    "--gates",
    "g.toml",
    "--results",
    "r",
    files={"r/.keep": b"", "g.toml": GATES_OK},
)
# convert
c(
    "convert-card-unknown",
    ("unknown model 'nosuch'", "valid models:"),
    "models",
    "convert",
    "--card",
    "nosuch",
    "--out",
    "o.tflite",
)
c(
    "convert-model-missing",
    ("model nowhere.h5 does not exist", "pass a .keras or .h5 file or a SavedModel folder"),
    "models",
    "convert",
    "--card",
    "wv_quality_k_2_c_3",
    "--model",
    "nowhere.h5",
    "--out",
    "o.tflite",
)
c(
    "convert-samples-zero",
    ("--samples", "whole number of at least 1", "'0'"),
    "models",
    "convert",
    "--card",
    "wv_quality_k_2_c_3",
    "--samples",
    "0",
    "--out",
    "o.tflite",
)
c(
    "convert-io-unknown",
    ("--io float64 is unknown", "int8, uint8, float32"),
    "models",
    "convert",
    "--card",
    "wv_quality_k_2_c_3",
    "--io",
    "float64",
    "--out",
    "o.tflite",
)
c(
    "convert-model-not-keras",
    ("m.h5 cannot be loaded by Keras 3 or tf-keras", "pass a .keras or .h5 model"),
    "models",
    "convert",
    "--card",
    "wv_quality_k_2_c_3",
    "--model",
    "m.h5",
    "--out",
    "o.tflite",
    files={"m.h5": b"junk"},
)
# inspect
c(
    "inspect-missing",
    ("model file nowhere.tflite does not exist", "check the path"),
    "models",
    "inspect",
    "nowhere.tflite",
)
c(
    "inspect-not-tflite",
    ("m.tflite is not a TFLite model", "pass a .tflite file"),
    "models",
    "inspect",
    "m.tflite",
    files={"m.tflite": b"junk" * 20},
)
c(
    "inspect-empty",
    ("m.tflite is not a TFLite model", "pass a .tflite file"),
    "models",
    "inspect",
    "m.tflite",
    files={"m.tflite": b""},
)
c(
    "inspect-folder",
    ("d is a directory", "pass a .tflite file or a model card"),
    "models",
    "inspect",
    "d",
    files={"d/x": b""},
)
c(
    "inspect-unknown-board",
    ("unknown board 'nosuch'", "valid boards:"),
    "models",
    "inspect",
    "wv_quality_k_2_c_3",
    "--board",
    "nosuch",
)
c(
    "inspect-onnx",
    ("m.onnx is not a TFLite model", "pass a .tflite file"),
    "models",
    "inspect",
    "m.onnx",
    files={"m.onnx": b"\x08\x07\x12\x04junk"},
)
c(
    "inspect-saved-model",
    ("sm is a Keras model", "harness models convert --card CARD"),
    "models",
    "inspect",
    "sm",
    files={"sm/saved_model.pb": b"junk"},
)
# score
c(
    "score-labels-missing",
    ("labels file nowhere.csv does not exist", "check the path"),
    "dataset",
    "score",
    "--labels",
    "nowhere.csv",
    "--predictions",
    "p.csv",
    files={"p.csv": PRED},
)
c(
    "score-predictions-missing",
    ("cannot read predictions nowhere.csv", "No such file or directory"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "nowhere.csv",
    files=LAB,
)
c(
    "score-predictions-no-header",
    ("p.csv needs the columns filename,prediction", "optionally score"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={**LAB, "p.csv": b""},
)
c(
    "score-predictions-lack-column",
    ("p.csv needs the columns filename,prediction",),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={**LAB, "p.csv": b"file,pred\na.png,1\n"},
)
c(
    "score-prediction-not-binary",
    ("p.csv line 2", "prediction '7' for a.png is not 0 or 1"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={**LAB, "p.csv": b"filename,prediction\na.png,7\n"},
)
c(
    "score-prediction-text",
    ("p.csv line 2", "prediction 'yes' for a.png is not 0 or 1"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={**LAB, "p.csv": b"filename,prediction\na.png,yes\n"},
)
c(
    "score-duplicate-prediction",
    ("p.csv line 3", "a.png was predicted already on line 2", "give each filename once"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={**LAB, "p.csv": b"filename,prediction\na.png,1\na.png,0\n"},
)
c(
    "score-labels-lack-columns",
    ("labels.csv lacks the Wake Vision columns", "depiction, body_part"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={"labels.csv": b"filename,person\na.png,1\n", "p.csv": PRED},
)
c(
    "score-labels-fifo",
    ("labels file fifo is a FIFO, not a regular file", "name a file"),
    "dataset",
    "score",
    "--labels",
    "fifo",
    "--predictions",
    "p.csv",
    files={"fifo": FIFO, "p.csv": PRED},
)
c(
    "score-labels-binary",
    ("labels.csv is not UTF-8 text", "save it as UTF-8"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={"labels.csv": bytes(range(256)) * 4, "p.csv": PRED},
)
c(
    "score-subset-unknown",
    ("unknown subset nosuch", "valid subsets:"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    "--subset",
    "nosuch",
    files={**LAB, "p.csv": PRED},
)
c(
    "score-labels-duplicate",
    ("labels.csv line 3", "a.png is listed again (first on line 2)", "keep one row per file"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={"labels.csv": _labels(_label_row("a.png"), _label_row("a.png")), "p.csv": PRED},
)
c(
    "score-labels-short-row",
    ("labels.csv line 2", "3 fields where the header has 20", "fix that row"),
    "dataset",
    "score",
    "--labels",
    "labels.csv",
    "--predictions",
    "p.csv",
    files={"labels.csv": _labels("a.png,1,0"), "p.csv": PRED},
)
# dataset build
c(
    "dataset-build-annotations-missing",
    ("nowhere has no *class-descriptions*.csv", "add Open Images' file"),
    "dataset",
    "build",
    "--annotations",
    "nowhere",
    "--images",
    "img",
    "--out",
    "out",
    files={"img/a.png": b""},
)
c(
    "dataset-build-images-missing",
    ("image folder nowhere does not exist",),
    "dataset",
    "build",
    "--annotations",
    "ann",
    "--images",
    "nowhere",
    "--out",
    "out",
    files={"ann/bbox.csv": b"x"},
)
c(
    "dataset-build-no-class-descriptions",
    ("ann has no *class-descriptions*.csv", "add Open Images' file"),
    "dataset",
    "build",
    "--annotations",
    "ann",
    "--images",
    "img",
    "--out",
    "out",
    files={"ann/bbox.csv": b"ImageID,LabelName,XMin,XMax,YMin,YMax\n", "img/a.png": b"", "out/x": b""},
)
c(
    "dataset-build-box-not-number",
    ("ann/bbox.csv line 2", "XMin is 'x', not a coordinate from 0 to 1", "fix that row"),
    "dataset",
    "build",
    "--annotations",
    "ann",
    "--images",
    "img",
    "--out",
    "out",
    files={
        "ann/class-descriptions.csv": b"/m/01g317,Person\n",
        "ann/bbox.csv": b"ImageID,LabelName,XMin,XMax,YMin,YMax\na,/m/01g317,x,0.9,0.1,0.9\n",
        "img/a.png": _png_header_only(4, 4),
    },
)
c("dataset-unknown-subcommand", ("invalid choice: 'nosuch'", "harness dataset --help"), "dataset", "nosuch")
# cache
c("cache-prune-what", ("say what to prune: --older-than DAYS", "--all"), "cache", "prune")
c("cache-list-prune-flag", ("unrecognized arguments: --all",), "cache", "list", "--all")
c("models-list-extra-arg", ("unrecognized arguments: nosuch",), "models", "list", "nosuch")
c("tflm-list-extra-arg", ("unrecognized arguments: --board nucleo_h743",), "tflm", "list", "--board", "nucleo_h743")
c("cache-prune-negative-days", ("--older-than", "at least 0"), "cache", "prune", "--older-than", "-3")
c("cache-unknown-action", ("invalid choice: 'clear'", "'list', 'prune'"), "cache", "clear")
# models
c("models-pull-unknown", ("unknown model 'nosuch'", "valid models:"), "models", "pull", "nosuch")
c("models-pull-no-name", ("the following arguments are required: name", "harness models pull --help"), "models", "pull")
c("models-unknown-action", ("invalid choice: 'delete'", "'list', 'pull'"), "models", "delete", "x")
# stream-score
c(
    "stream-score-ledger-missing",
    ("cannot read ledger nowhere.csv", "No such file or directory"),
    "stream",
    "score",
    "--ledger",
    "nowhere.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "1000",
    files={"d.csv": b"1,yes\n"},
)
c(
    "stream-score-detections-missing",
    ("cannot read detections nowhere.csv", "No such file or directory"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "nowhere.csv",
    "--duration-ms",
    "1000",
    files={"l.csv": b"yes,100,200\n"},
)
c(
    "stream-score-tolerance-negative",
    ("--tolerance-ms", "milliseconds of at least 0", "'-1'"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--tolerance-ms",
    "-1",
    "--duration-ms",
    "1000",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-duration-zero",
    ("--duration-ms", "whole number of at least 1", "'0'"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "0",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-ledger-garbage",
    ("ledger l.csv line 1", "expected label,start_ms[,end_ms]"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "1000",
    files={"l.csv": b"\x00\x01\x02garbage\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-ledger-end-before-start",
    ("ledger l.csv line 1", "yes ends (200 ms) before it starts (300 ms)"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "1000",
    files={"l.csv": b"yes,300,200\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-tf-compat-quoted-label",
    ("ledger l.csv line 1", "TF's reader keeps the quotes in the label '\"yes\"'", "write yes unquoted"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "1000",
    "--policy",
    "tf-compat",
    files={"l.csv": b'"yes",100\n', "d.csv": b"label,time_ms,score,reference\n"},
)
c(
    "stream-score-detections-without-header",
    ("detections d.csv needs the columns label,time_ms,score,reference",),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--duration-ms",
    "1000",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"nan,yes\n"},
)
c(
    "stream-score-audio-missing",
    ("cannot read nowhere.wav as a WAV file", "No such file or directory"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--audio",
    "nowhere.wav",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-no-duration",
    ("declare the exposure the rates divide by", "--audio W.wav or --duration-ms N"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"1,yes\n"},
)
c(
    "stream-score-policy-unknown",
    ("--policy", "invalid choice: 'best'", "'optimal', 'tf-compat', 'mlperf-sww'"),
    "stream",
    "score",
    "--ledger",
    "l.csv",
    "--detections",
    "d.csv",
    "--policy",
    "best",
    files={"l.csv": b"yes,100,200\n", "d.csv": b"1,yes\n"},
)
# stream
c(
    "stream-wav-missing",
    ("audio file nowhere.wav does not exist", "pass a 16-bit mono WAV"),
    "stream",
    "run",
    "--model",
    "tflm_micro_speech",
    "--wav",
    "nowhere.wav",
    "--results",
    "r",
)
c(
    "stream-wav-not-wav",
    ("s.wav: not a readable WAV file", "convert it (e.g. sox"),
    "stream",
    "run",
    "--model",
    "tflm_micro_speech",
    "--wav",
    "s.wav",
    "--results",
    "r",
    files={"s.wav": b"junk" * 100},
)
c(
    "stream-wav-stereo",
    ("s.wav: 2 channel(s), 16-bit, 16000 Hz", "needs mono 16-bit at 16000 Hz"),
    "stream",
    "run",
    "--model",
    "tflm_micro_speech",
    "--wav",
    "s.wav",
    "--results",
    "r",
    files={"s.wav": _wav(channels=2)},
)
c(
    "stream-wav-8khz",
    ("s.wav: 1 channel(s), 16-bit, 8000 Hz", "needs mono 16-bit at 16000 Hz"),
    "stream",
    "run",
    "--model",
    "tflm_micro_speech",
    "--wav",
    "s.wav",
    "--results",
    "r",
    files={"s.wav": _wav(rate=8000)},
)
c(
    "stream-no-wav",
    ("the following arguments are required: --wav", "harness stream run --help"),
    "stream",
    "run",
    "--model",
    "tflm_micro_speech",
    "--results",
    "r",
)
c(
    "stream-build-clips-missing",
    ("clip folder nowhere does not exist",),
    "stream",
    "build",
    "--clips",
    "nowhere",
    "--out",
    "s.wav",
    "--count",
    "1",
    "--duration-ms",
    "5000",
)
c(
    "stream-build-count-zero",
    ("--count", "whole number of at least 1", "'0'"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--count",
    "0",
    files={"clips/yes/a.wav": _wav()},
)
c(
    "stream-build-no-clips",
    ("no .wav clips in clips", "a folder per label"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--count",
    "1",
    "--duration-ms",
    "5000",
    files={"clips/readme.txt": b"x"},
)
c(
    "stream-build-clip-not-wav",
    ("cannot read clips/yes/a.wav as a WAV file", "replace it or move it out of the folder"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--count",
    "1",
    files={"clips/yes/a.wav": b"junk"},
)
c(
    "stream-build-snr-text",
    ("--snr-db", "decibels from -200 to 200", "'loud'"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--snr-db",
    "loud",
    files={"clips/yes/a.wav": _wav()},
)
c(
    "stream-build-out-is-dir",
    ("o is a folder", "pass a file to write as --out STREAM.wav"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "o",
    "--count",
    "1",
    "--duration-ms",
    "5000",
    files={"clips/yes/a.wav": _wav(), "o/x": b""},
)
c(
    "stream-build-too-short",
    ("10 clips with --min-gap-ms 1000 need a stream of at least 21000 ms", "lengthen --duration-ms or lower --count"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--count",
    "10",
    "--duration-ms",
    "1000",
    files={"clips/yes/a.wav": _wav()},
)
c(
    "stream-build-background-missing",
    ("cannot read nowhere.wav as a WAV file", "No such file or directory"),
    "stream",
    "build",
    "--clips",
    "clips",
    "--out",
    "s.wav",
    "--count",
    "1",
    "--duration-ms",
    "5000",
    "--background",
    "nowhere.wav",
    files={"clips/yes/a.wav": _wav()},
)
# map
c(
    "map-truth-missing",
    ("cannot read boxes from nowhere.csv", "pass an existing CSV"),
    "lpirc",
    "map",
    "--truth",
    "nowhere.csv",
    "--detections",
    "d.csv",
    files={"d.csv": b"1,1,0.9,10,10,20,20\n"},
)
c(
    "map-detections-missing",
    ("cannot read boxes from nowhere.csv", "pass an existing CSV"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "nowhere.csv",
    files={"t.csv": b"1,1,1,10,10,20,20\n"},
)
c(
    "map-short-row",
    ("d.csv:1", "expected 7 numbers (image, class, confidence, xmin, ymin, xmax, ymax)", "'1,1,0.9'"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "d.csv",
    files={"t.csv": b"1,1,1,10,10,20,20\n", "d.csv": b"1,1,0.9\n"},
)
c(
    "map-text-field",
    ("d.csv:1", "expected 7 numbers", "'1,1,high,10,10,20,20'"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "d.csv",
    files={"t.csv": b"1,1,1,10,10,20,20\n", "d.csv": b"1,1,high,10,10,20,20\n"},
)
c(
    "map-iou-out-of-range",
    ("--iou '1.5'", "neither 'ilsvrc' nor a number in (0, 1]"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "d.csv",
    "--iou",
    "1.5",
    files={"t.csv": b"1,1,1,10,10,20,20\n", "d.csv": b"1,1,0.9,10,10,20,20\n"},
)
c(
    "map-empty-truth",
    ("t.csv holds no ground-truth boxes", "pass the golden file"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "d.csv",
    files={"t.csv": b"", "d.csv": b"1,1,0.9,10,10,20,20\n"},
)
c(
    "map-inf-detection",
    ("d.csv:1", "not a finite number", "fix that row"),
    "lpirc",
    "map",
    "--truth",
    "t.csv",
    "--detections",
    "d.csv",
    files={"t.csv": b"1,1,1,10,10,20,20\n", "d.csv": b"1,1,inf,10,10,20,20\n"},
)
# meter
c("meter-unknown-kind", ("unknown meter kind 'nosuch'", "kinds: wt310, joulescope, ppk2, csv"), "meter", "nosuch:x")
c("meter-csv-missing", ("cannot read meter log nowhere.csv", "pass an existing CSV file"), "meter", "csv:nowhere.csv")
c(
    "meter-csv-empty",
    ("log.csv holds fewer than two meter readings", "V,I,W,Wh,count"),
    "meter",
    "csv:log.csv",
    files={"log.csv": b""},
)
c(
    "meter-csv-text",
    ("log.csv:1", "expected 5 numbers (V, I, W, Wh, sample count)", "'volts,amps'"),
    "meter",
    "csv:log.csv",
    files={"log.csv": b"volts,amps\nfive,one\n"},
)
c(
    "meter-csv-nan",
    ("log.csv:1", "a reading is not a finite number", "fix or drop that row"),
    "meter",
    "csv:log.csv",
    files={"log.csv": b"5,0.1,nan,0.0001,1\n5,0.1,0.5,0.0002,2\n"},
)
c(
    "meter-seconds-negative",
    ("--seconds", "seconds above 0", "'-1'"),
    "meter",
    "csv:log.csv",
    "--seconds",
    "-1",
    files={"log.csv": b"5,0.1,0.5,0.0001,1\n"},
)
c(
    "meter-kind-um34c",
    ("unknown meter kind 'um34c'", "kinds: wt310, joulescope, ppk2, csv"),
    "meter",
    "um34c:/dev/ttyNOSUCH9",
)
c(
    "meter-wt310-missing-port",
    ("cannot open VISA resource '/dev/ttyNOSUCH9'", "give e.g. wt310:USB0::"),
    "meter",
    "wt310:/dev/ttyNOSUCH9",
)
c("meter-no-colon", ("--meter 'csv' is not KIND:ADDRESS", "kinds: wt310"), "meter", "csv")
# referee
c("referee-dataset-missing", ("dataset 'nowhere' not found", "pass 'demo'"), "lpirc", "referee", "--dataset", "nowhere")
c(
    "referee-port-text",
    ("--port", "port number 0..65535", "'http'"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--port",
    "http",
)
c(
    "referee-port-out-of-range",
    ("--port", "port number 0..65535", "'70000'"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--port",
    "70000",
)
c(
    "referee-limit-zero",
    ("--limit", "whole number of at least 1", "'0'"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--limit",
    "0",
)
c(
    "referee-time-limit-negative",
    ("--time-limit", "seconds above 0", "'-1'"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--time-limit",
    "-1",
)
c(
    "referee-remote-without-password",
    ("refusing to serve images on 0.0.0.0", "--allow-remote and --password"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--host",
    "0.0.0.0",
)
c(
    "referee-meter-unknown",
    ("unknown meter kind 'nosuch'", "kinds: wt310"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--meter",
    "nosuch:x",
)
c(
    "referee-subset-unknown",
    ("unknown subset nosuch", "valid subsets:"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--subset",
    "nosuch",
)
c(
    "referee-host-unresolvable",
    ("--host 'no.such.host.invalid' is not an IP address", "127.0.0.1 or 0.0.0.0"),
    "lpirc",
    "referee",
    "--dataset",
    "demo",
    "--host",
    "no.such.host.invalid",
    "--allow-remote",
    "--password",
    "p",
)
# lpirc-score
c(
    "lpirc-score-unknown-run",
    ("nosuch is not a run folder or run id under r, r/referee", "harness runs"),
    "lpirc",
    "score",
    "nosuch",
    "--results",
    "r",
    files={"r/.keep": b""},
)
c(
    "lpirc-score-results-missing",
    ("x is not a run folder or run id under nowhere, nowhere/referee", "harness runs"),
    "lpirc",
    "score",
    "x",
    "--results",
    "nowhere",
)
# tflm
c(
    "tflm-no-action",
    ("the following arguments are required: {list,prepare,remove,sources}", "harness tflm --help"),
    "tflm",
)
c("tflm-prepare-unknown-board", ("unknown board 'nosuch'", "valid boards:"), "tflm", "prepare", "--board", "nosuch")
c("tflm-remove-unknown", ("'nosuch' names 0 cached trees", "cached: none"), "tflm", "remove", "nosuch")
c("tflm-sources-unknown", ("unrecognized arguments: --board nosuch",), "tflm", "sources", "--board", "nosuch")
# misc listing commands with bad flags
c("boards-unknown-flag", ("unrecognized arguments: --color",), "boards", "list", "--color")
c("datasets-extra-arg", ("unrecognized arguments: extra",), "dataset", "list", "extra")
c("subsets-extra-arg", ("unrecognized arguments: nosuch",), "dataset", "subsets", "nosuch")
c("unknown-command", ("invalid choice: 'evaluate'", "'eval'"), "evaluate")

# An empty --results is refused by every command taking one (it would be the working folder), through one check.
EMPTY_RESULTS = ("argument --results", "the value is empty")
c(
    "stream-run-results-empty",
    EMPTY_RESULTS,
    "stream",
    "run",
    "--wav",
    "s.wav",
    "--results",
    "",
    files={"s.wav": _wav()},
)
c("referee-results-empty", EMPTY_RESULTS, "lpirc", "referee", "--dataset", "demo", "--results", "")
c("lpirc-score-results-empty", EMPTY_RESULTS, "lpirc", "score", "RUN", "--results", "")
c("runs-list-results-empty", EMPTY_RESULTS, "runs", "list", "--results", "")
c("runs-report-results-empty", EMPTY_RESULTS, "runs", "report", "RUN", "--out", "r.html", "--results", "")
c("runs-compare-results-empty", EMPTY_RESULTS, "runs", "compare", "A", "B", "--results", "")
c("eval-results-blank", EMPTY_RESULTS, "eval", "--results", "  ")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _harness(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_harness_command([*args], cwd=cwd, env=os.environ.copy(), timeout=timeout)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input_is_refused_in_one_line(tmp_path, small_model, case):
    make_files(tmp_path, case.files)
    before = _tree(tmp_path)
    done = _harness(tmp_path, *case.args)
    assert_refused_in_one_line(done, *case.expected, code=case.code)
    assert _tree(tmp_path) == before, "the refused command left files behind"


def _dataset_with_a_bomb(root: Path) -> Path:
    """Three demo images and a PNG that claims 30000 x 30000 pixels."""
    import csv
    import shutil

    from harness.eval.dataset import load_dataset

    demo = load_dataset("demo")
    (root / "images").mkdir(parents=True)
    with open(demo.csv_path, newline="") as f:
        rows = list(csv.DictReader(f))[:4]
    for row in rows[1:]:
        shutil.copy(demo.csv_path.parent / "images" / row["filename"], root / "images" / row["filename"])
    (root / "images" / rows[0]["filename"]).write_bytes(_png_header_only(30000, 30000))
    with open(root / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return root


def test_decompression_bomb_is_an_unreadable_image(tmp_path, small_model):
    dataset = _dataset_with_a_bomb(tmp_path / "bomb")
    args = ("eval", "--model", "wv_quality_k_2_c_3", "--dataset", str(dataset), "--results", "results")
    done = _harness(tmp_path, *args, "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)
    assert summary["unreadable_images"]["count"] == 1 and summary["samples"] == 3
    before = _tree(tmp_path)
    strict = _harness(tmp_path, *args, "--strict")
    assert_refused_in_one_line(strict, "1 files could not be read", "DecompressionBombError")
    assert _tree(tmp_path) == before


def test_a_bom_in_labels_and_predictions_is_accepted(tmp_path):
    (tmp_path / "labels.csv").write_bytes(_labels(_label_row("a.png"), _label_row("b.png", 0), bom=True))
    (tmp_path / "p.csv").write_bytes(b"\xef\xbb\xbffilename,prediction,score\na.png,1,0.9\nb.png,0,\n")
    done = _harness(tmp_path, "dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scored"] == 2


def test_the_corpus_reaches_every_command():
    """At least 150 cases, and every command of the CLI among them, each subcommand of a group too (damaged run
    folders and gates files, which need a real run, are in tests/e2e/sim/test_damaged_runs.py besides)."""
    commands = [words for words, _ in cli_commands()]
    assert len(CASES) >= 150
    reached = {case.args[: len(words)] for case in CASES for words in commands}
    assert sorted(" ".join(words) for words in commands if words not in reached) == []


def test_inverted_boxes_are_scored_and_said(tmp_path):
    """Not refused: LPIRC's golden file holds 1692 boxes with xmin > xmax or ymin > ymax, and its reference
    scores them. How many there are is said on stderr, a line per file."""
    (tmp_path / "t.csv").write_bytes(b"1,1,1,10,10,20,20\n2,1,1,30,10,20,20\n")
    (tmp_path / "d.csv").write_bytes(b"1,1,0.9,10,10,20,20\n2,1,0.8,30,10,20,20\n")
    done = _harness(tmp_path, "lpirc", "map", "--truth", "t.csv", "--detections", "d.csv", "--json")
    assert done.returncode == 0, done.stderr
    notes = done.stderr.strip().splitlines()
    assert [line.split(":")[2].strip() for line in notes] == ["t.csv", "d.csv"]
    assert all("1 box(es) with xmin > xmax" in line and "not refused" in line for line in notes)
    assert "map" in json.loads(done.stdout)

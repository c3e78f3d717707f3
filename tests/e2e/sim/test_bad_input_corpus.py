"""Hostile inputs, one table: each case is a command, the files it is given and the words of its one-line refusal.

Every case is checked for exit code 2, one line on stderr holding every expected word, no traceback and no
file left in the working folder beyond those the case made."""

import io
import json
import os
import struct
import subprocess
import sys
import wave
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import assert_refused_in_one_line

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


FIFO = object()  # a named pipe in place of a file


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    expected: tuple[str, ...]
    files: dict[str, object] = field(default_factory=dict)


CASES = [
    Case(
        "labels-flag-out-of-range",
        ("score", "--labels", "labels.csv", "--predictions", "p.csv"),
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
        ("map", "--truth", "truth.csv", "--detections", "det.csv"),
        ("det.csv:2", "not a finite number"),
        {"truth.csv": b"1,1,1,10,10,20,20\n", "det.csv": b"1,1,0.9,10,10,20,20\n1,1,0.5,nan,10,20,20\n"},
    ),
    Case(
        "map-infinite-truth",
        ("map", "--truth", "truth.csv", "--detections", "det.csv"),
        ("truth.csv:1", "not a finite number"),
        {"truth.csv": b"1,1,1,10,10,inf,20\n", "det.csv": b"1,1,0.9,10,10,20,20\n"},
    ),
    Case(
        "labels-other-flag-out-of-range",
        ("score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("labels.csv line 2", "depiction is '5'", "or -1"),
        {"labels.csv": _labels("a.png,1,5" + ",0" * 17), "p.csv": b"filename,prediction\n"},
    ),
    Case(
        "score-prediction-for-unknown-file",
        ("score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("p.csv line 3", "zz.png is not in", "labels.csv"),
        {"labels.csv": _labels(_label_row("a.png")), "p.csv": b"filename,prediction\na.png,1\nzz.png,0\n"},
    ),
    Case(
        "score-nan",
        ("score", "--labels", "labels.csv", "--predictions", "p.csv"),
        ("p.csv line 2", "score 'nan'", "finite number"),
        {"labels.csv": _labels(_label_row("a.png")), "p.csv": b"filename,prediction,score\na.png,1,nan\n"},
    ),
    Case(
        "score-predictions-fifo",
        ("score", "--labels", "labels.csv", "--predictions", "fifo"),
        ("fifo is not a regular file", "pass a CSV file"),
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
        ("stream", "--model", "wv_quality_k_2_c_3", "--wav", "s.wav", "--results", "results"),
        ("wv_quality_k_2_c_3 is an image_classification card", "keyword spotting card", "--model"),
        {"s.wav": _wav(seconds=2.0)},
    ),
    Case(
        "perf-with-keyword-card",
        ("perf", "--model", "tflm_micro_speech", "--dataset", "demo"),
        ("tflm_micro_speech is a keyword_spotting card", "--dataset", "image classification card", "--model"),
    ),
    Case(
        "profile-with-keyword-card",
        ("profile", "--model", "tflm_micro_speech", "--dataset", "demo"),
        ("tflm_micro_speech is a keyword_spotting card", "image classification card"),
    ),
    Case(
        "eval-sim-with-port",
        ("eval", "--board", "sim", "--port", "/dev/null", "--results", "results"),
        ("sim is a virtual board", "no port", "drop --port /dev/null"),
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
        ("inspect", "x.h5"),
        ("x.h5 is a Keras model", "harness convert"),
        {"x.h5": b"\x89HDF\r\n\x1a\n"},
    ),
]


def _make(root: Path, files: dict[str, object]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is FIFO:
            os.mkfifo(path)
        else:
            path.write_bytes(content)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _harness(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=timeout,
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input_is_refused_in_one_line(tmp_path, small_model, case):
    _make(tmp_path, case.files)
    before = _tree(tmp_path)
    done = _harness(tmp_path, *case.args)
    assert_refused_in_one_line(done, *case.expected)
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
    done = _harness(tmp_path, "score", "--labels", "labels.csv", "--predictions", "p.csv", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scored"] == 2

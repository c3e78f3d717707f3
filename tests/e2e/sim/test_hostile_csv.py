"""Hostile CSV files (issue #31, the review after it): a header naming a column twice, a ledger event given twice,
a label holding a control character, a negative LPIRC class id and a meter count in fullwidth digits are each
refused in one line naming the file and the line or column."""

import pytest

from tests.e2e.sim.test_bad_input_corpus import _label_row, _labels, _png_header_only
from tests.hostile import Case, run_case

LABELS = {"labels.csv": _labels(_label_row("a.png"))}
SCORE = ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv")
STREAM_SCORE = ("stream", "score", "--ledger", "l.csv", "--detections", "d.csv", "--duration-ms", "10000")
DETECTIONS = b"label,time_ms,score,reference\nyes,1500,0.9,decision\n"
LEDGER = b"label,start_ms,end_ms\nyes,1000,2000\n"
BUILD = ("dataset", "build", "--annotations", "ann", "--images", "img", "--out", "out")
MAP = ("lpirc", "map", "--truth", "t.csv", "--detections", "d.csv")

CASES = [
    Case(
        "predictions-duplicate-column",
        SCORE,
        ("predictions file p.csv", "'prediction' twice"),
        {**LABELS, "p.csv": b"filename,prediction,prediction\na.png,1,0\n"},
    ),
    Case(
        "ledger-duplicate-column",
        STREAM_SCORE,
        ("ledger l.csv", "'start_ms' twice"),
        {"l.csv": b"label,start_ms,start_ms\nyes,1000,2000\n", "d.csv": DETECTIONS},
    ),
    Case(
        "detections-duplicate-column",
        STREAM_SCORE,
        ("detections file d.csv", "'score' twice"),
        {"l.csv": LEDGER, "d.csv": b"label,time_ms,score,score,reference\nyes,1500,0.9,0.1,decision\n"},
    ),
    Case(
        "annotations-duplicate-column",
        BUILD,
        ("annotations file", "bbox.csv", "'XMin' twice"),
        {
            "ann/class-descriptions.csv": b"/m/01g317,Person\n",
            "ann/bbox.csv": b"ImageID,LabelName,XMin,XMin,XMax,YMin,YMax\na,/m/01g317,0.1,0.2,0.9,0.1,0.9\n",
            "img/a.png": _png_header_only(4, 4),
        },
    ),
    Case(
        "ledger-event-twice",
        STREAM_SCORE,
        ("ledger l.csv line 3 repeats line 2", "keep one"),
        {"l.csv": LEDGER + b"yes,1000,2000\n", "d.csv": DETECTIONS},
    ),
    Case(
        "ledger-label-newline",
        STREAM_SCORE,
        ("ledger l.csv line 2", "U+000A", "printable"),
        {"l.csv": b'label,start_ms,end_ms\n"ye\ns",1000,2000\n', "d.csv": DETECTIONS},
    ),
    Case(
        "detections-label-escape",
        STREAM_SCORE,
        ("detections d.csv line 2", "U+001B", "printable"),
        {"l.csv": LEDGER, "d.csv": b"label,time_ms,score,reference\n\x1byes,1500,0.9,decision\n"},
    ),
    Case(
        "map-negative-class",
        MAP,
        ("t.csv:2", "class id -1 is negative"),
        {"t.csv": b"1,1,1,10,10,20,20\n1,-1,1,10,10,20,20\n", "d.csv": b"1,1,0.9,10,10,20,20\n"},
    ),
    Case(
        "meter-fullwidth-count",
        ("meter", "csv:log.csv"),
        ("log.csv:2", "ASCII digits"),
        {"log.csv": "5,0.1,0.5,0.0001,1\n5,0.1,0.5,0.0002,\uff12\n".encode()},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_hostile_csv_is_refused_in_one_line(tmp_path, case):
    run_case(tmp_path, case)

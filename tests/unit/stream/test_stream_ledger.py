"""The millisecond ledger: seconds are refused with one line unless the unit is given; events lie in the audio."""

import subprocess
import sys

import pytest

from harness.errors import UserError
from harness.stream.ledger import load_ledger


def _ledger(tmp_path, text):
    path = tmp_path / "ledger.csv"
    path.write_text(text)
    return path


def test_millisecond_ledger_with_and_without_header(tmp_path):
    ledger = load_ledger(_ledger(tmp_path, "label,start_ms,end_ms\nno,4500,5500\nyes,1000,2000\n"), 10_000)
    assert [(e.label, e.start_ms, e.end_ms) for e in ledger.events] == [("yes", 1000, 2000), ("no", 4500, 5500)]
    bare = load_ledger(_ledger(tmp_path, "yes, 1000.000000\nno, 4500.000000\n"), 10_000)
    assert [(e.label, e.start_ms, e.end_ms) for e in bare.events] == [("yes", 1000, None), ("no", 4500, None)]


@pytest.mark.parametrize(
    "text, expected, in_ms",
    [
        ("yes,1.5\nno,4.25\n", "fractional time (1.5): it looks like seconds", [1500, 4250]),
        (
            "yes,1\nno,4\n",
            "every time is at most 4 but the audio lasts 10 s: the times look like seconds",
            [1000, 4000],
        ),
    ],
)
def test_seconds_are_refused_unless_declared(tmp_path, text, expected, in_ms):
    path = _ledger(tmp_path, text)
    with pytest.raises(UserError, match="'ledger_unit' s") as refused:
        load_ledger(path, 10_000)
    assert expected in str(refused.value)
    assert [e.start_ms for e in load_ledger(path, 10_000, unit="s").events] == in_ms


def test_a_millisecond_header_over_seconds_is_still_refused(tmp_path):
    with pytest.raises(UserError, match="look like seconds"):
        load_ledger(_ledger(tmp_path, "label,start_ms\nyes,2\nno,5\n"), 10_000)


def test_header_can_declare_seconds(tmp_path):
    ledger = load_ledger(_ledger(tmp_path, "label,time_s\nyes,1.5\n"), 10_000)
    assert (ledger.unit, ledger.events[0].start_ms) == ("s", 1500)


def test_event_outside_the_audio(tmp_path):
    with pytest.raises(UserError, match=r"outside the audio \(0-10000 ms\)"):
        load_ledger(_ledger(tmp_path, "yes,9500,10500\n"), 10_000)


def test_cli_refuses_a_seconds_ledger_in_one_line(tmp_path):
    ledger = _ledger(tmp_path, "yes,1\nno,3\n")
    detections = tmp_path / "d.csv"
    detections.write_text("label,time_ms,score,reference\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "stream-score",
            "--ledger",
            str(ledger),
            "--detections",
            str(detections),
            "--duration-ms",
            "8000",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "look like seconds, not milliseconds" in lines[0] and "--ledger-unit s" in lines[0]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_times_that_are_not_finite_are_refused(tmp_path, value):
    from harness.stream.detections import load_detections

    (tmp_path / "l.csv").write_text(f"label,start_ms\nyes,{value}\n")
    with pytest.raises(UserError, match="is not a time"):
        load_ledger(tmp_path / "l.csv", 5000, "ms")
    (tmp_path / "d.csv").write_text(f"label,time_ms,score,reference\nyes,{value},1,decision\n")
    with pytest.raises(UserError, match="finite"):
        load_detections(tmp_path / "d.csv", 5000)


def test_a_ledger_without_end_times_keeps_the_run_and_names_the_policy_it_cannot_serve(tmp_path):
    from pathlib import Path

    from harness.model.card import load_card
    from harness.stream.detections import Detection
    from harness.stream.run import StreamRequest, _scores

    (tmp_path / "l.csv").write_text("label,start_ms\nyes,1000\nno,3000\n")
    ledger = load_ledger(tmp_path / "l.csv", 6000)
    request = StreamRequest(load_card("tflm_micro_speech"), None, None, Path("s.wav"), tmp_path)
    scores = _scores(request, ledger, [Detection("yes", 1500, 200.0, "decision")], 6000)
    assert "end time" in scores["mlperf-sww"]
    assert scores["optimal"].hits == 1 and scores["optimal"].misses == 1

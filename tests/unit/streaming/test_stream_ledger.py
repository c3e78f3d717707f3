"""The millisecond ledger: seconds are refused with one line unless the unit is given; events lie in the audio;
tf-compat reads the file as TensorFlow's ground-truth reader does, or refuses the line it would misread."""

import json

import pytest

from harness.errors import UserError
from harness.streaming.detections import Detections
from harness.streaming.ledger import load_ledger
from harness.streaming.scoring import score_stream
from tests.forked_cli import run_harness_command


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
    done = run_harness_command(
        ["stream", "score", "--ledger", str(ledger), "--detections", str(detections), "--duration-ms", "8000"]
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "look like seconds, not milliseconds" in lines[0] and "--ledger-unit s" in lines[0]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_times_that_are_not_finite_are_refused(tmp_path, value):
    from harness.streaming.detections import load_detections

    (tmp_path / "l.csv").write_text(f"label,start_ms\nyes,{value}\n")
    with pytest.raises(UserError, match="is not a time"):
        load_ledger(tmp_path / "l.csv", 5000, "ms")
    (tmp_path / "d.csv").write_text(f"label,time_ms,score,reference\nyes,{value},1,decision\n")
    with pytest.raises(UserError, match="finite"):
        load_detections(tmp_path / "d.csv", 5000)


def test_a_ledger_without_end_times_keeps_the_run_and_names_the_policy_it_cannot_serve(tmp_path):
    from pathlib import Path

    from harness.model.cards import load_card
    from harness.streaming.detections import Detection
    from harness.streaming.run import StreamRequest, _scores

    (tmp_path / "l.csv").write_text("label,start_ms\nyes,1000\nno,3000\n")
    ledger = load_ledger(tmp_path / "l.csv", 6000)
    request = StreamRequest(load_card("tflm_micro_speech"), None, None, Path("s.wav"), tmp_path)
    scores = _scores(request, ledger, [Detection("yes", 1500, 200.0, "decision")], 6000)
    assert "end time" in scores["mlperf-sww"]
    assert scores["optimal"].hits == 1 and scores["optimal"].misses == 1


# ---------------------------------------------------------------- tf-compat reads the file as TF's reader does


def _tf_read_ground_truth(path):
    """StreamingAccuracyStats.read_ground_truth_file, transcribed from tensorflow/tensorflow
    tensorflow/examples/speech_commands/accuracy_utils.py at 005057072380c8e14a17d76b5d8d3762bb48cb72."""
    gt_occurrence = []
    with open(path) as f:
        for line in f:
            line_split = line.strip().split(",")
            if len(line_split) != 2:
                continue
            timestamp = round(float(line_split[1]))
            label = line_split[0]
            gt_occurrence.append([label, timestamp])
    return sorted(gt_occurrence, key=lambda item: item[1])


@pytest.mark.parametrize(
    "text, skipped",
    [
        pytest.param("yes,1000,\nno,3000\n", (1,), id="trailing comma"),
        pytest.param("yes,1000,2000\nno,3000\n", (1,), id="end time"),
        pytest.param('"yes,no",1000\nno,3000\n', (1,), id="comma in quotes"),
        pytest.param("yes, 1000\n  no,3000  \n", (), id="spaces after the comma and around the line"),
        pytest.param("yes,1000\r\nno,3000\r\n", (), id="CRLF"),
        pytest.param("yes,1000\rno,3000\r", (), id="CR"),
        pytest.param("\nyes,1000\n\n   \nno,3000\n", (), id="blank lines"),
        pytest.param("# recorded 2019\nyes,1000\n", (), id="comment without a comma"),
        pytest.param("label,start_ms,end_ms\nyes,1000\n", (), id="three-column header"),
        pytest.param("no,3000\nyes,1000\n", (), id="unsorted"),
        pytest.param("a,1000.5\nb,999.5\nc,1001.5\nd,1000\n", (), id="round half to even, stable sort"),
    ],
)
def test_tf_compat_reads_the_ledger_as_tf_reader_does(tmp_path, text, skipped):
    from harness.streaming.tf_ground_truth import read_tf_ground_truth

    path = tmp_path / "ledger.csv"
    path.write_bytes(text.encode())
    truth = read_tf_ground_truth(load_ledger(path, 10_000, unit="ms"))  # ms: TF rounds, no seconds guess
    assert [[e.label, e.start_ms] for e in truth.events] == _tf_read_ground_truth(path)
    assert truth.skipped_lines == skipped


def test_a_two_column_header_is_skipped_and_named_where_tf_reader_stops(tmp_path):
    from harness.streaming.tf_ground_truth import read_tf_ground_truth

    path = _ledger(tmp_path, "label,start_ms\nyes,1000\n")
    with pytest.raises(ValueError):
        _tf_read_ground_truth(path)
    truth = read_tf_ground_truth(load_ledger(path, 10_000))
    assert ([(e.label, e.start_ms) for e in truth.events], truth.header_line) == ([("yes", 1000)], 1)


@pytest.mark.parametrize(
    "line, tf_reads, refusal",
    [
        ("yes ,1000", [["yes ", 1000]], "line 2: TF's reader keeps the spaces in the label 'yes '"),
        ('"yes",1000', [['"yes"', 1000]], "line 2: TF's reader keeps the quotes in the label '\"yes\"'"),
        ("#yes,1000", [["#yes", 1000]], "line 2: TF's reader has no comments and would read '#yes,1000' as an"),
        ('yes,"1000"', None, "line 2: TF's reader cannot read the time '\"1000\"' (float() fails"),
    ],
)
def test_tf_compat_refuses_lines_tf_reads_as_another_label(tmp_path, line, tf_reads, refusal):

    path = _ledger(tmp_path, f"no,3000\n{line}\n")
    if tf_reads is None:
        with pytest.raises(ValueError):
            _tf_read_ground_truth(path)
    else:
        assert _tf_read_ground_truth(path) == [*tf_reads, ["no", 3000]]
    ledger = load_ledger(path, 10_000)
    with pytest.raises(UserError) as refused:
        score_stream("tf-compat", ledger, Detections(str(path), None, ()), 10_000)
    assert refusal in str(refused.value)
    assert score_stream("optimal", ledger, Detections(str(path), None, ()), 10_000).events >= 1  # CSV reading


def test_a_fractional_time_offers_tf_rounding(tmp_path):
    with pytest.raises(UserError, match=r"or 'ledger_unit' ms to round it to whole milliseconds as TF's reader"):
        load_ledger(_ledger(tmp_path, "yes,1000.5\n"))  # without the audio's length: seconds or milliseconds?


def test_tf_generators_labels_file_is_read_as_tf_reads_it(tmp_path):
    """generate_streaming_test_wav.py writes `label, %f` milliseconds (tensorflow@0304934, its last lines)."""
    path = _ledger(tmp_path, "yes, 1234.562500\nno, 4000.500000\n")
    assert [e.start_ms for e in load_ledger(path, 10_000).events] == [round(1234.5625), round(4000.5)]
    assert _tf_read_ground_truth(path) == [["yes", 1235], ["no", 4000]]


def test_stream_builds_ledger_is_given_to_tf_as_its_generators_labels(tmp_path):
    from harness.streaming.ledger import Event, write_ledger

    path = tmp_path / "built.csv"
    write_ledger(path, [Event("yes", 1000, 2000), Event("no", 4000, 5000)])
    assert _tf_read_ground_truth(path) == []  # TF's reader reads nothing of harness's three columns
    result = score_stream("tf-compat", load_ledger(path, 10_000), Detections(str(path), None, ()), 10_000)
    assert result.ground_truth == 2 and result.skipped_lines == []
    assert any("generate_streaming_test_wav.py" in caveat for caveat in result.caveats)


def test_stream_score_says_which_lines_tf_reader_skips(tmp_path, capsys):
    from harness.cli.app import main

    ledger = _ledger(tmp_path, "yes,1000,\nno,4000\nyes,6000,7000\n")
    detections = tmp_path / "d.csv"
    detections.write_text("label,time_ms,score,reference\nyes,1100,0.9,window-start\n")
    common = ["stream", "score", "--ledger", str(ledger), "--detections", str(detections), "--duration-ms", "10000"]
    assert main([*common, "--policy", "tf-compat", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["ground_truth"], result["false_positives"], result["skipped_lines"]) == (1, 1, [1, 3])
    assert "two-field-lines-only" in result["changed_by"]
    assert main([*common, "--policy", "tf-compat"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"TF's reader skips 2 line(s) of {ledger}" in out and "lines 1, 3, not scored here" in out


def test_the_same_event_twice_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("label,start_ms,end_ms\nyes,1000,2000\nno,3000,\nyes, 1000 ,2000\n")
    with pytest.raises(UserError, match=r"l\.csv line 4 repeats line 2"):
        load_ledger(path)


@pytest.mark.parametrize(
    "label", ['"ye\ns"', "\x1byes", "ye\u200bs", "\u202eyes"], ids=["newline", "esc", "zero-width", "right-to-left"]
)
def test_a_label_holding_a_control_or_format_character_is_refused(tmp_path, label):
    path = tmp_path / "l.csv"
    path.write_text(f"label,start_ms\n{label},1000\n")
    with pytest.raises(UserError, match=r"l\.csv line 2: label .* holds the control character U\+"):
        load_ledger(path)

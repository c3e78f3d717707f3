"""Stream runs are runs: `harness runs` lists them beside eval runs, `harness runs report` reports their detections
and false alarms, `harness runs check` gates them on figures a stream run has and refuses, in one line, a gate
naming a figure it has not. Eight seconds of fixture clips on the virtual board: each run takes a second or two."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import SHARED, assert_refused_in_one_line, fixture_model

pytestmark = pytest.mark.slow  # stream runs on the virtual board, made once for the module

AUDIO = SHARED / "fixtures" / "audio"


def _harness(cwd, *args, env=None):
    command = [sys.executable, "-m", "harness", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=os.environ.copy() | (env or {}))


def _run_id(done) -> str:
    assert done.returncode == 0, done.stderr
    return os.path.basename(done.stdout.strip())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, private_cache):
    """In one results folder: a scored stream run, a stream run without a ledger, and a small eval run."""
    if not (AUDIO / "yes_1000ms.wav").is_file():
        pytest.skip("needs ../shared/fixtures/audio (the TFLM yes/no clips; absent in a fresh clone)")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")
    folder = tmp_path_factory.mktemp("stream-runs")
    built = _harness(
        folder, "stream", "build", "--clips", str(AUDIO), "--at", "yes:1000,no:3500,yes:6000",
        "--duration-ms", "8000", "--out", "s.wav", "--quiet",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    stream = ("stream", "run", "--wav", "s.wav", "--results", "r", "--quiet")
    ids = {
        "scored": _run_id(_harness(folder, *stream, "--ledger", "s.csv")),
        "unscored": _run_id(_harness(folder, *stream)),
        "eval": _run_id(
            _harness(folder, "eval", "--model", "wv_quality_k_2_c_3", "--limit", "4", "--results", "r", "--quiet")
        ),
    }
    return folder, ids


def test_runs_lists_stream_runs_beside_eval_runs(runs):
    folder, ids = runs
    done = _harness(folder, "runs", "list", "--results", "r", "--json")
    assert done.returncode == 0, done.stderr
    listed = {row["run_id"]: row for row in json.loads(done.stdout)}
    assert set(listed) == set(ids.values())
    scored, unscored, evaluated = (listed[ids[name]] for name in ("scored", "unscored", "eval"))
    assert scored["kind"] == unscored["kind"] == "stream" and evaluated["kind"] == "eval"
    summary = json.loads((folder / "r" / ids["scored"] / "summary.json").read_text())
    assert scored["events"] == 3 and scored["hits"] == summary["scores"]["optimal"]["hits"]
    assert scored["detections"] == len(summary["detections"]["device"])
    assert scored["device_equals_host"] and scored["pipeline_source"] == "sim"
    assert unscored["events"] is None and unscored["detections"] == scored["detections"]
    assert evaluated["latency_source"] == "sim" and evaluated["samples"] == 4
    # one list, oldest first, eval and stream runs alike: the number shown is the number a command takes
    assert [scored["number"], unscored["number"], evaluated["number"]] == [1, 2, 3]

    text = _harness(folder, "runs", "list", "--results", "r", env={"COLUMNS": "80"}).stdout
    assert "stream runs in r" in text and "not scored" in text and "(sim)" in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    cells = [cell.strip() for line in lines if line.startswith("│") for cell in line.strip("│").split("│")]
    for run_id in ids.values():  # each id whole on a line, in the table of eval runs or of stream runs
        assert cells.count(run_id) == 1, (run_id, text)
    rows = [line.strip("│").split("│") for line in lines if line.startswith("│")]
    assert ["3", ids["eval"]] in [[cell.strip() for cell in row] for row in rows], text  # not numbered again from 1


def test_a_stream_run_records_where_its_figures_come_from(runs):
    folder, ids = runs
    run = folder / "r" / ids["scored"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["kind"] == "stream" and manifest["board"]["latency_source"] == "sim"
    assert manifest["device"]["firmware_build_id"].startswith("sim-")
    assert manifest["audio"]["ledger"] == "s.csv" and len(manifest["audio"]["sha256"]) == 64
    assert manifest["model"]["frontend"].endswith("audio_preprocessor_int8.tflite")
    assert manifest["settings"]["wav"] == "s.wav"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["busy"]["source"] == summary["frontend_arena_used"]["source"] == "sim"


def test_report_of_a_stream_run_shows_its_detections_and_false_alarms(runs):
    folder, ids = runs
    out = folder / "report.html"
    done = _harness(folder, "runs", "report", "1", "latest~1", "latest", "--results", "r", "--out", str(out))
    assert done.returncode == 0, done.stderr  # the three runs by their numbers in `harness runs list`
    page = out.read_text()
    assert all(run_id in page for run_id in ids.values())
    for text in ("optimal: one-to-one matching", "false alarms / hour", "unwanted triggers / hour", "per label"):
        assert text in page
    assert "% matched" in page and "True Positives" in page  # tf-compat's and mlperf-sww's lines
    assert "Not scored: the run had no ledger" in page
    assert "Per subset" in page  # the eval run keeps its own section
    figure = r'<figure class="plot" data-title="Detections against the ledger">(<svg.*?</svg>)'
    timeline = re.search(figure, page, re.S).group(1)  # the scored run's (the first): the unscored has no ledger
    assert ">yes<" in timeline and ">ledger<" in timeline and "seconds into the stream" in timeline


def test_check_gates_a_stream_run(runs, tmp_path):
    folder, ids = runs
    gates = tmp_path / "gates.toml"
    gates.write_text(
        "[agreement]\nmin = 1.0\n[recall]\nmin = 0.3\n[false_alarms_per_hour]\nmax = 1000\n"
        "[unwanted_triggers_per_hour]\nmax = 1000\n"
    )
    junit = tmp_path / "junit.xml"
    done = _harness(folder, "runs", "check", "latest~2", "--gates", str(gates), "--results", "r", "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS agreement" in done.stdout and "events; optimal policy" in done.stdout
    cases = ET.parse(junit).getroot().findall("testcase")
    assert [c.get("name") for c in cases] == [
        "agreement",
        "recall",
        "false_alarms_per_hour",
        "unwanted_triggers_per_hour",
    ]

    gates.write_text("[recall]\nmin = 1.0\n")  # the stream holds an event the pipeline misses
    done = _harness(folder, "runs", "check", ids["scored"], "--gates", str(gates), "--results", "r")
    assert done.returncode == 1 and "FAIL recall" in done.stdout

    done = _harness(folder, "runs", "check", ids["unscored"], "--gates", str(gates), "--results", "r")
    assert done.returncode == 0 and "NOT JUDGED recall: not judged: the run was not scored" in done.stdout


@pytest.mark.parametrize(
    ("run", "gate", "words"),
    [
        ("scored", "[accuracy_drop]\nmax = 0.01\n", ("[accuracy_drop]", "stream runs", "[recall] min")),
        ("scored", "[latency]\nmax_regression = 0.05\n", ("[latency]", "stream runs")),
        ("eval", "[false_alarms_per_hour]\nmax = 1\n", ("[false_alarms_per_hour]", "eval runs", "[agreement] min")),
    ],
)
def test_a_gate_naming_a_figure_the_run_has_not_is_refused_in_one_line(runs, tmp_path, run, gate, words):
    folder, ids = runs
    gates = tmp_path / "gates.toml"
    gates.write_text(gate)
    assert_refused_in_one_line(
        _harness(folder, "runs", "check", ids[run], "--gates", str(gates), "--results", "r"), *words
    )


def test_a_baseline_of_another_kind_and_compare_of_a_stream_run_are_refused(runs, tmp_path):
    folder, ids = runs
    gates = tmp_path / "gates.toml"
    gates.write_text("[agreement]\nmin = 0.9\n")
    done = _harness(
        folder, "runs", "check", ids["scored"], "--gates", str(gates), "--baseline", ids["eval"][:-2], "--results", "r"
    )  # the baseline by a unique prefix of its id
    assert_refused_in_one_line(done, "is an eval run", "same kind")
    done = _harness(folder, "runs", "check", ids["eval"][:9], "--gates", str(gates), "--results", "r")
    assert_refused_in_one_line(done, "is ambiguous: 3 runs in r begin so", "give more of the id")
    done = _harness(folder, "runs", "compare", ids["scored"], ids["eval"], "--results", "r")
    assert_refused_in_one_line(done, "is a stream run", "two eval runs")

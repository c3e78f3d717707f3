"""One eval dealt over several virtual boards (`--boards N`): the same device results as one board, sample
for sample; a board killed mid-run gives its samples to the others; an interrupted sharded run resumes."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.sim.test_board_dies import _children

LIMIT = 40


def _eval(tmp_path: Path, results: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--limit", str(LIMIT), "--results", str(tmp_path / results)]
    command += ["--json", *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def _outputs(run_dir: str) -> dict[str, bytes]:
    table = pq.read_table(Path(run_dir) / "samples.parquet").to_pydict()
    ids = table["sample_id"]
    assert len(ids) == len(set(ids)), "a sample evaluated twice"
    return dict(zip(ids, table["device_output"], strict=True))


@pytest.fixture(scope="module")
def one_board(tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("one")
    done = _eval(tmp, "r")
    assert done.returncode == 0, done.stderr
    return _outputs(json.loads(done.stdout)["run_dir"])


def test_four_boards_give_the_one_board_results_sample_for_sample(tmp_path, one_board):
    done = _eval(tmp_path, "r", "--boards", "4")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert _outputs(summary["run_dir"]) == one_board
    shares = {share["name"]: share for share in summary["boards"]}
    assert sorted(shares) == ["sim#1", "sim#2", "sim#3", "sim#4"]
    assert sum(share["samples"] for share in shares.values()) == LIMIT
    assert all(share["failure"] is None and share["latency"]["source"] == "sim" for share in shares.values())
    boards = pq.read_table(Path(summary["run_dir"]) / "samples.parquet").column("board").to_pylist()
    assert set(boards) == set(shares)
    assert summary["samples"] == LIMIT and summary["bit_exact"]["tflm"] == LIMIT
    report = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "harness", "runs", "report", summary["run_dir"], "--out", str(report)], check=True
    )
    assert "4 boards shared the samples" in report.read_text() and "<td>sim#4</td>" in report.read_text()


def _sim_boards(harness: subprocess.Popen, count: int) -> list[int]:
    deadline = time.monotonic() + 120
    while len(boards := _children(harness.pid)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(boards) == count, "the virtual boards never started"
    return boards


def _started(tmp_path: Path, *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "harness", "eval", "--limit", str(LIMIT), "--results", str(tmp_path / "r")]
    command += ["--json", *args]
    return subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _journaled(tmp_path: Path) -> int:
    journals = list((tmp_path / "r").glob(".*.partial/journal.jsonl"))  # the unfinished run's folder
    return journals[0].read_bytes().count(b"\n") if journals else 0  # whole lines: a line being written is not one


def test_a_board_killed_mid_run_leaves_every_sample_evaluated_once(tmp_path, one_board):
    # Each invoke lasts 50 ms, so the run lasts long enough to kill a board in the middle of it.
    harness = _started(tmp_path, "--boards", "3", "--emulate-invoke-ms", "50")
    try:
        boards = _sim_boards(harness, 3)
        at = random.Random().randint(3, LIMIT // 2)
        deadline = time.monotonic() + 120
        while _journaled(tmp_path) < at and time.monotonic() < deadline and harness.poll() is None:
            time.sleep(0.02)
        os.kill(random.choice(boards), signal.SIGKILL)
        out, err = harness.communicate(timeout=300)
    finally:
        harness.kill()
    assert harness.returncode == 0, err
    summary = json.loads(out)
    assert _outputs(summary["run_dir"]) == one_board
    failed = [share for share in summary["boards"] if share["failure"]]
    assert len(failed) == 1, summary["boards"]
    assert sum(share["samples"] for share in summary["boards"]) == LIMIT
    recorded = json.loads((Path(summary["run_dir"]) / "summary.json").read_text())
    assert [b["failure"] for b in recorded["boards"] if b["failure"]] == [failed[0]["failure"]]


def test_an_interrupted_sharded_run_resumes_to_the_same_results(tmp_path, one_board):
    harness = _started(tmp_path, "--boards", "2", "--emulate-invoke-ms", "50")
    try:
        _sim_boards(harness, 2)
        deadline = time.monotonic() + 120
        while _journaled(tmp_path) < 6 and time.monotonic() < deadline and harness.poll() is None:
            time.sleep(0.02)
        harness.send_signal(signal.SIGINT)
        _, err = harness.communicate(timeout=120)
    finally:
        harness.kill()
    assert harness.returncode == 130, err
    (partial,) = (tmp_path / "r").glob(".*.partial")
    run_id = partial.name.removeprefix(".").removesuffix(".partial")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--resume", run_id, "--results", str(tmp_path / "r"), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert _outputs(summary["run_dir"]) == one_board
    assert summary["link"]["samples_from_journal"] >= 6
    assert sum(share["samples"] for share in summary["boards"]) == LIMIT

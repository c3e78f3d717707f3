"""`harness eval --resume`: a run killed with SIGKILL at a random point finishes from its journal."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq

LIMIT = 24
COMMON = ["eval", "--model", "wv_quality_k_2_c_3", "--limit", str(LIMIT), "--emulate-invoke-ms", "40", "--json"]
COMPARED = ("sample_id", "device_output", "device_prediction", "tflm_output")


def _harness(*args):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)


def _table(results):
    (run,) = [p for p in results.iterdir() if not p.name.startswith(".")]
    table = pq.read_table(run / "samples.parquet")
    return {name: table.column(name).to_pylist() for name in COMPARED}


def _journal_lines(results) -> int:
    partials = list(results.glob(".*.partial/journal.jsonl"))
    return partials[0].read_bytes().count(b"\n") if partials else 0


def test_a_run_killed_at_a_random_point_resumes_to_the_uninterrupted_results(tmp_path, small_model):
    whole = tmp_path / "whole"
    done = _harness(*COMMON, "--results", str(whole))
    assert done.returncode == 0, done.stderr

    killed = tmp_path / "killed"
    stop_after = random.randint(1, LIMIT - 2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *COMMON, "--results", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _journal_lines(killed) < stop_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (partial,) = killed.glob(".*.partial")
    journaled = _journal_lines(killed)
    assert 1 <= journaled < LIMIT, f"killed after {journaled} samples"

    resumed = _harness("eval", "--resume", partial.name[1 : -len(".partial")], "--results", str(killed), "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["samples"] == LIMIT and summary["link"]["samples_from_journal"] == journaled
    assert not list(killed.glob(".*.partial"))
    assert _table(killed) == _table(whole)


def test_resume_of_an_unknown_run_is_a_one_line_user_error(tmp_path):
    done = _harness("eval", "--resume", "no-such-run", "--results", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no unfinished run" in done.stderr

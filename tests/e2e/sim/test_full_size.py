"""A 500-sample run of the default model on the virtual board, killed mid-way through a journal row group
and resumed: every sample's device output bytes equal TFLM-python's, in the dataset's order."""

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq

from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import demo_copies
from harness.results.journal import ROWS_PER_GROUP

SAMPLES = 500
INTO_SECOND_GROUP = 60  # journal lines after the first row group when the run is killed


def _lines(partial) -> int:
    journal = partial / "journal.jsonl"
    return journal.read_bytes().count(b"\n") if journal.exists() else 0


def test_a_500_sample_run_killed_mid_group_resumes_bit_exact_with_tflm(tmp_path):
    data = demo_copies(SAMPLES, tmp_path / "data", load_dataset("demo"))
    results = tmp_path / "results"
    command = [sys.executable, "-m", "harness", "eval", "--board", "sim", "--dataset", str(data)]
    command += ["--subset", "all", "--no-pools", "--references", "tflm", "--results", str(results), "--json"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    partial = None
    while proc.poll() is None and time.monotonic() < deadline:
        partial = next(results.glob(".*.partial"), None) if results.exists() else None
        if partial and (partial / "rows" / "group-00000.parquet").exists() and _lines(partial) >= INTO_SECOND_GROUP:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert partial is not None and proc.returncode == -signal.SIGKILL, proc.stderr.read()
    grouped = [p.name for p in (partial / "rows").glob("group-*.parquet")]
    lines = _lines(partial)
    assert grouped == ["group-00000.parquet"] and INTO_SECOND_GROUP <= lines < ROWS_PER_GROUP

    run_id = partial.name[1 : -len(".partial")]
    resumed = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--resume", run_id, "--results", str(results), "--json"],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["samples"] == SAMPLES
    assert summary["link"]["samples_from_journal"] == ROWS_PER_GROUP + lines
    assert summary["bit_exact"] == {"tflm": SAMPLES}
    table = pq.read_table(results / run_id / "samples.parquet", columns=["sample_id", "device_output", "tflm_output"])
    with open(data / "labels.csv") as f:
        in_dataset_order = [line.split(",")[0] for line in f.read().splitlines()[1:]]
    assert table.column("sample_id").to_pylist() == in_dataset_order
    device, host = table.column("device_output").to_pylist(), table.column("tflm_output").to_pylist()
    assert sum(d == h for d, h in zip(device, host, strict=True)) == SAMPLES

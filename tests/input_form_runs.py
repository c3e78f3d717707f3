"""`harness eval` through the real command line with HARNESS_INPUT_FORMS set (harness/link/input_forms.py): the
sample rows and the run's link counters, for the tests that compare raw inputs with their smallest exact form."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

VWW_INPUT_BYTES = 96 * 96 * 3 * 4  # the default model's float32 input


def run_eval(results, forms: str, *args: str) -> subprocess.CompletedProcess:
    env = os.environ.copy() | {"HARNESS_INPUT_FORMS": forms}
    command = [sys.executable, "-m", "harness", "eval", *args, "--results", str(results)]
    return subprocess.run(command, capture_output=True, text=True, env=env)


def eval_rows_and_link(results, forms: str, *args: str) -> tuple[list[dict], dict]:
    done = run_eval(results, forms, *args)
    assert done.returncode == 0, done.stderr
    (run,) = results.iterdir()
    rows = pq.read_table(run / "samples.parquet").to_pylist()
    return rows, json.loads((run / "summary.json").read_text())["link"]


def assert_widened_as_raw(raw: tuple[list[dict], dict], widened: tuple[list[dict], dict], min_ratio: float) -> None:
    """The same device outputs (and the host's), every sample widened, the wire bytes down by at least min_ratio."""
    (raw_rows, raw_link), (rows, link) = raw, widened
    assert rows and [r["device_output"] for r in rows] == [r["device_output"] for r in raw_rows]
    assert all(r["device_output"] == r["tflm_output"] for r in rows)
    assert (link["inputs_encoded"], raw_link["inputs_encoded"]) == (len(rows), 0)
    assert link["input_tensor_bytes"] == raw_link["input_tensor_bytes"] == len(rows) * VWW_INPUT_BYTES
    assert raw_link["input_wire_bytes"] / link["input_wire_bytes"] > min_ratio

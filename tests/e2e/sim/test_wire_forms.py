"""The default model on the virtual board: its float32 input (integers 0..255) crosses the wire as one byte per
element and is widened on the board (harness/link/input_forms.py); the outputs are those of the raw input."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

from tests.conftest import assert_refused_in_one_line


def _eval(results, forms: str | None):
    env = os.environ.copy()
    env.pop("HARNESS_INPUT_FORMS", None)
    if forms:
        env["HARNESS_INPUT_FORMS"] = forms
    args = ["eval", "--board", "sim", "--limit", "6", "--results", str(results)]
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env)


def _run(results, forms: str | None):
    done = _eval(results, forms)
    assert done.returncode == 0, done.stderr
    (run,) = results.iterdir()
    rows = pq.read_table(run / "samples.parquet").to_pylist()
    return rows, json.loads((run / "summary.json").read_text())["link"]


def test_default_model_widened_on_the_board_gives_the_same_outputs_at_a_quarter_of_the_bytes(tmp_path, vww_model):
    raw_rows, raw_link = _run(tmp_path / "raw", "raw")
    rows, link = _run(tmp_path / "smallest", None)
    assert len(rows) == 6
    assert [r["device_output"] for r in rows] == [r["device_output"] for r in raw_rows]
    assert all(r["device_output"] == r["tflm_output"] for r in rows)
    assert (link["inputs_encoded"], raw_link["inputs_encoded"]) == (6, 0)
    assert link["input_tensor_bytes"] == raw_link["input_tensor_bytes"] == 6 * 110_592
    per_sample, raw_per_sample = link["input_wire_bytes"] / 6, raw_link["input_wire_bytes"] / 6
    assert 27_648 < per_sample < 27_648 * 1.02 and 110_592 < raw_per_sample < 110_592 * 1.02
    assert raw_per_sample / per_sample > 3.9


def test_an_unknown_input_forms_setting_is_refused_in_one_line(tmp_path):
    done = _eval(tmp_path / "bad", "zip")
    assert_refused_in_one_line(done, "HARNESS_INPUT_FORMS is 'zip'", "raw or smallest")
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())

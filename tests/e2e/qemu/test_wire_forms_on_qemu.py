"""The default model's float32 input widened on QEMU's Cortex-M7 from one byte per element: the same outputs as
the raw float32 input, a quarter of the bytes on the wire (harness/link/input_forms.py)."""

import json
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from tests.conftest import TFLM_TREE, needs_tflm_tree

pytestmark = [
    pytest.mark.qemu,
    needs_tflm_tree,
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
]


def _eval(results, forms: str):
    env = os.environ.copy() | {"HARNESS_INPUT_FORMS": forms}
    args = ["eval", "--board", "qemu_m7", "--tflm", TFLM_TREE, "--limit", "3", "--no-pools", "--results", str(results)]
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    (run,) = results.iterdir()
    rows = pq.read_table(run / "samples.parquet").to_pylist()
    return rows, json.loads((run / "summary.json").read_text())["link"]


def test_widened_input_gives_the_raw_inputs_outputs_on_qemu_m7(tmp_path, vww_model):
    raw_rows, raw_link = _eval(tmp_path / "raw", "raw")
    rows, link = _eval(tmp_path / "smallest", "smallest")
    assert [r["device_output"] for r in rows] == [r["device_output"] for r in raw_rows]
    assert all(r["device_output"] == r["tflm_output"] for r in rows)
    assert (link["inputs_encoded"], raw_link["inputs_encoded"]) == (len(rows), 0)
    assert link["input_tensor_bytes"] == raw_link["input_tensor_bytes"] == len(rows) * 110_592
    assert raw_link["input_wire_bytes"] / link["input_wire_bytes"] > 3.8

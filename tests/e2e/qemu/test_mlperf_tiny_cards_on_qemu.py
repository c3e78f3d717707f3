"""The four MLPerf Tiny cards on their reference models (the shared fixtures), end to end: harness-built
EEMBC DUT firmware on qemu_m7 (`--protocol eembc`, firmware/app/eembc_main.c with firmware/eembc/ee_dut.c),
harness's own firmware on qemu_m7, and the virtual board with either protocol give the host's outputs, sample
for sample, and the same outputs as each other (ad01 only through its DUT: its score is the DUT's).
Datasets in the MLPerf Tiny runner's layout, a few samples each."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import FIXTURE_MODELS, TFLM_TREE, needs_tflm_tree
from tests.mlperf_tiny_datasets import ad01_folder, runner_folder

pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    pytest.mark.skipif(
        not (FIXTURE_MODELS / "mlperf_tiny_reference").is_dir(),
        reason="needs ../shared/fixtures/models/mlperf_tiny_reference (the MLPerf Tiny reference models)",
    ),
    needs_tflm_tree,
]

FILES = 4  # kws01, ic01: runner files a card
AD01_FILES = 2  # one normal, one anomaly: AUC over two files
AD01_FRAMES = 24  # 24 frames of 128 features a file (the runner's have 200): 20 windows of 5 frames every 1


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("runner-datasets")
    return {
        "mlperf_tiny_vww01": ["--limit", "3"],  # the demo images
        "mlperf_tiny_kws01": ["--dataset", str(runner_folder(root, "kws01", 490, 12, 1, FILES))],
        "mlperf_tiny_ic01": ["--dataset", str(runner_folder(root, "ic01", 3072, 10, 2, FILES))],
        "mlperf_tiny_ad01": ["--dataset", str(ad01_folder(root, AD01_FILES, AD01_FRAMES))],
    }


def _eval(tmp_path: Path, name: str, card: str, board: str, protocol: str, data: list[str]) -> tuple[dict, dict]:
    results = tmp_path / name
    tflm = ["--tflm", TFLM_TREE] if board != "sim" else []
    done = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--board", board, "--protocol", protocol, "--model", card,
         *tflm, *data, "--results", str(results)],
        capture_output=True, text=True, timeout=900, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = results.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    rows = pq.read_table(run / "samples.parquet", columns=["sample_id", "device_output"]).to_pylist()
    return summary, {row["sample_id"]: row["device_output"] for row in rows}


@pytest.mark.parametrize("card", ["mlperf_tiny_vww01", "mlperf_tiny_kws01", "mlperf_tiny_ic01"])
def test_a_classification_card_gives_the_hosts_outputs_through_both_protocols(tmp_path, datasets, card):
    data = datasets[card]
    outputs = {}
    for board, protocol in (("qemu_m7", "eembc"), ("qemu_m7", "harness"), ("sim", "eembc"), ("sim", "harness")):
        summary, outputs[board, protocol] = _eval(tmp_path, f"{board}-{protocol}", card, board, protocol, data)
        assert summary["bit_exact"]["tflm"] == summary["samples"] == len(outputs[board, protocol]) > 0
    first = outputs["qemu_m7", "eembc"]
    assert all(found == first for found in outputs.values())  # the same samples, the same bytes


def test_ad01_windows_and_auc_on_its_reference_model(tmp_path, datasets):
    data = datasets["mlperf_tiny_ad01"]
    qemu, qemu_out = _eval(tmp_path, "qemu", "mlperf_tiny_ad01", "qemu_m7", "eembc", data)
    sim, sim_out = _eval(tmp_path, "sim", "mlperf_tiny_ad01", "sim", "eembc", data)
    windows = AD01_FILES * (AD01_FRAMES - 4)
    assert qemu["samples"] == len(qemu_out) == windows
    assert qemu["bit_exact"]["tflm"] == windows  # every printed score is the host's, byte for byte
    assert qemu_out == sim_out
    assert qemu["anomaly"]["device"]["auc"] == sim["anomaly"]["device"]["auc"] is not None

"""The four MLPerf Tiny cards on their reference models (the shared fixtures), end to end: harness-built
EEMBC DUT firmware on qemu_m7 (`--protocol eembc`, firmware/app/eembc_main.c with firmware/eembc/ee_dut.c),
harness's own firmware on qemu_m7, and the virtual board with either protocol give the host's outputs, sample
for sample, and the same outputs as each other (ad01's score computed on the host from the output tensor
where harness's firmware runs the model).
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
from tests.mlperf_tiny_datasets import card_arguments

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
    return card_arguments(tmp_path_factory.mktemp("runner-datasets"), FILES, AD01_FILES, AD01_FRAMES, images=3)


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


ROUTES = (("qemu_m7", "eembc"), ("qemu_m7", "harness"), ("sim", "eembc"), ("sim", "harness"))
CARDS = ["mlperf_tiny_vww01", "mlperf_tiny_kws01", "mlperf_tiny_ic01", "mlperf_tiny_ad01"]


@pytest.mark.parametrize("card", CARDS)
def test_a_card_gives_the_hosts_outputs_through_both_protocols(tmp_path, datasets, card):
    """Every route gives the host's outputs and the same bytes: for ad01 the score, which the DUT computes
    from the model's output and harness computes on the host from the output tensor its firmware answers."""
    data = datasets[card]
    outputs, summaries = {}, {}
    for route in ROUTES:
        summaries[route], outputs[route] = _eval(tmp_path, "-".join(route), card, *route, data)
        assert summaries[route]["bit_exact"]["tflm"] == summaries[route]["samples"] == len(outputs[route]) > 0
    first = outputs[ROUTES[0]]
    assert all(found == first for found in outputs.values())  # the same samples, the same bytes
    if card == "mlperf_tiny_ad01":  # windows and AUC on its reference model, the same through every route
        assert len(first) == AD01_FILES * (AD01_FRAMES - 4)
        anomaly = summaries[ROUTES[0]]["anomaly"]["device"]
        assert anomaly["auc"] is not None
        assert all(summary["anomaly"]["device"] == anomaly for summary in summaries.values())


# qemu_m4 (mps2-an386, Cortex-M4 with fpv4-sp-d16): the same DUT firmware, built for the M4; two cards keep it cheap
# (all four were checked by hand, docs/eembc.md).
M4_CARDS = os.environ.get("HARNESS_M4_CARDS", "mlperf_tiny_kws01,mlperf_tiny_ad01").split(",")


@pytest.mark.parametrize("card", M4_CARDS)
def test_qemu_m4_runs_the_cards_dut_bit_exact_with_the_host(tmp_path, datasets, card):
    summary, outputs = _eval(tmp_path, "qemu_m4", card, "qemu_m4", "eembc", datasets[card])
    assert summary["bit_exact"]["tflm"] == summary["samples"] == len(outputs) > 0


def test_flash_boots_the_cards_dut_on_qemu_and_checks_its_name_and_profile():
    done = subprocess.run(
        [sys.executable, "-m", "harness", "flash", "--board", "qemu_m4", "--protocol", "eembc", "--model",
         "mlperf_tiny_kws01", "--tflm", TFLM_TREE, "--json"],
        capture_output=True, text=True, timeout=900, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["answers"] == {"name": "qemu_m4", "profile": "kws01", "timestamps": "m-lap-us- lines"}
    assert found["protocol"] == "eembc" and found["eembc_mode"] == "performance"

"""`harness eval --protocol eembc` of an ad01-shaped card end to end: on the virtual board, whose C DUT
(firmware/eembc/ee_dut.c) quantizes the float features and prints the reconstruction error as the reference
AD submission does, and on a real-board port served by tests/reference_dut.py as ad01. Device and host
scores agree byte for byte, samples.parquet has a row per window, AUC and Top-1 are over files."""

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from harness.eval.anomaly import auc, top1
from tests.autoencoder_model import write_ad01_setup
from tests.reference_dut import ReferenceDut

pytestmark = pytest.mark.slow
WINDOWS = 196


def _eval(tmp_path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--protocol", "eembc", "--results", str(tmp_path / "r"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)


def _run_folder(tmp_path):
    (folder,) = (tmp_path / "r").glob("*/summary.json")
    return folder.parent


def _check_run(tmp_path, files: int, windows: int) -> dict:
    folder = _run_folder(tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    table = pq.read_table(folder / "samples.parquet").to_pydict()
    assert len(table["sample_id"]) == windows == summary["samples"]  # one row per window
    assert table["flag_offset"][:3] == [0, 512, 1024]
    assert summary["bit_exact"]["tflm"] == windows  # the DUT's printed score is the host's, byte for byte
    device = np.array(table["device_score"])
    assert np.array_equal(device, np.array(table["tflm_score"]))
    assert all(f"{v:0.3f}" == f"{np.float32(v):0.3f}" for v in device)  # 3 decimals, as printed
    # The file-level figures, recomputed from the rows: each file the mean of its windows.
    per_file = device.reshape(files, -1).mean(axis=1)
    labels = np.array(table["label"]).reshape(files, -1)[:, 0]
    anomaly = summary["anomaly"]
    assert anomaly["device"]["files"] == files and anomaly["device"]["windows"] == windows
    assert anomaly["device"]["auc"] == pytest.approx(auc(labels, per_file))
    assert anomaly["device"]["top1_percent"] == pytest.approx(top1(labels, per_file))
    assert anomaly["host"]["tflm"] == anomaly["device"]
    # No threshold in the benchmark: no window is given a class, so no accuracy, F1 or confusion is claimed.
    assert set(table["device_prediction"]) == {-1} and summary["confusion"] is None
    assert all(entry["device"]["accuracy"] is None for entry in summary["subsets"].values())
    return summary


def test_ad01_on_the_virtual_boards_c_dut(tmp_path):
    card, dataset = write_ad01_setup(tmp_path, files=4)
    done = _eval(tmp_path, "--board", "sim", "--model", str(card), "--dataset", str(dataset))
    assert done.returncode == 0, done.stderr
    summary = _check_run(tmp_path, 4, 4 * WINDOWS)
    manifest = json.loads((_run_folder(tmp_path) / "manifest.json").read_text())
    assert manifest["device"]["firmware_build_id"] == "eembc:ad01"  # the sim's profile: the card's [eembc] model
    assert summary["anomaly"]["device"]["auc"] == 1.0  # the anomalous files are louder: all rank above
    assert "AUC" in done.stdout and "Top-1" in done.stdout and "anomaly detection over files" in done.stdout
    report = tmp_path / "report.html"
    made = subprocess.run(
        [sys.executable, "-m", "harness", "runs", "report", str(_run_folder(tmp_path)), "--out", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    assert "Anomaly detection over files" in report.read_text()
    run = str(_run_folder(tmp_path))
    compared = subprocess.run(
        [sys.executable, "-m", "harness", "runs", "compare", run, run], capture_output=True, text=True, timeout=300
    )
    assert compared.returncode == 0, compared.stderr
    assert "anomaly over files (4 → 4): AUC 1.000 → 1.000" in compared.stdout and "accuracy" not in compared.stdout


def test_ad01_on_a_reference_dut_port(tmp_path):
    from harness.model.references import TflmReference
    from harness.model.tflite_file import read_tflite

    card, dataset = write_ad01_setup(tmp_path, files=2)
    reference = TflmReference(read_tflite(tmp_path / "ad01_test.tflite"))
    dut = ReferenceDut(
        model="ad01", input_size=2560, network=lambda v: np.frombuffer(reference.run(v.reshape(1, 640)), np.int8)
    )
    with dut:
        done = _eval(
            tmp_path, "--board", "nucleo_h743", "--port", dut.path, "--model", str(card), "--dataset", str(dataset)
        )
    assert done.returncode == 0, done.stderr
    _check_run(tmp_path, 2, 2 * WINDOWS)
    assert dut.commands.count("db load 2560") == 2 * WINDOWS and not dut.crashed


def test_harness_firmware_gives_the_duts_scores(tmp_path):
    """With harness's protocol the board runs the model only (its input quantized on the host, its output
    tensor answered) and the host computes the DUT's score from that output: the same scores, byte for byte,
    as the C DUT prints, and the same file-level figures."""
    card, dataset = write_ad01_setup(tmp_path, files=2)
    runs = {}
    for protocol in ("eembc", "harness"):
        results = tmp_path / protocol
        command = [sys.executable, "-m", "harness", "eval", "--board", "sim", "--protocol", protocol]
        command += ["--model", str(card), "--dataset", str(dataset), "--results", str(results)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        (folder,) = [path.parent for path in results.glob("*/summary.json")]
        table = pq.read_table(folder / "samples.parquet").to_pydict()
        runs[protocol] = table, json.loads((folder / "summary.json").read_text())
        runs[protocol + " manifest"] = json.loads((folder / "manifest.json").read_text())
    (dut, dut_summary), (ours, our_summary) = runs["eembc"], runs["harness"]
    assert len(ours["device_score"]) == 2 * WINDOWS
    assert ours["device_score"] == dut["device_score"] == ours["tflm_score"]
    assert our_summary["bit_exact"]["tflm"] == 2 * WINDOWS
    assert our_summary["anomaly"] == dut_summary["anomaly"]
    assert runs["eembc manifest"]["device"]["firmware_build_id"] == "eembc:ad01"
    assert runs["harness manifest"]["device"]["firmware_build_id"] != "eembc:ad01"  # harness firmware ran it


def test_perf_times_the_first_ad01_window_as_its_dut_takes_it(tmp_path):
    """perf sends what the DUT computes from: the first window's 2,560 float32 bytes, not int8 tensor bytes; to
    harness firmware, the model's input tensor the host quantized from them."""
    card, dataset = write_ad01_setup(tmp_path, files=2)
    perf = [sys.executable, "-m", "harness", "perf", "--model", str(card), "--dataset", str(dataset), "--runs", "3"]
    done = subprocess.run([*perf, "--protocol", "eembc", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["runs"]) == 3
    ours = subprocess.run([*perf, "--json"], capture_output=True, text=True, timeout=300)  # the model alone
    assert ours.returncode == 0, ours.stderr
    assert len(json.loads(ours.stdout)["runs"]) == 3


def test_a_limit_that_cuts_a_file_leaves_it_out_of_auc_and_says_so(tmp_path):
    card, dataset = write_ad01_setup(tmp_path, files=4)
    done = _eval(tmp_path, "--board", "sim", "--model", str(card), "--dataset", str(dataset), "--limit", "300")
    assert done.returncode == 0, done.stderr
    anomaly = json.loads((_run_folder(tmp_path) / "summary.json").read_text())["anomaly"]["device"]
    assert (anomaly["files"], anomaly["partial_files"], anomaly["windows"]) == (1, 1, WINDOWS)
    assert anomaly["auc"] is None  # one whole file, one class
    assert "1 files left out: not every window of theirs was evaluated" in done.stdout

"""The unmodified MLPerf Tiny runner (mlcommons/tiny benchmark/runner, a checkout named by
HARNESS_MLPERF_RUNNER, with scikit-learn importable) accepts harness-built DUT firmware of the four cards on
qemu_m7 in accuracy and performance mode, and its scores are TFLM's on the host. The runner finds boards by USB
id, which QEMU's pseudo-terminal lacks: a wrapper registers the devices file's DUT at the pty (docs/eembc.md)."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.boards import get_board
from harness.firmware.build import build_firmware
from harness.firmware.eembc_dut import EembcDutBuild
from harness.firmware.tflm_tree import TflmTree
from harness.model.cards import load_card
from harness.model.dut import ReconstructionError
from harness.model.references import TflmReference
from harness.model.tflite_file import read_tflite
from tests.conftest import FIXTURE_MODELS, TFLM_TREE, needs_tflm_tree

RUNNER = os.environ.get("HARNESS_MLPERF_RUNNER")
REFERENCE_MODELS = FIXTURE_MODELS / "mlperf_tiny_reference"
pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    pytest.mark.skipif(
        not (RUNNER and (Path(RUNNER) / "main.py").is_file()),
        reason="needs HARNESS_MLPERF_RUNNER: a copy of mlcommons/tiny benchmark/runner (not in this repository)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("sklearn") is None,
        reason="needs scikit-learn importable (the runner imports it): pip install --target D, then PYTHONPATH=D",
    ),
    pytest.mark.skipif(not REFERENCE_MODELS.is_dir(), reason=f"needs {REFERENCE_MODELS}"),
    needs_tflm_tree,
]
# The runner's test key: (bytes of one of its files, classes). Random inputs, one file a class (its AUC needs
# every class), at least five (its performance script takes a new file for each of five windows, ad01's too:
# with fewer it fails on the missing file); ad01: AD01_FILES of AD01_FRAMES frames of 128 float32 features,
# normal and anomalous in turn.
FILES = {"vww01": (27648, 2), "kws01": (490, 12), "ic01": (3072, 10)}
AD01_FILES = 5
AD01_FRAMES = 8  # 4 windows of 5 frames every 1 a file (the runner's files have 200 frames: 196 windows)
DRIVE = """import os, runpy, sys, types
os.chdir(sys.argv.pop(1))
sys.path.insert(0, ".")
import device_manager
pty = sys.argv.pop(1)
def scan(self):
    for d in self._device_defs:
        if d.get("type") == "dut":
            self._add_device(types.SimpleNamespace(device=pty), d)
    for d in self.values():
        self._instantiate(d)
device_manager.DeviceManager.scan = scan
sys.argv[0] = "main.py"
runpy.run_path("main.py", run_name="__main__")
"""


def _firmware(key: str) -> Path:
    card = load_card(f"mlperf_tiny_{key}")
    model = read_tflite(REFERENCE_MODELS / card.file_name)
    dut = EembcDutBuild.for_card(card.eembc, "reconstruction_mse" if key == "ad01" else "model")
    return build_firmware(get_board("qemu_m7"), model, TflmTree(Path(TFLM_TREE)), dut=dut).elf


def _dataset(folder: Path, key: str) -> Path:
    """`key`'s folder in the runner's layout: random files and y_labels.csv."""
    rng = np.random.default_rng(7)
    (folder / key).mkdir(parents=True)
    rows = []
    if key == "ad01":
        for i in range(AD01_FILES):
            label = i % 2
            values = rng.normal(-20 + 6 * label, 6 + 4 * label, (AD01_FRAMES, 128)).astype(np.float32)
            values.tofile(folder / key / f"{'anomaly' if label else 'normal'}_{i}.bin")
            rows.append(f"{'anomaly' if label else 'normal'}_{i}.bin,2,{label},2560,512")
    else:
        size, classes = FILES[key]
        for i in range(max(5, classes)):
            rng.integers(0, 256, size, dtype=np.uint8).tofile(folder / key / f"s{i}.bin")
            rows.append(f"s{i}.bin,{classes},{i % classes}")
    (folder / key / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def _run_runner(tmp_path: Path, key: str, mode: str) -> str:
    runner = tmp_path / "runner"
    shutil.copytree(RUNNER, runner)
    (tmp_path / "drive.py").write_text(DRIVE)
    (tmp_path / "devices.yaml").write_text("- name: harness-qemu\n  type: dut\n  baud: 115200\n")
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", get_board("qemu_m7").qemu.machine, "-display", "none", "-monitor", "none",
         "-icount", "shift=7", "-kernel", str(_firmware(key)), "-serial", "pty", "-serial",
         f"file:{tmp_path / 'uart1.log'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        pty = re.search(r"/dev/pts/\d+", qemu.stdout.readline()).group(0)
        done = subprocess.run(
            [sys.executable, str(tmp_path / "drive.py"), str(runner), pty, f"--device_list={tmp_path / 'devices.yaml'}",
             f"--dataset_path={_dataset(tmp_path / 'datasets', key)}", f"--mode={mode}"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    finally:
        qemu.kill()
        qemu.wait()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _host_printed(key: str, model, reference: TflmReference, data: bytes, printed: list[str]) -> list[float]:
    """What the DUT should print for `data`, computed on the host with TFLM, at the printed precision."""
    if key == "ad01":
        features = np.frombuffer(data, np.float32).reshape(model.input.shape)
        score = ReconstructionError(model.input, model.output).result(reference.run, features)
        return [float(np.frombuffer(score, np.float32)[0])]
    raw = np.frombuffer(data, np.uint8)
    uint8_input = load_card(f"mlperf_tiny_{key}").eembc.input == "uint8"
    tensor = ((raw.astype(np.int16) - 128) if uint8_input else raw.view(np.int8)).astype(np.int8)
    out8 = np.frombuffer(reference.run(tensor.reshape(model.input.shape)), np.int8).astype(np.int32)
    spec = model.output
    values = [np.float32((v - spec.zero_point) * np.float32(spec.scale)) for v in out8]
    places = [len(text.strip().partition(".")[2]) for text in printed]
    return [float(f"{value:.{n}f}") for value, n in zip(values, places, strict=True)]


@pytest.mark.parametrize("key", ["vww01", "kws01", "ic01", "ad01"])
def test_accuracy_mode_scores_are_the_hosts(tmp_path, key):
    out = _run_runner(tmp_path, key, "a")
    loads = re.findall(r"Loading file (\S+) segment (\d+)", out)
    printed = re.findall(r"m-results\s*:\s*\[([^\]]*)\]", out)
    windows = AD01_FILES * (AD01_FRAMES - 4) if key == "ad01" else max(5, FILES[key][1])
    assert len(loads) == len(printed) == windows and "AUC = " in out
    card = load_card(f"mlperf_tiny_{key}")
    model = read_tflite(REFERENCE_MODELS / card.file_name)
    reference = TflmReference(model)
    for (name, segment), line in zip(loads, printed, strict=True):
        data = (tmp_path / "datasets" / key / name).read_bytes()
        if key == "ad01":
            data = data[512 * int(segment) : 512 * int(segment) + 2560]
        texts = line.split(",")
        device = np.float32([float(v) for v in texts])  # ad01's score is a float32: compared as one
        assert device.tolist() == np.float32(_host_printed(key, model, reference, data, texts)).tolist(), name


@pytest.mark.parametrize("key", ["vww01", "kws01", "ic01", "ad01"])
def test_performance_mode_completes(tmp_path, key):
    """Five windows, each over 10 s of the DUT's (virtual) time. The runner's median line, unless its own wall
    clock saw the five in under 10 s (QEMU may run them faster than their virtual time): its ERROR 2 then."""
    out = _run_runner(tmp_path, key, "p")
    runtimes = [float(w) for w in re.findall(r"Runtime      :\s*([\d.]+) sec\.", out)]  # the windows' lines
    throughputs = [float(w) for w in re.findall(r"Throughput   :\s*([\d.]+) inf\./sec\.", out)]
    assert len(runtimes) == len(throughputs) == 5 and min(runtimes) > 10 and min(throughputs) > 0
    median = re.search(r"Median throughput is\s*([\d.]+) inf\./sec\.", out)
    too_fast = "ERROR 2 - loop exited before 10 seconds elapsed" in out
    assert bool(median) != too_fast, out[-2000:]
    windows_median = f"ERROR 2; median of the windows {float(np.median(throughputs)):.3f} inf./sec."
    said = median.group(0) if median else windows_median
    print(f"{key}: {said}; windows {throughputs} inf./sec. over {runtimes} s")

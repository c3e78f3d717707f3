"""The unmodified MLPerf Tiny runner (mlcommons/tiny benchmark/runner, a checkout named by
HARNESS_MLPERF_RUNNER, with scikit-learn importable) accepts harness-built vww01 DUT firmware on qemu_m7 in
accuracy and performance mode, and its scores are TFLM's on the host. The runner finds boards by USB id,
which QEMU's pseudo-terminal lacks: a wrapper registers the devices file's DUT at the pty (docs/eembc.md)."""

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
from harness.model.references import TflmReference
from harness.model.tflite_file import read_tflite
from tests.conftest import FIXTURE_MODELS, TFLM_TREE, needs_tflm_tree

RUNNER = os.environ.get("HARNESS_MLPERF_RUNNER")
VWW01 = FIXTURE_MODELS / "mlperf_tiny_reference" / "vww_96_int8.tflite"
pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    pytest.mark.skipif(
        not (RUNNER and (Path(RUNNER) / "main.py").is_file()),
        reason="needs HARNESS_MLPERF_RUNNER: a copy of mlcommons/tiny benchmark/runner (not in this repository)",
    ),
    pytest.mark.skipif(not VWW01.is_file(), reason=f"needs {VWW01}"),
    needs_tflm_tree,
]

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


@pytest.fixture(scope="module")
def firmware():
    card = load_card("mlperf_tiny_vww01")
    board = get_board("qemu_m7")
    model = read_tflite(VWW01)
    return build_firmware(board, model, TflmTree(Path(TFLM_TREE)), dut=EembcDutBuild.for_card(card.eembc)).elf


def _dataset(folder: Path) -> Path:
    """Five vww01 inputs: the runner's performance script takes a new file for each of its five windows."""
    rng = np.random.default_rng(7)
    (folder / "vww01").mkdir(parents=True)
    rows = []
    for i in range(5):
        rng.integers(0, 256, 27648, dtype=np.uint8).tofile(folder / "vww01" / f"s{i}.bin")
        rows.append(f"s{i}.bin,2,{i % 2}")
    (folder / "vww01" / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def _run_runner(tmp_path: Path, elf: Path, mode: str) -> str:
    runner = tmp_path / "runner"
    shutil.copytree(RUNNER, runner)
    (tmp_path / "drive.py").write_text(DRIVE)
    (tmp_path / "devices.yaml").write_text("- name: harness-qemu\n  type: dut\n  baud: 115200\n")
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", get_board("qemu_m7").qemu.machine, "-display", "none", "-monitor", "none",
         "-icount", "shift=7", "-kernel", str(elf), "-serial", "pty", "-serial", f"file:{tmp_path / 'uart1.log'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        pty = re.search(r"/dev/pts/\d+", qemu.stdout.readline()).group(0)
        done = subprocess.run(
            [sys.executable, str(tmp_path / "drive.py"), str(runner), pty, f"--device_list={tmp_path / 'devices.yaml'}",
             f"--dataset_path={_dataset(tmp_path / 'datasets')}", f"--mode={mode}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        qemu.kill()
        qemu.wait()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_accuracy_mode_scores_are_the_hosts(tmp_path, firmware):
    out = _run_runner(tmp_path, firmware, "a")
    files = re.findall(r"Loading file (\S+) segment", out)
    printed = re.findall(r"m-results\s*:\s*\[([^\]]*)\]", out)
    assert len(files) == len(printed) == 5 and "AUC = " in out
    model = read_tflite(VWW01)
    reference, spec = TflmReference(model), model.output
    for name, line in zip(files, printed, strict=True):
        pixels = np.fromfile(tmp_path / "datasets" / "vww01" / name, np.uint8)
        int8 = (pixels.astype(np.int16) - 128).astype(np.int8).reshape(model.input.shape)
        out8 = np.frombuffer(reference.run(int8), np.int8).astype(np.int32)
        host = [float(f"{np.float32((v - spec.zero_point) * np.float32(spec.scale)):f}") for v in out8]
        assert [float(v) for v in line.split(",")] == host, name


def test_performance_mode_completes(tmp_path, firmware):
    out = _run_runner(tmp_path, firmware, "p")
    assert "Median throughput is" in out

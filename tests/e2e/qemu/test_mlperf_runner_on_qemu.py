"""The unmodified MLPerf Tiny runner (mlcommons/tiny benchmark/runner, a checkout named by
HARNESS_MLPERF_RUNNER, with scikit-learn importable) accepts harness-built vww01 DUT firmware on qemu_m7 in
accuracy and performance mode, and its scores are TFLM's on the host. The runner finds boards by USB id,
which QEMU's pseudo-terminal lacks: a wrapper registers the devices file's DUT at the pty (docs/eembc.md)."""

import re
import shutil
import subprocess
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
from tests.mlperf_runner import HAS_RUNNER, NO_RUNNER, run_runner

VWW01 = FIXTURE_MODELS / "mlperf_tiny_reference" / "vww_96_int8.tflite"
pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    pytest.mark.skipif(not HAS_RUNNER, reason=NO_RUNNER),
    pytest.mark.skipif(not VWW01.is_file(), reason=f"needs {VWW01}"),
    needs_tflm_tree,
]


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
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", get_board("qemu_m7").qemu.machine, "-display", "none", "-monitor", "none",
         "-icount", "shift=7", "-kernel", str(elf), "-serial", "pty", "-serial", f"file:{tmp_path / 'uart1.log'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        pty = re.search(r"/dev/pts/\d+", qemu.stdout.readline()).group(0)
        return run_runner(tmp_path, pty, _dataset(tmp_path / "datasets"), mode, name="harness-qemu")
    finally:
        qemu.kill()
        qemu.wait()


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

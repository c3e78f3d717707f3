"""The unmodified MLPerf Tiny runner (tests/mlperf_runner.py: a copy named by HARNESS_MLPERF_RUNNER, with
scikit-learn importable) accepts harness-built DUT firmware of the four cards on qemu_m7 and qemu_m4 in
accuracy and performance mode, and every score it logs is TFLM's on the host. The runner finds boards by USB
id, which QEMU's pseudo-terminal lacks: a wrapper registers the devices file's DUT at the pty (docs/eembc.md)."""

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
from harness.model.dut import dut_computation
from harness.model.tflite_file import read_tflite
from tests.conftest import FIXTURE_MODELS, TFLM_TREE, needs_tflm_tree
from tests.mlperf_runner import HAS_RUNNER, NO_RUNNER, assert_scores_are_the_hosts, run_runner
from tests.mlperf_tiny_datasets import ad01_folder, runner_folder

REFERENCE = FIXTURE_MODELS / "mlperf_tiny_reference"
pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    pytest.mark.skipif(not HAS_RUNNER, reason=NO_RUNNER),
    pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"needs {REFERENCE} (the MLPerf Tiny reference models)"),
    needs_tflm_tree,
]
# The runner's test key: (bytes of one of its files, classes). Every class once (the runner's AUC needs each),
# at least five files (its performance script takes a new file for each of its five windows, ad01's too).
FILES = {"vww01": (27648, 2), "kws01": (490, 12), "ic01": (3072, 10)}
AD01_FILES, AD01_FRAMES = 5, 8  # 4 windows a file (the runner's files have 200 frames: 196)


def _dataset(root: Path, key: str) -> Path:
    root.mkdir()
    if key == "ad01":
        return ad01_folder(root, AD01_FILES, AD01_FRAMES)
    size, classes = FILES[key]
    return runner_folder(root, key, size, classes, seed=7, files=max(5, classes))


def _run_runner(tmp_path: Path, board: str, elf: Path, folder: Path, mode: str) -> str:
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", get_board(board).qemu.machine, "-display", "none", "-monitor", "none",
         "-icount", "shift=7", "-kernel", str(elf), "-serial", "pty", "-serial", f"file:{tmp_path / 'uart1.log'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        pty = re.search(r"/dev/pts/\d+", qemu.stdout.readline()).group(0)
        return run_runner(tmp_path, pty, folder.parent, mode, name="harness-qemu")
    finally:
        qemu.kill()
        qemu.wait()


@pytest.mark.parametrize("mode", ["a", "p"])
@pytest.mark.parametrize("key", ["vww01", "kws01", "ic01", "ad01"])
@pytest.mark.parametrize("board", ["qemu_m7", "qemu_m4"])
def test_the_runner_scores_the_qemu_dut_as_the_host(tmp_path, board, key, mode):
    card = load_card(f"mlperf_tiny_{key}")
    model = read_tflite(REFERENCE / card.file_name)
    computation = dut_computation(card, model)
    dut = EembcDutBuild.for_card(card.eembc, computation.kind)
    elf = build_firmware(get_board(board), model, TflmTree(Path(TFLM_TREE)), dut=dut).elf
    folder = _dataset(tmp_path / "datasets", key)
    out = _run_runner(tmp_path, board, elf, folder, mode)
    scores = assert_scores_are_the_hosts(out, folder, model, computation, dut.uint8_input)
    if mode == "a":
        windows = AD01_FILES * (AD01_FRAMES - 4) if key == "ad01" else len(list(folder.glob("*.bin")))
        assert len(scores) == windows and "AUC = " in out
        return
    # Five windows, each over 10 s of the DUT's (virtual) time. The runner's median line, unless its own wall
    # clock saw the five in under 10 s (QEMU may run them faster than their virtual time): its ERROR 2 then.
    runtimes = [float(w) for w in re.findall(r"Runtime      :\s*([\d.]+) sec\.", out)]
    throughputs = [float(w) for w in re.findall(r"Throughput   :\s*([\d.]+) inf\./sec\.", out)]
    assert len(runtimes) == len(throughputs) == 5 and min(runtimes) > 10 and min(throughputs) > 0
    median = re.search(r"Median throughput is\s*([\d.]+) inf\./sec\.", out)
    assert bool(median) != ("ERROR 2 - loop exited before 10 seconds elapsed" in out), out[-2000:]
    said = median.group(0) if median else f"ERROR 2; median of the windows {float(np.median(throughputs)):.3f}"
    print(f"{board} {key}: {said}; windows {throughputs} inf./sec. over {runtimes} s")

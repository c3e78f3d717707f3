"""The unmodified MLPerf Tiny runner (tests/mlperf_runner.py: a copy named by HARNESS_MLPERF_RUNNER) accepts
the EEMBC C DUT on the real stm32duino HAL compiled for this machine (hal_stm32duino, harness-built as
`harness eval --board hal_stm32duino --protocol eembc` builds it) for the four MLPerf Tiny cards on their
reference models, in accuracy and performance mode; every score it logs is TFLM's on the host."""

import re
from pathlib import Path

import numpy as np
import pytest

from harness.boards import get_board
from harness.device.hosted_hal import hosted_board_process
from harness.firmware.eembc_dut import EembcDutBuild
from harness.model.cards import load_card
from harness.model.dut import dut_computation
from harness.model.tflite_file import read_tflite
from tests.conftest import FIXTURE_MODELS
from tests.mlperf_runner import HAS_RUNNER, NO_RUNNER, assert_scores_are_the_hosts, host_scores, run_runner
from tests.mlperf_tiny_datasets import ad01_folder, runner_folder

REFERENCE = FIXTURE_MODELS / "mlperf_tiny_reference"
pytestmark = [
    pytest.mark.skipif(not HAS_RUNNER, reason=NO_RUNNER),
    pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"needs {REFERENCE} (the MLPerf Tiny reference models)"),
]

# The runner's test key: the card, its reference model, and a dataset in the runner's layout (every class
# once for the runner's AUC; at least five files: performance mode takes a new one for each of its windows).
CARDS = {
    "vww01": ("mlperf_tiny_vww01", "vww_96_int8.tflite"),
    "kws01": ("mlperf_tiny_kws01", "kws_ref_model.tflite"),
    "ic01": ("mlperf_tiny_ic01", "pretrainedResnet_quant.tflite"),
    "ad01": ("mlperf_tiny_ad01", "ad01_int8.tflite"),
}
AD01_FILES, AD01_FRAMES = 6, 6  # 2 windows a file (2,560 bytes every 512)


def _dataset(root: Path, key: str) -> Path:
    root.mkdir()
    if key == "ad01":
        return ad01_folder(root, AD01_FILES, AD01_FRAMES)
    size, classes = {"vww01": (27648, 2), "kws01": (490, 12), "ic01": (3072, 10)}[key]
    return runner_folder(root, key, size, classes, seed=len(key) + classes, files=max(classes, 5))


@pytest.mark.parametrize("mode", ["a", "p"])
@pytest.mark.parametrize("key", list(CARDS))
def test_the_runner_scores_the_hosted_dut_as_the_host(tmp_path, key, mode):
    card_name, model_file = CARDS[key]
    card, model = load_card(card_name), read_tflite(REFERENCE / model_file)
    computation = dut_computation(card, model)
    dut = EembcDutBuild.for_card(card.eembc, computation.kind)
    folder = _dataset(tmp_path / "datasets", key)
    board = get_board("hal_stm32duino").with_link(baudrate=dut.baud)
    with hosted_board_process(board, model, dut=dut) as pty:
        out = run_runner(tmp_path, pty, folder.parent, mode, name="hal-stm32duino")
    scores = assert_scores_are_the_hosts(out, folder, model, computation, dut.uint8_input)
    if mode == "a":
        windows = AD01_FILES * (AD01_FRAMES - 4) if key == "ad01" else len(list(folder.glob("*.bin")))
        assert len(scores) == windows and "AUC = " in out
    else:
        assert len(scores) == 5 and len(re.findall(r"ulp-mlperf:\s+Throughput\s*:\s*[\d.]+ inf\./sec\.", out)) == 5
        assert "Median throughput is" in out or "ERROR 2 - loop exited before 10 seconds" in out


def test_host_scores_tell_one_input_from_another():
    """The comparison can fail: another input's host scores differ."""
    card, model = load_card("mlperf_tiny_ic01"), read_tflite(REFERENCE / "pretrainedResnet_quant.tflite")
    computation = dut_computation(card, model)
    one, other = (np.random.default_rng(seed).integers(0, 256, 3072, np.uint8).tobytes() for seed in (1, 2))
    assert host_scores(model, computation, one, True) != host_scores(model, computation, other, True)

"""`harness eval --protocol eembc` on a real board whose firmware behaves as the MLPerf Tiny reference vww01 DUT
(tests/reference_dut.py on a pseudo-terminal, named with --port): the float32 card a user tried is refused
before any sample, in one line naming the card to use, and nothing harness sent crashed the DUT."""

import subprocess
import sys

from tests.conftest import fixture_model
from tests.reference_dut import ReferenceDut


def _eval(tmp_path, dut: ReferenceDut, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--board", "nucleo_h743", "--port", dut.path]
    command += ["--protocol", "eembc", "--limit", "2", "--results", str(tmp_path / "r"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_the_float32_vww_card_on_reference_vww01_firmware_is_refused_naming_the_card(tmp_path):
    fixture_model("mlperf_tiny/visual_wake_words.tflite")
    with ReferenceDut() as dut:
        done = _eval(tmp_path, dut, "--model", "mlperf_tiny_vww")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert "96x96x3 uint8 (27648 bytes" in lines[0] and "--model mlperf_tiny_vww01" in lines[0]
    assert not dut.crashed and dut.commands[1:] == ["name", "profile", "timestamp"]
    assert not any(c.startswith("db") for c in dut.commands)  # refused before any sample was sent


def test_energy_mode_reference_firmware_is_named(tmp_path):
    fixture_model("mlperf_tiny/visual_wake_words.tflite")
    with ReferenceDut(energy=True) as dut:
        done = _eval(tmp_path, dut, "--model", "mlperf_tiny_vww", "--baud", "9600")
    assert done.returncode == 2, done.stderr
    assert "energy-mode firmware" in done.stderr and "EE_CFG_ENERGY_MODE 0" in done.stderr
    assert "--meter" in done.stderr and not dut.crashed

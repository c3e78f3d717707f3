"""The MLPerf Tiny / EEMBC C DUT (firmware/app/eembc_main.c, firmware/eembc/ee_dut.c) on the real stm32duino
HAL compiled for this machine (hal_stm32duino, harness/device/hosted_hal.py): the four cards on their
reference models (the shared fixtures) give the host's outputs sample for sample and the virtual board's
eembc outputs; `harness perf --protocol eembc` times it; energy mode pulses the board file's timestamp pin
(the Arduino stand-in records each pin transition)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import serial

from harness.boards import get_board
from harness.device.hosted_hal import build_library, hosted_board_process, power_on
from harness.errors import UserError
from harness.firmware.eembc_dut import EembcDutBuild
from harness.model.cards import load_card
from harness.model.tflite_file import read_tflite
from tests.conftest import FIXTURE_MODELS
from tests.mlperf_tiny_datasets import card_arguments

REFERENCE = FIXTURE_MODELS / "mlperf_tiny_reference"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"needs {REFERENCE} (the MLPerf Tiny reference models)")

FILES = 2  # kws01, ic01: runner files a card
AD01_FRAMES = 7  # two short files (one normal, one anomalous) of 3 windows each
SILENT_READS = 120  # the DUT said nothing for this many reads of the port's timeout: it hangs
PULSE = ["LOW", "2us", "HIGH"]  # a timestamp: the pin pulled low, held 2 us, released


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, list[str]]:
    return card_arguments(tmp_path_factory.mktemp("runner-datasets"), FILES, 2, AD01_FRAMES, images=2)


def _harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=600, env=os.environ.copy()
    )


def _eval(results: Path, card: str, board: str, data: list[str]) -> tuple[dict, dict]:
    done = _harness("eval", "--board", board, "--protocol", "eembc", "--model", card, *data, "--results", str(results))
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = results.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    rows = pq.read_table(run / "samples.parquet", columns=["sample_id", "device_output"]).to_pylist()
    return summary, {row["sample_id"]: row["device_output"] for row in rows}


@pytest.mark.parametrize("card", ["mlperf_tiny_vww01", "mlperf_tiny_kws01", "mlperf_tiny_ic01", "mlperf_tiny_ad01"])
def test_a_card_gives_the_hosts_and_the_virtual_boards_outputs(tmp_path, datasets, card):
    hosted, hosted_out = _eval(tmp_path / "hosted", card, "hal_stm32duino", datasets[card])
    sim, sim_out = _eval(tmp_path / "sim", card, "sim", datasets[card])
    samples = 2 * (AD01_FRAMES - 4) if card == "mlperf_tiny_ad01" else 2
    assert hosted["samples"] == len(hosted_out) == samples
    assert hosted["bit_exact"]["tflm"] == samples  # every output (ad01: every printed score) is the host's
    assert hosted_out == sim_out  # the same samples, the same bytes
    if card == "mlperf_tiny_ad01":
        assert hosted["anomaly"]["device"]["auc"] == sim["anomaly"]["device"]["auc"] is not None


@pytest.mark.parametrize("board", ["hal_espidf", "hal_mbed"])
def test_the_other_hals_run_the_dut_too(tmp_path, board):
    summary, outputs = _eval(tmp_path, "mlperf_tiny_vww01", board, ["--limit", "1"])
    assert summary["samples"] == len(outputs) == summary["bit_exact"]["tflm"] == 1


def test_energy_mode_is_refused_where_no_glue_drives_a_timestamp_pin():
    dut = EembcDutBuild(mode="energy")
    with pytest.raises(UserError, match="hal_espidf: EEMBC energy mode needs a timestamp pin"):
        build_library(get_board("hal_espidf"), dut)


def test_perf_times_the_dut():
    done = _harness(
        "perf", "--board", "hal_stm32duino", "--protocol", "eembc", "--model", "mlperf_tiny_vww01",
        "--runs", "5", "--warmups", "1", "--json", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout)
    assert len(figures["runs"]) == 5 and figures["stats"]["median"] > 0 and figures["source"] == "sim"


def _command(port: serial.Serial, text: str | None) -> list[str]:
    """Send `text%` (None: nothing, the boot banner); the DUT's lines up to its m-ready."""
    if text is not None:
        port.write(text.encode() + b"%")
    lines: list[str] = []
    silent_reads = 0  # a guard against a hung DUT (reads of the port's timeout with no line), not a speed
    while not lines or lines[-1] != "m-ready":
        assert silent_reads < SILENT_READS, f"no m-ready after {text}%: {lines}"
        line = port.readline().decode(errors="replace").strip()
        silent_reads = 0 if line else silent_reads + 1
        if line:
            lines.append(line)
    return lines


def _load(port: serial.Serial, data: bytes) -> None:
    """`db load N`, then the bytes as hex, 32 a command (the DUT keeps 80 characters of one)."""
    assert _command(port, f"db load {len(data)}")[-1] == "m-ready"
    for i in range(0, len(data), 32):
        assert "e-" not in " ".join(_command(port, "db " + data[i : i + 32].hex()))


def _pin_events(log: Path, pin: str) -> list[str]:
    """The pin's transitions (OUTPUT, HIGH, LOW) and the firmware's microsecond waits ("2us"), in order."""
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [what if name == pin else f"{what}us" for _, name, what in rows if name in (pin, "delay")]


@pytest.mark.parametrize("pin", [None, "D5"])  # the board file's pin (D7), and another one
def test_energy_mode_pulses_the_timestamp_pin_once_a_timestamp(tmp_path, monkeypatch, pin):
    board = get_board("hal_stm32duino")
    if pin:
        board = dataclasses.replace(board, eembc=dataclasses.replace(board.eembc, timestamp_pin=pin))
    pin = board.eembc.timestamp_pin
    log = tmp_path / "pins.log"
    monkeypatch.setenv("HARNESS_HOSTED_PIN_LOG", str(log))
    dut = EembcDutBuild.for_card(load_card("mlperf_tiny_kws01").eembc, mode="energy")
    model = read_tflite(REFERENCE / "kws_ref_model.tflite")
    # Powered on once the port is open at the DUT's rate, as the energy monitor powers it: the banner is whole.
    with (
        hosted_board_process(board, model, dut=dut, powered=False) as path,
        serial.Serial(path, 9600, timeout=1) as port,
    ):
        assert _pin_events(log, pin) == []  # not booted yet
        power_on(path)
        assert _command(port, None) == ["m-timestamp-mode-energy", "m-init-done", "m-ready"]
        assert _pin_events(log, pin) == ["OUTPUT", "HIGH", *PULSE]  # set up high, the boot timestamp
        for count in range(1, 4):
            assert _command(port, "timestamp") == ["m-ready"]  # no line: the pin is the timestamp
            assert _pin_events(log, pin) == ["OUTPUT", "HIGH"] + PULSE * (1 + count)
        _load(port, bytes(range(256)) + bytes(234))  # kws01's 490 input bytes
        infer = _command(port, "infer 1 0")
        assert "m-infer-done" in infer and "m-lap-us" not in " ".join(infer)
        assert _pin_events(log, pin) == ["OUTPUT", "HIGH"] + PULSE * 6  # infer: one before, one after
    stamps = [int(line.split()[0]) for line in log.read_text().splitlines() if line.split()[1] == pin]
    held = [high - low for low, high in zip(stamps[2::2], stamps[3::2], strict=True)]
    assert len(held) == 6 and min(held) >= 2000  # delayMicroseconds(2) between the edges

"""A board swapped behind its port in the middle of a run: the virtual board on a named port (a symlink, as
/dev/serial/by-id/… is) is killed, and the port now leads to another virtual board running another model with
the same tensors. Its HELLO after the reconnect must not pass: the board is retired (its samples go to the
other board, the retirement is in summary.json), and with no board left the run fails. No sample of the other
model is stored."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import exits
from harness.device.processes import pty_board_process
from harness.model.tflite_file import read_tflite
from tests.conftest import error_lines, fixture_model
from tests.sim_device import BOARD, journaled, sim_board_command, swappable_board, write_board_file

MODEL, OTHER = "wv_quality_k_2_c_3", "wv_quality_k_4_c_5"  # both uint8[1, 50, 50, 3] -> uint8[1, 2]
INVOKE_MS = 150  # a sample lasts this long at least: the run is going when the board is swapped
SAMPLES = 12


@pytest.fixture
def boards_env(tmp_path, private_cache) -> dict:
    write_board_file(tmp_path)
    return os.environ | {"HARNESS_BOARDS_DIR": str(tmp_path)}


def _model(name: str) -> Path:
    return fixture_model(f"wake_vision_zoo/{name}.tflite")


def _swapped_mid_run(tmp_path: Path, env: dict, *other_ports: str) -> subprocess.CompletedProcess:
    """An eval over the symlinked port (and `other_ports`); once the board behind it has run a sample, the
    link leads to a board running OTHER and the first board is killed. The eval's outcome."""
    link, results = tmp_path / "board-a", tmp_path / "r"
    with swappable_board(link, _model(MODEL), _model(OTHER), INVOKE_MS) as swap:
        ports = ",".join([str(link), *other_ports])
        command = [sys.executable, "-m", "harness", "eval", "--model", MODEL, "--board", BOARD, "--port", ports]
        command += ["--limit", str(SAMPLES), "--json", "--results", str(results)]
        harness = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not journaled(results, str(link)) and harness.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert harness.poll() is None, "the run ended before the board could be swapped"
            swap()
            out, err = harness.communicate(timeout=180)
        finally:
            harness.kill()
    return subprocess.CompletedProcess(command, harness.returncode, out.decode(), err.decode())


def test_a_board_swapped_mid_run_is_retired_and_its_samples_go_to_the_other(tmp_path, boards_env):
    with pty_board_process(sim_board_command(_model(MODEL), INVOKE_MS), "board b", 30) as other:
        done = _swapped_mid_run(tmp_path, boards_env, other)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == SAMPLES
    # every stored output is the run's model's: the swapped board's answers never count
    assert all(count == SAMPLES for count in summary["bit_exact"].values()), summary["bit_exact"]
    swapped, kept = summary["boards"]
    assert swapped["name"] == str(tmp_path / "board-a") and kept["failure"] is None
    expected, other = read_tflite(_model(MODEL)).sha256[:16], read_tflite(_model(OTHER)).sha256[:16]
    assert swapped["retired"]["expected"]["model_sha256_prefix"] == expected
    assert swapped["retired"]["said"]["model_sha256_prefix"] == other
    assert swapped["retired"]["said"]["firmware_build_id"] == swapped["retired"]["expected"]["firmware_build_id"]
    assert f"model {other}" in swapped["failure"]
    assert swapped["samples"] + kept["samples"] == SAMPLES


def test_with_no_board_left_the_run_fails_naming_what_the_board_said(tmp_path, boards_env):
    done = _swapped_mid_run(tmp_path, boards_env)
    assert done.returncode == exits.LINK, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [line for line in error_lines(done) if not line.startswith("eval ")]  # progress lines
    other = read_tflite(_model(OTHER)).sha256[:16]
    assert line.startswith("harness: link error:") and f"model {other}" in line, line
    assert read_tflite(_model(MODEL)).sha256[:16] in line and "--resume" in line, line

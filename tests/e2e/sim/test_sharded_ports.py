"""One eval over several named ports (`--port A,B`): boards reached the way real ones are (virtual boards run
as standalone processes, described by a board file of kind "device"). The same results as one virtual board;
boards running different firmware are refused before any sample."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.device.processes import pty_board_process
from tests.conftest import error_lines, fixture_model
from tests.sim_device import BOARD, sim_board_command, write_board_file

MODEL = "wv_quality_k_2_c_3"


@pytest.fixture
def boards_env(tmp_path, private_cache) -> dict:
    import os

    write_board_file(tmp_path)
    return os.environ | {"HARNESS_BOARDS_DIR": str(tmp_path)}


def _eval(tmp_path: Path, env: dict, results: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--model", MODEL, "--limit", "10", "--json"]
    command += ["--results", str(tmp_path / results), *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _outputs(run_dir: str) -> dict[str, bytes]:
    rows = pq.read_table(Path(run_dir) / "samples.parquet").to_pylist()
    return {row["sample_id"]: row["device_output"] for row in rows}


def test_two_ports_share_a_run_and_give_the_virtual_boards_results(tmp_path, boards_env):
    command = sim_board_command(fixture_model(f"wake_vision_zoo/{MODEL}.tflite"))
    with pty_board_process(command, "board a", 30) as a, pty_board_process(command, "board b", 30) as b:
        done = _eval(tmp_path, boards_env, "ports", "--board", BOARD, "--port", f"{a},{b}")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [share["name"] for share in summary["boards"]] == [str(a), str(b)]
    sim = _eval(tmp_path, boards_env, "sim", "--board", "sim")
    assert sim.returncode == 0, sim.stderr
    assert _outputs(summary["run_dir"]) == _outputs(json.loads(sim.stdout)["run_dir"])


def test_boards_running_different_firmware_are_refused_before_any_sample(tmp_path, boards_env):
    model = fixture_model(f"wake_vision_zoo/{MODEL}.tflite")
    with (
        pty_board_process(sim_board_command(model, build_id="fw-one"), "board a", 30) as a,
        pty_board_process(sim_board_command(model, build_id="fw-two"), "board b", 30) as b,
    ):
        done = _eval(tmp_path, boards_env, "r", "--board", BOARD, "--port", f"{a},{b}")
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done)
    assert f"board {b} runs firmware build fw-two, board {a} runs fw-one" in line, line
    assert "flash every board of the run with the same firmware" in line
    results = tmp_path / "r"
    assert not results.exists() or not any(results.iterdir())

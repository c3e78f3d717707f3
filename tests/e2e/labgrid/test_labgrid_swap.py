"""A board swapped behind a labgrid place in the middle of a run (tests/labgrid_farm.py: a real coordinator,
exporter and ser2net on loopback): the place's port is a path that, once the virtual board behind it is
killed, leads to another virtual board running another model with the same tensors, as a reused
pseudo-terminal or a re-plugged board would. The reconnected link's HELLO says so: the board is retired and,
with no board left, the run fails naming what the board said; no sample of the other model is stored."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.cli import exits
from harness.model.tflite_file import read_tflite
from tests.conftest import error_lines, fixture_model
from tests.labgrid_farm import labgrid_farm, needs_labgrid
from tests.sim_device import BOARD, journaled, swappable_board, write_board_file

pytestmark = needs_labgrid

MODEL, OTHER = "wv_quality_k_2_c_3", "wv_quality_k_4_c_5"  # both uint8[1, 50, 50, 3] -> uint8[1, 2]
PLACE = "lab-swap"
INVOKE_MS = 150


@pytest.fixture
def port_link():
    """Where the place's port is: labgrid's exporter serves only paths under /dev/ (a symlink in /dev/shm)."""
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("needs a writable /dev/shm for the place's port (labgrid exports paths under /dev/ only)")
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="harness-swap-") as folder:
        yield Path(folder) / "board-port"


def test_a_board_swapped_behind_a_place_is_retired_and_the_run_fails(tmp_path, private_cache, port_link):
    write_board_file(tmp_path)
    link, results = port_link, tmp_path / "r"
    model, other = (fixture_model(f"wake_vision_zoo/{name}.tflite") for name in (MODEL, OTHER))
    with swappable_board(link, model, other, INVOKE_MS) as swap, labgrid_farm({PLACE: str(link)}) as farm:
        env = farm.env | {"HARNESS_BOARDS_DIR": str(tmp_path), "HARNESS_LABGRID_WAIT_SECONDS": "2"}
        command = [sys.executable, "-m", "harness", "eval", "--model", MODEL, "--board", BOARD]
        command += ["--labgrid-place", PLACE, "--limit", "12", "--results", str(results)]
        harness = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not journaled(results, PLACE) and harness.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if harness.poll() is not None:
                raise AssertionError(f"the run ended before the swap: {harness.stderr.read().decode()}")
            swap()
            out, err = harness.communicate(timeout=180)
        finally:
            harness.kill()
    done = subprocess.CompletedProcess(command, harness.returncode, out.decode(), err.decode())
    assert done.returncode == exits.LINK, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [line for line in error_lines(done) if not line.startswith("eval ")]  # progress lines
    assert f"model {read_tflite(other).sha256[:16]}, not {read_tflite(model).sha256[:16]}" in line, line
    # The samples kept for --resume are the run's model's: each output as the host's TFLM computes it.
    (journal,) = results.glob(".*.partial/journal.jsonl")
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert entries and all(entry["device_output"] == entry["host"]["tflm"] for entry in entries)

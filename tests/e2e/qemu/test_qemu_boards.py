"""Our ARM firmware on QEMU's Cortex-M7 and Cortex-M4 boards, over a local TCP socket."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.boards import board_ids, get_board
from harness.device.launch import ConnectOptions, connect
from harness.device.qemu import emulated_instructions
from tests.conftest import TFLM_TREE, assert_refused_in_one_line, needs_tflm_tree

pytestmark = pytest.mark.skipif(
    not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
    reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
)


def _qemu_pids() -> set[int]:
    """QEMU processes running firmware from this test session's cache (not any other QEMU on the host)."""
    ours = os.environ["HARNESS_CACHE_DIR"].encode()
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "qemu-system-arm" and ours in (
                    entry / "cmdline"
                ).read_bytes():
                    pids.add(int(entry.name))
            except OSError:
                pass
    return pids


def _harness(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        **kwargs,
    )


@pytest.mark.parametrize("board", board_ids("emulated"))
def test_link_test_moves_a_quarter_mebibyte_with_every_crc_checked(board):
    before = _qemu_pids()
    proc = _harness("boards", "link-test", "--board", board, "--bytes", str(1 << 18))  # both ways together
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "payload mismatches 0, resends " in out and "corrupt frames 0" in out  # resends: recovered timeouts
    sent = int(out.split("sent ")[1].split(" B")[0].replace(",", ""))
    received = int(out.split("received ")[1].split(" B")[0].replace(",", ""))
    assert sent + received >= 1 << 18 and sent == received
    assert "kB/s" in out
    assert "instructions (emulated, QEMU -icount); repeat exactly" in out.replace("\n", " ")
    assert not (_qemu_pids() - before), "QEMU was left running"


def test_instruction_counts_repeat_across_separate_qemu_runs():
    board = get_board("qemu_m7")
    counts = []
    for _ in range(2):
        with connect(board, None) as client:
            timing, _ = client.perf(500)
            counts.append(emulated_instructions(timing.ticks, timing.tick_hz, board))
    assert counts[0] == counts[1] and counts[0] > 0


def test_flash_boots_self_test_firmware_and_reports_it(monkeypatch):
    monkeypatch.delenv("HARNESS_TFLM_TREE", raising=False)  # without a TFLM tree: self-test firmware
    proc = _harness("flash", "--board", "qemu_m4")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "qemu_m4: firmware qemu_m4-" in out and "self-test firmware" in out


def test_ctrl_c_stops_qemu(tmp_path):
    before = _qemu_pids()
    proc = _harness("boards", "link-test", "--board", "qemu_m7", "--bytes", str(50 << 20))
    deadline = time.monotonic() + 60
    while not (_qemu_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _qemu_pids() - before, "QEMU never started"
    time.sleep(1)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:  # a harness that ignored the signal must not outlive the test (it would take QEMU with it)
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err
    time.sleep(0.5)
    assert not (_qemu_pids() - before), "QEMU was left running after Ctrl-C"


def test_killed_harness_takes_qemu_with_it():
    before = _qemu_pids()
    proc = _harness("boards", "link-test", "--board", "qemu_m7", "--bytes", str(50 << 20))
    deadline = time.monotonic() + 60
    while not (_qemu_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while _qemu_pids() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_qemu_pids() - before), "QEMU outlived a killed harness"


def test_eval_on_qemu_without_tflm_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_TFLM_TREE"}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--board", "qemu_m7", "--limit", "1", "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    # Without --tflm harness fetches the board's tree: here from conftest's closed loopback mirror (offline).
    assert_refused_in_one_line(done, "could not fetch", "--tflm PATH")


@needs_tflm_tree
def test_vww_on_qemu_matches_tflm_python_on_every_sample_dealt_over_two_boards(tmp_path, vww_model):
    """12 of distance_far's demo samples dealt over two QEMU boards (the whole demo set takes 7 minutes on one)."""
    import json

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "eval",
            "--board",
            "qemu_m7",
            "--tflm",
            TFLM_TREE,
            "--subset",
            "distance_far",
            "--no-pools",  # the members only: this test is about sharding, not F1
            "--limit",
            "12",
            "--boards",
            "2",
            "--results",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=3000,
    )
    assert done.returncode == 0, done.stderr
    run = next(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["bit_exact"]["tflm"] == summary["samples"] > 0
    assert summary["latency"]["source"] == "emulated" and summary["latency"]["instructions"]["min"] > 0
    shares = summary["boards"]
    assert [b["name"] for b in shares] == ["qemu_m7#1", "qemu_m7#2"] and not any(b["failure"] for b in shares)
    assert sum(b["samples"] for b in shares) == summary["samples"]


@needs_tflm_tree
def test_inference_instruction_counts_repeat_for_the_same_input(small_model):
    import numpy as np

    from harness.firmware.tflm_tree import TflmTree
    from harness.model.tflite_file import read_tflite

    board, model = get_board("qemu_m4"), read_tflite(small_model)
    tensor = np.random.default_rng(7).integers(0, 256, model.input.shape, dtype=np.uint8).tobytes()
    counts = []
    for _ in range(2):
        with connect(board, model, ConnectOptions(tflm=TflmTree(TFLM_TREE))) as client:
            timing = client.run(tensor).timing
            counts.append(emulated_instructions(timing.ticks, timing.tick_hz, board))
    assert counts[0] == counts[1] > 0


def test_firmware_sizes_come_from_the_elf_sections():
    from harness.firmware.build import build_firmware
    from harness.firmware.elf import memory_usage

    usage = memory_usage(build_firmware(get_board("qemu_m4")).elf)
    assert usage["sections"][".text"] > 0 and ".isr_vector" in usage["sections"]
    assert usage["flash_bytes"] >= usage["sections"][".text"] and usage["static_ram_bytes"] > 8000

"""A board that dies in the middle of a command is a link failure (exit 1, one line), not bad input (exit 2):
the virtual board's process is killed while `harness link-test` streams through it, as a QEMU board or a
USB board unplugged would vanish."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.cli import exits
from tests.conftest import error_lines


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_a_board_killed_mid_command_is_a_link_error(tmp_path):
    command = [sys.executable, "-m", "harness", "boards", "link-test", "--board", "sim", "--bytes", "1000000000"]
    harness = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (board := _children(harness.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert board, "the virtual board never started"
        time.sleep(2)  # well into the echo frames
        os.kill(board[0], signal.SIGKILL)
        out, err = harness.communicate(timeout=120)
    finally:
        harness.kill()
    done = subprocess.CompletedProcess(command, harness.returncode, out, err)
    assert done.returncode == exits.LINK, err
    assert "Traceback" not in err
    (line,) = [line for line in error_lines(done) if not line.startswith("link-test sim:")]  # progress lines
    assert line.startswith("harness: link error:") and "port failed" in line, line

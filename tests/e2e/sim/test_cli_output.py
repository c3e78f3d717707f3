"""What `harness eval` shows a person at a terminal: the end-of-run tables at 80 columns, each accuracy with its
interval, and the progress bar on a terminal unless CI says otherwise (CI read as a boolean)."""

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.console import Console

from harness.results.report import print_summary
from harness.results.runs import load_run

SUBSETS = ("all", "depiction_non_person", "distance_medium", "lighting_bright")
# A run of several subsets shows no running accuracy: no one figure it could end on (harness/eval/runner.py _judge).
PLAIN_PROGRESS = re.compile(r"eval sim: \d+/\d+ \(\d+%\), [\d.]+ samples/s, eta \d+:\d\d:\d\d")


def _eval(tmp_path: Path, *extra: str, stderr=subprocess.PIPE, env=None) -> subprocess.Popen:
    command = [sys.executable, "-m", "harness", "eval", "--model", "wv_quality_k_2_c_3", "--subset", ",".join(SUBSETS)]
    return subprocess.Popen(
        [*command, "--limit", "8", "--results", str(tmp_path / "r"), *extra],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env or os.environ.copy(),
    )


def test_the_end_of_run_tables_fit_80_columns_with_each_accuracy_s_interval(tmp_path, small_model):
    process = _eval(tmp_path, "--json")
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    run = load_run(json.loads(out)["run_dir"], tmp_path / "r")
    screen = Console(width=80, file=io.StringIO(), record=True, color_system=None)
    print_summary(run.eval_summary, run.path, screen)
    text = screen.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    for subset in SUBSETS:
        # whole in its cell on one line, in the scores and in the device-against-host table
        rows = [line for line in lines if line.startswith("│") and line.split("│")[1].strip() == subset]
        assert len(rows) == 2, (subset, lines)
        device = run.eval_summary.subsets[subset].device
        low, high = device.accuracy_ci95
        assert f"{100 * device.accuracy:.1f}" in rows[0] and f"{100 * low:.1f}-{100 * high:.1f}" in rows[0], rows[0]
    assert "95 % CI" in text
    # the demo set says what it is: in summary.json, and in the table's title (however the title wraps)
    assert json.loads((run.path / "summary.json").read_text())["synthetic"] == "synthetic images, not Wake Vision"
    assert "— demo (demo-v2): synthetic images, not Wake Vision" in " ".join(text.split())


def _stderr_on_a_terminal(tmp_path: Path, ci: str) -> str:
    """What `harness eval` writes to its stderr when that is an 80-column terminal, with CI set to `ci`."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = _eval(tmp_path, stderr=terminal, env=os.environ.copy() | {"CI": ci, "TERM": "xterm"})
    os.close(terminal)
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([main], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the terminal's other end closed: the command is done
                    break
                if not chunk:
                    break
                shown += chunk
            elif process.poll() is not None:
                break
        process.communicate(timeout=600)
    finally:
        os.close(main)
    assert process.returncode == 0, shown.decode(errors="replace")
    return shown.decode(errors="replace")


@pytest.mark.parametrize("ci", ["false", "0", ""])
def test_ci_false_on_a_terminal_shows_the_progress_bar(tmp_path, small_model, ci):
    shown = _stderr_on_a_terminal(tmp_path, ci)
    assert "━" in shown and "eta" in shown, shown  # rich's bar and its ETA column
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)  # without the terminal's colours
    assert re.search(r"\d+/\d+ +([\d.]+ samples/s +)?(acc [\d.]+ % +)?eta \S+", plain), plain  # none cut at 80
    assert not PLAIN_PROGRESS.search(shown), shown


def test_ci_true_on_a_terminal_prints_plain_progress_lines(tmp_path, small_model):
    shown = _stderr_on_a_terminal(tmp_path, "true")
    assert PLAIN_PROGRESS.search(shown) and "━" not in shown, shown


def test_the_running_accuracy_of_a_one_subset_run_ends_on_the_accuracy_it_reports(tmp_path, small_model):
    """An F1 pool's samples are streamed too, but only the subset's members count, as in its table."""
    command = [sys.executable, "-m", "harness", "eval", "--model", "wv_quality_k_2_c_3", "--subset", "distance_far"]
    command += ["--limit", "8", "--pools", "--results", str(tmp_path / "r")]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    shown = re.findall(r"eval sim: (\d+)/(\d+) .*?, acc ([\d.]+) %", done.stderr)
    assert shown and shown[-1][0] == shown[-1][1], done.stderr  # the last line is the whole run's
    (folder,) = [path for path in (tmp_path / "r").iterdir() if not path.name.startswith(".")]
    run = load_run(folder.name, tmp_path / "r")
    assert shown[-1][2] == f"{100 * run.eval_summary.subsets['distance_far'].device.accuracy:.1f}"

"""The corpora's harness commands, forked from a warm interpreter (tests/forked_cli.py), end exactly as the same
commands in a new interpreter: the same exit code, stdout and stderr; a timeout kills the command's processes."""

import os
import subprocess
import sys
import threading
import time

import pytest

from tests.forked_cli import run_harness_command

COMMANDS = [
    ("--help",),
    ("models", "list"),
    ("models", "list", "--json"),
    ("runs", "list", "--results", "results"),
    ("eval", "--limit", "0"),  # argparse's refusal
    ("eval", "--model", "no_such_card"),
    ("runs", "report", "no-such-run", "--results", "results"),
    ("dataset", "subsets"),
    ("stream", "score", "--ledger", "missing.csv", "--detections", "missing.csv", "--duration-ms", "8000"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_forked_command_ends_as_in_a_new_interpreter(tmp_path, args):
    env = os.environ | {"HARNESS_TEST_FORK": "1", "COLUMNS": "100"}
    forked = run_harness_command(list(args), cwd=tmp_path, env=env, timeout=120)
    fresh = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_a_command_past_its_timeout_is_killed_with_the_processes_it_started(tmp_path, small_model):
    """An eval on the virtual board starts a board process of its own: it goes with the command."""
    before, seen, stop = _processes_named("harness.device.sim_board"), set(), threading.Event()

    def watch():
        while not stop.is_set():
            seen.update(_processes_named("harness.device.sim_board") - before)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            run_harness_command(
                ["eval", "--model", "wv_quality_k_2_c_3", "--emulate-invoke-ms", "60000", "--results", "r"],
                cwd=tmp_path,
                timeout=12,
            )
    finally:
        stop.set()
        watcher.join()
    assert seen, "the virtual board never started: the timeout killed nothing worth checking"
    assert not seen & _processes_named("harness.device.sim_board")


def _processes_named(word: str) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if word.encode() in cmdline.read():
                        found.add(int(entry))
            except OSError:
                continue
    return found

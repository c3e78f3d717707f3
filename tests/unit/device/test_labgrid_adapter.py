"""harness/device/labgrid_adapter.py: harness takes only the labgrid versions it is tested with, declared once
(the adapter's TESTED_LABGRID, the same range as pyproject.toml's farm extra), and refuses another in one line."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from harness.cli.app import main
from harness.device import labgrid_adapter
from harness.device.labgrid_adapter import TESTED_LABGRID, installed_version
from harness.errors import UserError

REPO = Path(__file__).resolve().parents[3]


def test_the_installed_labgrid_is_one_harness_is_tested_with():
    installed = installed_version()
    assert installed is not None, f"labgrid is not installed; the test extra brings labgrid{TESTED_LABGRID}"
    assert SpecifierSet(TESTED_LABGRID).contains(installed, prereleases=True), (
        f"labgrid {installed} is installed, but harness is tested with labgrid{TESTED_LABGRID} "
        "(harness/device/labgrid_adapter.py): test harness against it, then widen TESTED_LABGRID and the farm extra"
    )
    labgrid_adapter.check_version("the test")  # no refusal
    assert labgrid_adapter.labgrid().ClientSession.__name__ == "ClientSession"


def test_the_farm_extra_declares_the_tested_range():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    declared = [Requirement(r) for r in extras["farm"] if Requirement(r).name == "labgrid"]
    assert len(declared) == 1 and declared[0].specifier == SpecifierSet(TESTED_LABGRID), (
        f"pyproject.toml's farm extra asks for {[str(r) for r in declared]}, labgrid_adapter.TESTED_LABGRID is "
        f"{TESTED_LABGRID!r}: make them the same range"
    )


@pytest.mark.parametrize("other", ["25.0.1", "27.0", "24.0"])
def test_another_labgrid_version_is_refused_in_one_line_naming_the_range(monkeypatch, other):
    monkeypatch.setattr(labgrid_adapter, "installed_version", lambda: other)
    monkeypatch.setattr(labgrid_adapter, "_loaded", None)
    with pytest.raises(UserError) as refused:
        labgrid_adapter.labgrid()
    message = str(refused.value)
    assert "\n" not in message
    assert f"labgrid {other} is installed" in message and f"labgrid{TESTED_LABGRID}" in message
    assert message.endswith(f'pip install "labgrid{TESTED_LABGRID}"')
    assert labgrid_adapter._loaded is None  # nothing of labgrid's kept for a later call


def test_a_command_on_another_labgrid_exits_2_with_that_line(monkeypatch, capsys):
    monkeypatch.setattr(labgrid_adapter, "installed_version", lambda: "25.0")
    monkeypatch.setattr(labgrid_adapter, "_loaded", None)
    monkeypatch.setenv("LG_COORDINATOR", "127.0.0.1:9")  # never dialled: the gate refuses first
    assert main(["farm", "release", "nucleo-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "labgrid 25.0 is installed" in err and TESTED_LABGRID in err
    assert "Traceback" not in err


def test_a_missing_labgrid_is_the_line_naming_the_farm_extra(monkeypatch):
    monkeypatch.setattr(labgrid_adapter, "installed_version", lambda: None)
    monkeypatch.setitem(__import__("sys").modules, "labgrid", None)
    with pytest.raises(UserError, match=r"needs labgrid: pip install 'harness\[farm\]'"):
        labgrid_adapter.check_version("--labgrid-place")


BUSY_GRPC_THEN_FORK = """
import subprocess, sys, threading, time
from concurrent import futures
from harness.device.labgrid_adapter import labgrid
from harness.device.processes import die_with_parent
grpc = labgrid().grpc
server = grpc.server(futures.ThreadPoolExecutor(2))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
call = grpc.insecure_channel(f"127.0.0.1:{port}").unary_unary("/no/method")
def busy():
    while True:
        try:
            call(b"", timeout=0.05)
        except grpc.RpcError:
            pass
threading.Thread(target=busy, daemon=True).start()
time.sleep(0.3)
for _ in range(30):
    subprocess.run(["true"], preexec_fn=die_with_parent, check=True)
"""


def test_a_board_process_started_while_grpc_is_busy_prints_nothing(tmp_path):
    """A labgrid place keeps gRPC's threads running; a board process forked meanwhile must not make gRPC's fork
    handlers log on stderr (the Python API prints nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run(
        [sys.executable, "-c", BUSY_GRPC_THEN_FORK], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""

"""What harness/device/labgrid_place.py refuses before it talks to a coordinator (the farm itself:
tests/e2e/labgrid/)."""

import os
import subprocess
import sys

import pytest

from harness.device.labgrid_address import coordinator_address
from harness.device.labgrid_reserve import reserved_places
from harness.device.labgrid_session import WAIT_SECONDS, wait_seconds
from harness.errors import UserError


def test_the_wait_for_a_held_place_is_bounded_and_overridable(monkeypatch):
    monkeypatch.delenv("HARNESS_LABGRID_WAIT_SECONDS", raising=False)
    assert wait_seconds() == WAIT_SECONDS
    monkeypatch.setenv("HARNESS_LABGRID_WAIT_SECONDS", "2.5")
    assert wait_seconds() == 2.5
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("HARNESS_LABGRID_WAIT_SECONDS", bad)
        with pytest.raises(UserError, match=r"HARNESS_LABGRID_WAIT_SECONDS=.* is not a number of seconds"):
            wait_seconds()


def test_a_reservation_of_no_places_is_refused():
    with pytest.raises(UserError, match="at least one labgrid place"), reserved_places({"board": "x"}, 0):
        pass


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.0.0.1:20408", "coordinator.lab:1", "lab-host-1:65535", "[::1]:20408", "[fe80::1]", "lab."],
)
def test_a_coordinator_address_as_labgrid_dials_it_is_taken(monkeypatch, address):
    monkeypatch.setenv("LG_COORDINATOR", address)
    assert coordinator_address() == address


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1:244o8", "the port '244o8' is not a number from 1 to 65535"),
        ("not:a:host", "an IPv6 address goes in brackets"),
        ("::1", "an IPv6 address goes in brackets"),
        ("host:0", "the port '0' is not a number"),
        ("host:65536", "the port '65536' is not a number"),
        ("host:+80", "the port '+80' is not a number"),
        ("host:٨٠", "is not a number"),  # Arabic-Indic digits: int() would take them
        ("host:", "the port after : is missing"),
        (":20408", "the host is missing"),
        ("a_b:1", "'a_b' is not a host name"),
        ("-lab:1", "is not a host name"),
        ("lab host:1", "is not a host name"),
        ("300.1.1.1:1", "'300.1.1.1' is not an IPv4 address"),
        ("[::1", "is not closed"),
        ("[::g]:1", "'::g' is not an IPv6 address"),
        ("[::1]x", "follows the IPv6 address"),
        ("[::1]:99999", "the port '99999' is not a number"),
    ],
)
def test_a_malformed_coordinator_address_is_one_line_naming_the_fix(monkeypatch, address, problem):
    monkeypatch.setenv("LG_COORDINATOR", address)
    with pytest.raises(UserError) as caught:
        coordinator_address()
    message = str(caught.value)
    assert message.startswith(f"LG_COORDINATOR={address!r} is not a coordinator address: ") and problem in message
    assert message.endswith("or unset it") and "\n" not in message


def test_no_coordinator_address_is_labgrids_default(monkeypatch):
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    assert coordinator_address() == "127.0.0.1:20408"
    monkeypatch.setenv("LG_COORDINATOR", "")
    assert coordinator_address() == "127.0.0.1:20408"


def test_a_board_on_a_place_is_told_to_be_flashed_with_commands_that_reach_places(monkeypatch):
    from harness.boards import get_board
    from harness.device.drivers import ConnectOptions, driver_for

    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    board = get_board("nucleo_h743")
    advice = driver_for(board, None, ConnectOptions(labgrid_place="lab-1")).reflash_advice()
    assert "labgrid-client -p lab-1 flashscript" in advice and "harness firmware build --board nucleo_h743" in advice
    assert "on its exporter host with `harness flash --board nucleo_h743 --serial" in advice
    direct = driver_for(board, None, ConnectOptions(port="/dev/ttyACM0")).reflash_advice()
    assert direct == "run `harness flash --board nucleo_h743` with this model first"
    monkeypatch.setenv("LG_COORDINATOR", "127.0.0.1:244o8")
    with pytest.raises(UserError, match=r"LG_COORDINATOR='127\.0\.0\.1:244o8' is not a coordinator address"):
        driver_for(board, None, ConnectOptions(labgrid_place="lab-1"))


def test_a_place_record_tells_a_live_harness_from_one_that_was_killed(monkeypatch, tmp_path):
    from harness.device import labgrid_claims

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LG_COORDINATOR", "127.0.0.1:20408")
    assert labgrid_claims.live_holder("lab-1") is None and labgrid_claims.left_behind("lab-1") is None
    with labgrid_claims.claimed("lab-1"):
        assert labgrid_claims.live_holder("lab-1").startswith(f"pid {os.getpid()} on host ")
        assert labgrid_claims.left_behind("lab-1") is None
        assert labgrid_claims.live_holder("lab-2") is None
    assert labgrid_claims.live_holder("lab-1") is None and labgrid_claims.left_behind("lab-1") is None
    assert not list(tmp_path.rglob(".lock"))  # a released place leaves no record

    # a process that takes the record and is killed (SIGKILL: no cleanup) leaves it behind, not held
    code = "import os, signal\nfrom harness.device import labgrid_claims\nrecord = labgrid_claims.claimed('lab-1')\n"
    code += "record.__enter__()\n"
    code += "print(os.getpid(), flush=True)\nos.kill(os.getpid(), signal.SIGKILL)"
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = killed.stdout.strip()
    assert killed.returncode == -9 and pid, killed.stderr
    assert labgrid_claims.live_holder("lab-1") is None
    assert labgrid_claims.left_behind("lab-1").startswith(f"pid {pid} on host ")
    with labgrid_claims.claimed("lab-1"):  # the next harness takes it over
        assert labgrid_claims.left_behind("lab-1") is None
    assert labgrid_claims.left_behind("lab-1") is None and not list(tmp_path.rglob(".lock"))

    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert labgrid_claims.left_behind("lab-1") is not None
    labgrid_claims.forget("lab-1")  # released by hand
    assert labgrid_claims.left_behind("lab-1") is None
    monkeypatch.setenv("LG_COORDINATOR", "127.0.0.1:20409")  # another farm's place of that name is another place
    with labgrid_claims.claimed("lab-1"):
        monkeypatch.setenv("LG_COORDINATOR", "127.0.0.1:20408")
        assert labgrid_claims.live_holder("lab-1") is None

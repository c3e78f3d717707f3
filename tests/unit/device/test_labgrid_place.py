"""What harness/device/labgrid_place.py refuses before it talks to a coordinator (the farm itself:
tests/e2e/labgrid/)."""

import pytest

from harness.device.labgrid_address import coordinator_address
from harness.device.labgrid_place import WAIT_SECONDS, reserved_places, wait_seconds
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

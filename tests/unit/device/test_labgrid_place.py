"""What harness/device/labgrid_place.py refuses before it talks to a coordinator (the farm itself:
tests/e2e/labgrid/)."""

import pytest

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

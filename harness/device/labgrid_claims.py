"""Which labgrid places a harness process of this machine acquired: a record per place (coordinator and place
name), held with harness/locks.py while the place is, in the cache folder.

labgrid names an acquisition only by host/user, which harness shares with `labgrid-client acquire` and with
other harness processes of the user. The record tells them apart: held (the kernel drops the hold when its
process ends, however it ends): a live harness uses the place; there but not held: the harness that acquired
the place was killed, and its guard with it (a CI runner killing a job's processes), so the acquisition is
stale; no record: the user acquired the place with labgrid's own tools, and it stays theirs."""

import hashlib
from contextlib import AbstractContextManager, suppress
from pathlib import Path

from harness import locks
from harness.device.labgrid_address import coordinator_address
from harness.paths import cache_dir

FOLDER = "labgrid-places"


def _folder(place: str) -> Path:
    key = hashlib.sha256(f"{coordinator_address()}\n{place}".encode()).hexdigest()[:24]
    return cache_dir() / FOLDER / key


def claimed(place: str) -> AbstractContextManager[None]:
    """The place's record, held for the block and removed after it (taken over if a killed harness left it)."""
    folder = _folder(place)
    folder.mkdir(parents=True, exist_ok=True)
    return locks.held(folder, f"the record of labgrid place {place}", leave_found=False)


def live_holder(place: str) -> str | None:
    """`pid N on host H` of the live harness process that holds the place's record, or None."""
    return locks.is_held(_folder(place))


def left_behind(place: str) -> str | None:
    """`pid N on host H` of a harness that acquired the place and no longer runs, or None."""
    return locks.left_behind(_folder(place))


def forget(place: str) -> None:
    """Remove a record no live process holds (its place was released by hand)."""
    if left_behind(place) is not None:
        with suppress(OSError):
            (_folder(place) / locks.LOCK_NAME).unlink()

"""A hostile `.lock` (harness/locks.py): a FIFO, a link to /dev/zero, a folder, a link elsewhere. Taking or
checking the lock never hangs, never raises anything but a one-line UserError naming the file and the fix, and
never follows a link: what a link points at is left exactly as it was."""

import os
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import locks
from harness.errors import UserError
from harness.results.store import check_not_held, hold_run


@contextmanager
def within_seconds(seconds: int) -> Iterator[None]:
    """Fail, instead of hanging the run, if the block takes longer than seconds."""

    def hung(signum, frame):
        raise AssertionError(f"hung for over {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _fifo(lock: Path) -> str:
    os.mkfifo(lock)
    return "a FIFO"


def _dev_zero(lock: Path) -> str:
    lock.symlink_to("/dev/zero")
    return "a link"


def _folder(lock: Path) -> str:
    lock.mkdir()
    return "a folder"


def _link_elsewhere(lock: Path) -> str:
    lock.symlink_to(lock.parent.parent / "elsewhere.txt")
    return "a link"


def _dangling_link(lock: Path) -> str:
    lock.symlink_to(lock.parent.parent / "nothing-here")
    return "a link"


def _socket(lock: Path) -> str:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(lock))
    server.close()
    return "a socket"


HOSTILE: dict[str, Callable[[Path], str]] = {
    "fifo": _fifo,
    "link to /dev/zero": _dev_zero,
    "folder": _folder,
    "link elsewhere": _link_elsewhere,
    "dangling link": _dangling_link,
    "socket": _socket,
}


def _hold(folder: Path) -> None:
    with locks.held(folder, "run folder"):
        pass


def _hold_run(folder: Path) -> None:
    with hold_run(folder):
        pass


TAKERS = {"held": _hold, "is_held": locks.is_held, "hold_run": _hold_run, "check_not_held": check_not_held}


@pytest.fixture
def run_folder(tmp_path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (tmp_path / "elsewhere.txt").write_text("not harness's\n")
    return folder


@pytest.mark.parametrize("taker", TAKERS)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_lock_file_is_refused_in_one_line_naming_it_and_the_fix(run_folder, hostile, taker):
    lock = run_folder / locks.LOCK_NAME
    kind = HOSTILE[hostile](lock)
    with within_seconds(5), pytest.raises(UserError) as refused:
        TAKERS[taker](run_folder)
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"lock file {lock} is {kind}, not a regular file; harness never follows or waits on it: "
        "remove it, then try again"
    )


@pytest.mark.parametrize("hostile", ["link elsewhere", "dangling link"])
def test_a_link_is_never_followed_so_its_target_is_left_as_it_was(run_folder, hostile):
    lock = run_folder / locks.LOCK_NAME
    HOSTILE[hostile](lock)
    target = run_folder.parent / "elsewhere.txt"
    before = target.read_bytes()
    with pytest.raises(UserError, match="is a link"), locks.held(run_folder, "run folder"):
        pass
    assert target.read_bytes() == before
    assert not (run_folder.parent / "nothing-here").exists()
    assert lock.is_symlink()


def test_once_the_hostile_lock_is_removed_the_folder_locks_as_usual(run_folder):
    lock = run_folder / locks.LOCK_NAME
    os.mkfifo(lock)
    with pytest.raises(UserError, match="remove it"):
        check_not_held(run_folder)
    lock.unlink()
    assert locks.is_held(run_folder) is None
    with locks.held(run_folder, "run folder"):
        assert lock.read_text().split()[0] == str(os.getpid())
        assert lock.is_file() and not lock.is_symlink()

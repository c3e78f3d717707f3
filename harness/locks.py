"""A folder held by one writer at a time: a run folder while an eval (or a resume) writes it, a report's folder.

The lock is an advisory `flock` on a `.lock` file in the folder, holding the writer's pid and host, so a second
writer is refused at once with who holds it. The kernel drops the lock when its holder exits, however it exits
(a kill -9 included): a stale `.lock` file never blocks anyone. A holder that lets go removes the file
(one that was killed cannot; the next writer takes the file over). A `.lock` that is not a regular file (a FIFO,
a device, a folder, a link anywhere) is never followed, waited on or read: it is refused, naming it and the fix.
"""

import fcntl
import os
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UserError
from harness.files import what_it_is

LOCK_NAME = ".lock"


def _hostile(lock_file: Path, kind: str) -> UserError:
    return UserError(
        f"lock file {lock_file} is {kind}, not a regular file; harness never follows or waits on it: "
        "remove it, then try again"
    )


def _open_lock(lock_file: Path, flags: int) -> int:
    """A descriptor on lock_file, which must be a regular file: never a link followed, a FIFO waited on or a
    device read (O_NOFOLLOW, O_NONBLOCK, then fstat); anything else refused in one line naming it and the fix."""
    flags |= os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(lock_file, flags, 0o644)
    except FileNotFoundError:
        raise
    except OSError:  # a link (ELOOP under O_NOFOLLOW), a folder opened for writing, a socket, ...
        mode = _mode_of(lock_file)
        if mode is not None and not stat.S_ISREG(mode):
            raise _hostile(lock_file, what_it_is(mode)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _hostile(lock_file, what_it_is(mode))
    return fd


def _mode_of(path: Path) -> int | None:
    """The mode of path itself (a link is not followed), or None when there is nothing to look at."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _holder(fd: int) -> str:
    try:
        words = os.pread(fd, 512, 0).decode("utf-8", errors="replace").split()
    except OSError:
        words = []
    if len(words) >= 2:
        return f"pid {words[0]} on host {words[1]}"
    return "another process"


@contextmanager
def held(folder: Path, what: str, leave_found: bool = True) -> Iterator[None]:
    """Hold folder for writing for the block; if another process holds it, refuse naming its pid and host.
    A `.lock` file this hold made goes with it: a refused or finished writer leaves no file it made behind (one
    left by a writer that was killed stays as it was found, unless leave_found is False: where the file's
    presence means something, as labgrid place records do)."""
    lock_file = folder / LOCK_NAME
    fd, made = _acquire(lock_file, folder, what)
    try:
        yield
    finally:
        release(lock_file, fd, remove=made or not leave_found)


def _acquire(lock_file: Path, folder: Path, what: str) -> tuple[int, bool]:
    """The held descriptor, and whether this call made the file."""
    while True:
        made = _mode_of(lock_file) is None
        fd = _open_lock(lock_file, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise UserError(
                f"{what} {folder} is being written by {holder}; wait for it to finish (or stop it), then try again"
            ) from None
        if _is_the_lock_file(fd, lock_file):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
            return fd, made
        os.close(fd)  # its holder removed it as it let go, after we opened it: take the one there now


def _is_the_lock_file(fd: int, lock_file: Path) -> bool:
    try:
        there = os.lstat(lock_file)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def release(lock_file: Path, fd: int, remove: bool = True) -> None:
    """Remove the lock file when asked (while still holding it, so no one takes a file about to vanish), then
    let go."""
    try:
        if remove and _is_the_lock_file(fd, lock_file):
            lock_file.unlink()
    except OSError:
        pass
    finally:
        os.close(fd)  # closing drops the lock


def left_behind(folder: Path) -> str | None:
    """The pid and host a `.lock` names that no live process holds (its writer was killed), or None: no
    `.lock`, or one that is held."""
    probed = _probe(folder)
    return probed[1] if probed and not probed[0] else None


def is_held(folder: Path) -> str | None:
    """Who holds folder (its pid and host), or None when no one does."""
    probed = _probe(folder)
    return probed[1] if probed and probed[0] else None


def _probe(folder: Path) -> tuple[bool, str] | None:
    """Whether folder's `.lock` is held, and the pid and host it names; None where there is no `.lock`."""
    try:
        fd = _open_lock(folder / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True, _holder(fd)
    else:
        return False, _holder(fd)
    finally:
        os.close(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd)
    finally:
        os.close(fd)
    return None

"""A folder held by one writer at a time: a run folder while an eval (or a resume) writes it, a report's folder.

The lock is an advisory `flock` on a `.lock` file in the folder, holding the writer's pid and host, so a second
writer is refused at once with who holds it. The kernel drops the lock when its holder exits, however it exits
(a kill -9 included): a stale `.lock` file never blocks anyone.
"""

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UserError

LOCK_NAME = ".lock"


def _holder(lock_file: Path) -> str:
    try:
        words = lock_file.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        words = []
    if len(words) >= 2:
        return f"pid {words[0]} on host {words[1]}"
    return "another process"


@contextmanager
def held(folder: Path, what: str) -> Iterator[None]:
    """Hold folder for writing for the block; if another process holds it, refuse naming its pid and host."""
    lock_file = folder / LOCK_NAME
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"{what} {folder} is being written by {_holder(lock_file)}; wait for it to finish (or stop it), "
                "then try again"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing drops the lock


def is_held(folder: Path) -> str | None:
    """Who holds folder (its pid and host), or None when no one does."""
    lock_file = folder / LOCK_NAME
    if not lock_file.is_file():
        return None
    fd = os.open(lock_file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(lock_file)
    finally:
        os.close(fd)
    return None

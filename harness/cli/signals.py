"""SIGTERM (a timeout, a CI job cancelled, `kill`) stops harness as Ctrl-C does: the command unwinds (a board
stopped, a labgrid place released, an eval's samples kept for --resume), says so in one line and exits 143,
as a shell reports SIGTERM. A second SIGTERM while harness unwinds is ignored: the cleanup is let finish
(a SIGKILL still ends it)."""

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_as_interrupt() -> Iterator[list[int]]:
    """For the block, SIGTERM raises KeyboardInterrupt where the command is; yields the signals received."""
    received: list[int] = []

    def stop(signum, _frame) -> None:
        if not received:
            received.append(signum)
            raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # main() called off the main thread: signals are not ours to take there
        yield received
        return
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)

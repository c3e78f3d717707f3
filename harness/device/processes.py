"""Child processes a board lives in (the virtual board, hosted HALs, QEMU): they end with the command."""

import ctypes
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import LinkError

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Popen preexec_fn: Linux kills the child when harness ends, however harness ends."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stop(proc: subprocess.Popen, grace_seconds: float = 5) -> None:
    """End the child and close the pipes harness holds to it (one fd each, per board started)."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


class BoardPty(str):
    """A board's pseudo-terminal path, with the process serving it."""

    pid: int


def _wait_for_line(proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            return proc.stdout.readline().decode().strip()
        if proc.poll() is not None:
            return ""
    return ""


@contextmanager
def pty_board_process(
    command: list[str], what: str, start_seconds: float, closing: list | None = None
) -> Iterator[BoardPty]:
    """Run a board process that prints `pty PATH` once it serves; yields the path for the block. A process
    that does not start is a LinkError naming `what` and its last line of stderr; with `closing`, that
    last line is appended to it when the block ends."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, preexec_fn=die_with_parent
        )

        def last_error_line() -> list[str]:
            errors.seek(0)
            return errors.read().decode(errors="replace").strip().splitlines()[-1:]

        try:
            line = _wait_for_line(proc, start_seconds)
            if not line.startswith("pty "):
                raise LinkError(f"{what} did not start: {(last_error_line() or ['no output'])[0]}")
            path = BoardPty(line.removeprefix("pty "))
            path.pid = proc.pid
            yield path
        finally:
            stop(proc)
            if closing is not None:
                closing.extend(last_error_line())

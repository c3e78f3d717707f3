"""Child processes a board lives in (the virtual board, QEMU): they end with the command."""

import ctypes
import signal
import subprocess
import sys

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

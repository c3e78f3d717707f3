"""Run a firmware build (make or PlatformIO) with its output in a log and its progress on the console.

A first TFLM build compiles hundreds of files and can take many minutes on a small machine: the user
is told what is being built, roughly how long a first build takes, and sees files counted as they
compile. A failure is a build failure naming its log, never a traceback or a silent hang.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from harness import console
from harness.errors import BuildError


class BuildFailed(BuildError):
    """A build that failed or hung, with what a caller needs to word it: the log, the first and the last
    line that says error (or the last line of output), and whether the time bound ended it."""

    def __init__(self, message: str, log: Path, first_error: str = "", last_error: str = "", timed_out=False):
        super().__init__(message)
        self.log, self.first_error, self.last_error, self.timed_out = log, first_error, last_error, timed_out


# Measured on an idle two-core machine: the CMSIS-NN TFLM tree's 317 sources in 4 min (make -j2), a
# whole nucleo_h743 PlatformIO build of ~430 files in the same time.
SECONDS_PER_SOURCE_ON_TWO_CORES = 0.8


def first_build_estimate(sources: int) -> str:
    minutes = sources * SECONDS_PER_SOURCE_ON_TWO_CORES * 2 / max(1, os.cpu_count() or 1) / 60
    took = "under a minute" if minutes < 1 else f"about {round(minutes)} min"
    return f"{took} on {os.cpu_count()} idle cores"


def build_heading(what: str, sources: int) -> str:
    """What a build says before it starts: what, how many files, and how long a first build of that many
    takes (not for a single file)."""
    count = f"{sources} source file" if sources == 1 else f"{sources} source files"
    if sources > 1:
        count += f" (a first build takes {first_build_estimate(sources)}; later ones are cached)"
    return f"harness: building {what}: {count}"


def run_build(
    command: list[str],
    cwd: Path,
    log: Path,
    *,
    what: str,
    label: str,
    sources: int,
    compile_markers: tuple[str, ...],
    timeout: int,
    env: dict | None = None,
) -> None:
    """Run `command`, counting output lines that start with one of `compile_markers` as compiled files.
    `what` heads the build's first line, `label` (short) its progress bar. Raises BuildError (naming the log)
    on failure or when `timeout` seconds pass."""
    if not console.is_quiet():
        print(f"{build_heading(what, sources)}; log: {log}", file=sys.stderr, flush=True)
    timed_out = threading.Event()

    def kill(proc: subprocess.Popen) -> None:
        timed_out.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    with open(log, "w") as out, console.progress(sources, label, unit="files") as advance:
        proc = subprocess.Popen(
            command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        watchdog = threading.Timer(timeout, kill, (proc,))
        watchdog.start()
        try:
            for raw in proc.stdout:
                line = raw.decode(errors="replace")
                out.write(line)
                if line.lstrip().startswith(compile_markers):
                    advance()
            code = proc.wait()
        except BaseException:
            kill(proc)  # Ctrl-C: no compiler left running
            proc.wait()
            raise
        finally:
            watchdog.cancel()
            proc.stdout.close()
    if timed_out.is_set():
        raise BuildFailed(f"building {what} did not finish within {timeout} s; log: {log}", log, timed_out=True)
    if code != 0:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()] or lines[-1:] or ["no output"]
        raise BuildFailed(
            f"build failure: {what} did not build ({errors[0][:200]}); log: {log}", log, errors[0], errors[-1]
        )

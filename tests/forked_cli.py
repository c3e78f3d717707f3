"""`python -m harness ARGS` as a process of its own, started by forking a warm interpreter instead of a new one.

The hostile-input corpora run about 1,500 harness commands, each a fresh Python that spends most of its life
importing numpy, pydantic, pyarrow, scipy and harness before it refuses its input in one line. A zygote (one
per test process) imports them once, runs nothing, and forks a child per command. The child is a real process:
its own pid and process group, the command's working folder and environment, stdin from /dev/null, stdout and
stderr in files; it runs `harness.__main__` as `python -m harness` does and ends as an interpreter ends
(SystemExit's code, an uncaught exception's traceback and exit 1, threads joined, atexit, streams flushed) but
for the modules' teardown. A command that
outlives its timeout is killed with its whole process group and raised as subprocess.TimeoutExpired.

What the zygote imported stays imported in the child, so a module that used another's submodule without
importing it would pass here and fail for a user: the suite's other end-to-end tests start real interpreters.
HARNESS_TEST_FORK=0 runs every command as a plain subprocess (docs/testing.md)."""

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What every command would import again: the third-party libraries and harness's command modules. harness reads
# its environment (HARNESS_*, CI, COLUMNS) when a command runs, never at import, so a module imported here
# behaves in the child as one the child imports itself.
WARM = (
    *("numpy", "pydantic", "pyarrow", "pyarrow.parquet", "scipy.stats", "scipy.optimize", "jinja2", "PIL.Image"),
    *("rich.console", "serial", "matplotlib.pyplot"),
    *("harness.cli.app", "harness.results.html_report", "harness.results.runs", "harness.eval.runner"),
    *("harness.streaming.run", "harness.api.evaluation"),
)
POLL_SECONDS = 0.005
LONGEST_SECONDS = 3600  # a command given no timeout


def run_harness_command(
    args: list[str], cwd: Path | str | None = None, env: dict | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """`python -m harness *args` in `cwd` (default: this one) with exactly `env` (default: this process's), as
    subprocess.run(..., capture_output=True, text=True, stdin=DEVNULL, timeout=timeout) gives it. An environment
    that changes how an interpreter starts (PYTHON*) gets a new interpreter: a fork would not honour it."""
    env = dict(os.environ if env is None else env)
    cwd = Path.cwd() if cwd is None else Path(cwd)
    starts_otherwise = any(env.get(k) != os.environ.get(k) for k in {*env, *os.environ} if k.startswith("PYTHON"))
    if os.environ.get("HARNESS_TEST_FORK", "1") == "0" or starts_otherwise:
        command = [sys.executable, "-m", "harness", *args]
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    return _zygote().run([str(arg) for arg in args], cwd, env, LONGEST_SECONDS if timeout is None else timeout)


class _Zygote:
    def __init__(self):
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from tests.forked_cli import serve; serve()"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )  # in the repository, whose folder is the first on a `-c` interpreter's path: tests/ imports from there
        atexit.register(self.stop)

    def run(self, args: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
        with self._lock, tempfile.TemporaryDirectory(prefix="forked-cli-") as folder:
            out, err = Path(folder) / "out", Path(folder) / "err"
            request = {"args": args, "cwd": str(cwd), "env": env, "timeout": timeout, "out": str(out), "err": str(err)}
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
            answer = self._process.stdout.readline()
            if not answer:
                raise RuntimeError("the forking zygote of tests/forked_cli.py ended")
            ended = json.loads(answer)
            stdout, stderr = _text(out.read_bytes()), _text(err.read_bytes())
        command = [sys.executable, "-m", "harness", *args]
        if ended["timed_out"]:
            raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(command, ended["code"], stdout, stderr)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(10)


def _text(data: bytes) -> str:
    """As subprocess's text mode reads a pipe: the locale's encoding (UTF-8 here), universal newlines."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


_ZYGOTE: _Zygote | None = None


def _zygote() -> _Zygote:
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE._process.poll() is not None:
        _ZYGOTE = _Zygote()
    return _ZYGOTE


# ---------------------------------------------------------------- the zygote's side


def serve() -> None:
    """Import the warm libraries, then a child per request line until stdin ends."""
    import importlib

    for name in WARM:
        with contextlib.suppress(ImportError):  # not installed here: the child imports what it needs
            importlib.import_module(name)
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns: the interpreter ends as the command ends
        code, timed_out = _wait(pid, request["timeout"])
        answers.write(json.dumps({"code": code, "timed_out": timed_out}).encode() + b"\n")
        answers.flush()


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # the command and whatever it started
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), True
        time.sleep(POLL_SECONDS)


def _child(request: dict) -> None:
    import io
    import runpy

    os.setpgid(0, 0)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # The streams a new interpreter makes for a pipe: stdout block-buffered, stderr line-buffered and lenient.
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = ["harness", *request["args"]]
    try:
        runpy.run_module("harness", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the traceback an interpreter prints for an uncaught exception
        code = 1
    os._exit(_ended_as_an_interpreter_ends(code))


def _exit_code(code) -> int:
    """What an interpreter makes of SystemExit's code: None is 0, a number itself, anything else printed and 1."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _ended_as_an_interpreter_ends(code: int) -> int:
    """Python's own shutdown, short of tearing down every module the zygote imported (that takes longer than most
    commands): threads joined, atexit handlers run, the streams flushed."""
    import threading

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as an interpreter whose stdout cannot be flushed at exit
    return code

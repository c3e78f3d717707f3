"""The exit codes of `harness` (docs/cli.md lists them): a script tells a typo from a board that is not
attached, a link that failed, a build that failed and a gate that failed."""

from dataclasses import dataclass

from harness.errors import BuildError, DeviceNotFound, InterruptedRun, LinkError, UserError

OK = 0
FAILED = 1  # the command ran and its verdict is no: a gate failed, link-test's check failed, device != host
USAGE = 2  # bad input: a flag, a name, a path or a file; the one line names the fix
DEVICE_NOT_FOUND = 3  # the board is not attached, the port does not open, no such labgrid place
LINK = 4  # the board was found but its link failed: no answer, a garbled answer, a port that died mid-run
BUILD = 5  # firmware (or a TFLM tree) did not build; the line names the log
INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
TERMINATED = 143  # SIGTERM (a timeout, a CI stop), as a shell reports it; otherwise a Ctrl-C


@dataclass(frozen=True)
class ErrorExit:
    """How the CLI ends on one error class of harness/errors.py: its line's start and its exit code."""

    error: type[BaseException]
    says: str  # the line is `harness: SAYS: message`
    code: int


# The one table: the most specific class first (a DeviceNotFound is a UserError). Every class of
# harness/errors.py that is raised has its row (tests/unit/cli/test_exit_codes.py).
ERROR_EXITS = (
    ErrorExit(DeviceNotFound, "error", DEVICE_NOT_FOUND),
    ErrorExit(UserError, "error", USAGE),
    ErrorExit(LinkError, "link error", LINK),
    ErrorExit(BuildError, "build error", BUILD),
    ErrorExit(InterruptedRun, "interrupted", INTERRUPTED),
)
HANDLED = tuple(row.error for row in ERROR_EXITS)


def error_exit(exc: BaseException, terminated: bool = False) -> ErrorExit | None:
    """The row for an error (None: not one of harness's); a stop by SIGTERM says so and exits 143."""
    row = next((row for row in ERROR_EXITS if isinstance(exc, row.error)), None)
    if row is not None and row.code == INTERRUPTED and terminated:
        return ErrorExit(row.error, "terminated (SIGTERM)", TERMINATED)
    return row

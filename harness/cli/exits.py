"""The exit codes of `harness` (docs/cli.md lists them): a script tells a typo from a board that is not
attached, a link that failed, a build that failed and a gate that failed."""

OK = 0
FAILED = 1  # the command ran and its verdict is no: a gate failed, link-test's check failed, device != host
USAGE = 2  # bad input: a flag, a name, a path or a file; the one line names the fix
DEVICE_NOT_FOUND = 3  # the board is not attached, the port does not open, no such labgrid place
LINK = 4  # the board was found but its link failed: no answer, a garbled answer, a port that died mid-run
BUILD = 5  # firmware (or a TFLM tree) did not build; the line names the log
INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
TERMINATED = 143  # SIGTERM (a timeout, a CI stop), as a shell reports it; otherwise a Ctrl-C

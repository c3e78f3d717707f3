"""Errors the CLI turns into one clear line and exit code 2."""


class UserError(Exception):
    """Bad input from the user: a name, a path or a file. The message names the fix."""


class LinkError(Exception):
    """The device did not answer, or answered with something unusable."""


class BuildError(Exception):
    """Firmware did not build; the message names the log to read."""


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C with a resumable partial run kept; the message says how to go on."""

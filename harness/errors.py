"""Errors the CLI turns into one clear line, each kind with its own exit code (docs/cli.md).

The pieces below the CLI know settings, not flags: a message names a setting with `setting("tflm")`,
and whoever shows the error words it — the CLI as its flag (`--tflm`, `worded_for_cli`), the Python API
as the setting's own name ('tflm', the keyword of the request), which is what `str()` gives.
"""

import re

_MARK = "\x1f"
_SETTING = re.compile(f"{_MARK}([a-z0-9_]+){_MARK}")


def setting(name: str) -> str:
    """A setting named in an error message, worded by whoever shows the error."""
    return f"{_MARK}{name}{_MARK}"


def worded(message: str, spell) -> str:
    return _SETTING.sub(lambda match: spell(match.group(1)), message)


class WordedError(Exception):
    """An error whose message may name settings."""

    def __str__(self) -> str:
        return worded(super().__str__(), lambda name: repr(name))

    def worded_for_cli(self) -> str:
        return worded(super().__str__(), cli_flag)


def cli_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


class UserError(WordedError):
    """Bad input from the user: a name, a path or a file. The message names the fix."""


class DeviceNotFound(UserError):
    """The board named is not there: not attached, no such port, nothing listening at its address, no such
    labgrid place. A UserError still (code that refuses bad input refuses this too); the CLI gives it its
    own exit code, so a script can tell a typo from a board that is not attached."""


class LinkError(WordedError):
    """The device did not answer, or answered with something unusable."""


class BuildError(WordedError):
    """Firmware did not build; the message names the log to read."""


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C with a resumable partial run kept; the message says how to go on."""

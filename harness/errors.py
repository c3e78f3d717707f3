"""Errors the CLI turns into one clear line and exit code 2.

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


class LinkError(WordedError):
    """The device did not answer, or answered with something unusable."""


class BuildError(WordedError):
    """Firmware did not build; the message names the log to read."""


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C with a resumable partial run kept; the message says how to go on."""

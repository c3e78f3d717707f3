"""The helpers several commands share (argument types: harness/values.py).

The parser (harness/cli/app.py) is built from this module too, so it imports only what parsing needs at the
top; what the commands' helpers use is imported inside them."""

import argparse
import sys

from harness.errors import UserError

EXIT_USAGE = 2  # bad input: one line naming the problem and the fix


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"harness: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def iou_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise UserError(f"--iou {text!r} is neither 'ilsvrc' nor a number in (0, 1]")
    return value


def output_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    common.add_argument("--quiet", action="store_true", help="no progress, only what a CI log needs")
    return common


def link_options() -> argparse.ArgumentParser:
    """The link settings (declared with the eval settings) for commands that talk to a board."""
    from harness.eval.settings import LINK_SETTINGS, add_arguments

    common = argparse.ArgumentParser(add_help=False)
    add_arguments(common, LINK_SETTINGS)
    return common

"""The helpers several commands share (argument types: harness/values.py).

The parser (harness/cli/app.py) is built from this module too, so it imports only what parsing needs at the
top; what the commands' helpers use is imported inside them."""

import argparse
import os
import sys
from pathlib import Path

from harness.cli import exits
from harness.errors import UserError


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help (unless the help says it already), and the epilog's example as
    written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        if isinstance(default, tuple | list):
            return f"{text} (default: {','.join(map(str, default))})"
        return f"{text} (default: %(default)s)"


class _Subcommands(argparse._SubParsersAction):
    """argparse's subcommands, named by their choices wherever argparse names them (`required: {list,pull}`)."""

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.choices) + "}"

    @metavar.setter
    def metavar(self, value) -> None:  # argparse sets metavar=None first
        pass


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)

    def error(self, message: str):
        print(f"harness: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(exits.USAGE)


def _sentence(help: str) -> str:
    return help[0].upper() + help[1:] + "."


def _examples(example: str | tuple[str, ...]) -> str:
    lines = (example,) if isinstance(example, str) else example
    return "example:\n" + "\n".join(f"  {line}" for line in lines)


def group(commands, name: str, help: str, example: str | tuple[str, ...]):
    """A group of commands (`harness NAME SUBCOMMAND`): its subparsers, to add the commands to."""
    parser = commands.add_parser(name, help=help, description=_sentence(help), epilog=_examples(example))
    return parser.add_subparsers(dest=f"{name}_command", required=True, parser_class=Parser)


def command(commands, name: str, handler, help: str, example: str | tuple[str, ...], parents=()):
    """One command, with --json and --quiet, its help as description and an example as epilog; `handler` is
    "module:function" (imported when the command runs) or a function."""
    parser = commands.add_parser(
        name, parents=[output_options(), *parents], help=help, description=_sentence(help), epilog=_examples(example)
    )
    parser.set_defaults(handler=handler)
    return parser


def tflm_tree(args, board=None):
    """--tflm PATH, else HARNESS_TFLM_TREE, else for `board` (given when its firmware is built) the tree harness
    prepares from its [tflm] recipe (docs/tflm.md). None: no board, or one that gets TFLM elsewhere."""
    from harness.firmware.tflm_tree import TflmTree

    path = getattr(args, "tflm", None) or os.environ.get("HARNESS_TFLM_TREE")
    if path:
        return TflmTree(Path(path))
    if board is None:
        return None
    from harness.firmware.tflm_obtain import board_tree

    return board_tree(board)


def emulated_tflm_tree(args, board):
    """For commands that build firmware only for QEMU boards (eval, perf, profile, stream): a real board runs
    what was flashed, the virtual one the host interpreter."""
    return tflm_tree(args, board if board.kind == "emulated" else None)


def model_for(args, board):
    """The card and its model, checked to be deployable on the board."""
    from harness.model.card import check_card_model, load_card
    from harness.model.deployable import require_deployable
    from harness.model.fetch import obtain_model
    from harness.model.tflite_file import read_tflite

    card = load_card(args.model)
    model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
    require_deployable(model, board)
    check_card_model(card, model, own_file=not args.model_file)
    return card, model


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


def board_with_link_options(args):
    from harness.boards import get_board
    from harness.device.launch import with_link_options

    return with_link_options(
        get_board(args.board),
        args.link_baud,
        args.emulate_invoke_ms,
        args.switch_baud,
        baud=args.baud,
        protocol=getattr(args, "protocol", "harness"),
    )

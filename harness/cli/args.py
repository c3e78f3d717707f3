"""The helpers several commands share (argument types: harness/values.py).

The parser (harness/cli/app.py) is built from this module too, so it imports only what parsing needs at the
top; what the commands' helpers use is imported inside them."""

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.cli import exits
from harness.defaults import BOARD_HELP, DEFAULT_BOARD, PORT_HELP
from harness.digits import ascii_float
from harness.errors import UserError
from harness.link.registry import NATIVE_PROTOCOL, PROTOCOL_NAMES
from harness.paths import RESULTS_VARIABLE, results_dir
from harness.values import Bounded, WordOrBounded, output_folder, path_text, port_names


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help (unless the help says it already), and the epilog's example as
    written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if isinstance(action.type, Bounded | WordOrBounded) and text:  # the range, from the type that enforces it
            text = f"{text}; {action.type.range_text()}"
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

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):
        """An empty value ('' or blanks) is refused as argparse reads it, before required options are checked:
        it is never meaningful, and as a path it would mean the working folder."""
        if not isinstance(action, argparse._SubParsersAction) and any(_is_empty(text) for text in arg_strings):
            name = "/".join(action.option_strings) or action.metavar or action.dest
            self.error(f"argument {name}: {getattr(action.type, 'when_empty', 'the value is empty; give one')}")
        return super()._get_values(action, arg_strings)

    def error(self, message: str):
        from harness.cli.guards import one_line

        print(one_line(f"harness: error: {message} (see `{self.prog} --help`)"), file=sys.stderr)
        sys.exit(exits.USAGE)


def _is_empty(text) -> bool:
    return isinstance(text, str) and not text.strip()


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


def iou_threshold(text: str) -> float:
    try:
        value = ascii_float(text)  # not NaN, not infinite, no Unicode digits
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


def _commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser) of every command that runs, below `parser`."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield words, parser
    for action in groups:
        for name, sub in action.choices.items():
            yield from _commands(sub, (*words, name))


def option_ranges_table(parser: argparse.ArgumentParser) -> str:
    """docs/cli.md's "Option ranges" table, made from the options' types (a test keeps the two in step)."""
    rows: dict[tuple[str, str], list[str]] = {}
    for words, command_parser in _commands(parser):
        for action in command_parser._actions:
            if isinstance(action.type, Bounded | WordOrBounded):
                key = (action.option_strings[0], action.type.__name__, action.type.range_text())
                rows.setdefault(key, []).append(" ".join(words))
    lines = ["| option | a value is | range | commands |", "|---|---|---|---|"]
    for (option, noun, text), commands in sorted(rows.items()):
        lines.append(f"| `{option}` | {noun} | {text} | {', '.join(commands)} |")
    return "\n".join(lines)


class _StoreHelpOnDemand(argparse.Action):
    """argparse's plain store, whose help text `help_text()` makes only when help is shown: building the parser
    for every command must not read every board file."""

    def __init__(self, option_strings, dest, help_text, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self._help_text = help_text

    @property
    def help(self) -> str:
        return self._help_text()

    @help.setter
    def help(self, value) -> None:  # argparse sets help=None first
        pass

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)


@dataclass(frozen=True)
class CommonOption:
    """An option several commands take, declared once: its flag, type, default and help. A command may make it
    required or leave it unset (no default: absent means every one), add what it is for there (`purpose`, or
    `purpose_on_demand` when saying so reads files), and check it as the folder it writes (`writes`)."""

    flag: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None  # a value, or a function giving it when the parser is built
    written: Callable[[str], Any] | None = None  # the type where the command writes into what the option names

    def add(
        self,
        parser: argparse.ArgumentParser,
        *,
        required: bool = False,
        unset: bool = False,
        purpose: str = "",
        purpose_on_demand: Callable[[], str] | None = None,
        writes: bool = False,
    ) -> argparse.Action:
        kwargs: dict[str, Any] = {"type": self.written if writes else self.type}
        if required:
            kwargs["required"] = True
        elif not unset:
            kwargs["default"] = self.default() if callable(self.default) else self.default
        if purpose_on_demand is not None:
            kwargs |= {"action": _StoreHelpOnDemand, "help_text": lambda: f"{self.help}: {purpose_on_demand()}"}
        else:
            kwargs["help"] = f"{self.help}: {purpose}" if purpose else self.help
        action = parser.add_argument(self.flag, **kwargs)
        action.declared_by = self  # tests/unit/cli/test_common_options.py
        return action


BOARD = CommonOption("--board", BOARD_HELP, default=DEFAULT_BOARD)
PORT = CommonOption("--port", PORT_HELP, type=port_names)
RESULTS = CommonOption(
    "--results",
    f"the results folder (a folder of run folders; ${RESULTS_VARIABLE} names one for every command)",
    path_text,
    results_dir,  # read when the parser is built: $HARNESS_RESULTS_DIR as the command starts
    output_folder("--results"),
)
COMMON_OPTIONS = (BOARD, PORT, RESULTS)

PROTOCOL_HELP = "the board's wire protocol: harness firmware (default) or MLPerf Tiny / EEMBC DUT firmware"


def add_protocol_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    parser.add_argument("--protocol", choices=PROTOCOL_NAMES, default=NATIVE_PROTOCOL, help=prefix + PROTOCOL_HELP)

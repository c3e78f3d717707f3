"""Checks the command line makes once, for every command, after its arguments are read.

- `one_line`: a message is one line on stderr whatever the user typed: a newline, an ANSI escape or a
  right-to-left override in a value echoed back is shown escaped, never acted on by the terminal.
- `refuse_outputs_over_inputs`: no command writes over its own input (`runs check --gates g.toml --junit g.toml`)
  or into a run folder (`runs report --out results/RUN/summary.json`, or a link to a run's manifest), so an
  option that writes can never destroy what harness reads.
"""

import argparse
import os
from pathlib import Path

from harness.errors import UserError
from harness.names import shown
from harness.values import OutputPath

_RUN_FOLDER_FILES = ("manifest.json", "journal.jsonl", "request.json")


def one_line(message: str) -> str:
    """message with every character a terminal would act on shown as its escape (a newline as \\n)."""
    return shown(message)


def chosen_parser(root: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command that runs (following each group's chosen subcommand)."""
    parser = root
    while True:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = [g.choices[getattr(args, g.dest)] for g in groups if getattr(args, g.dest, None) in g.choices]
        if not chosen:
            return parser
        parser = chosen[0]


def _texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def _resolved_file(text: str) -> Path | None:
    try:
        path = Path(os.path.realpath(text))
        return path if path.is_file() else None
    except (OSError, ValueError):
        return None


def _in_run_folder(path: Path) -> Path | None:
    folder = path.parent
    if folder.name.endswith(".partial") or any((folder / name).is_file() for name in _RUN_FOLDER_FILES):
        return folder
    return None


def refuse_outputs_over_inputs(root: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    parser = chosen_parser(root, args)
    outputs, inputs = [], {}
    for action in parser._actions:
        if not action.option_strings and not action.dest:
            continue
        value = getattr(args, action.dest, None)
        flag = action.option_strings[0] if action.option_strings else action.dest.upper()
        if isinstance(action.type, OutputPath):
            if not action.type.folder and isinstance(value, str):
                outputs.append((flag, value))
            continue
        for text in _texts(value):
            resolved = _resolved_file(text)
            if resolved is not None:
                inputs.setdefault(resolved, (flag, text))
    for flag, text in outputs:
        target = Path(os.path.realpath(text))
        if target in inputs:
            other, given = inputs[target]
            raise UserError(
                f"{flag} {text} is also this command's input ({other} {given}); harness never writes over what it "
                f"reads: name another file for {flag}"
            )
        run_folder = _in_run_folder(target)
        if run_folder is not None:
            raise UserError(
                f"{flag} {text} lies in the run folder {run_folder}; harness never writes over a run's files: "
                f"name a file outside it for {flag}"
            )

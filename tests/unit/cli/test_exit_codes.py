"""The CLI's one table from error class to exit code (harness/cli/exits.py): every error class of
harness/errors.py that is raised has its row, each code is told apart, and the command line ends with it."""

import ast
import inspect
from pathlib import Path

import pytest

from harness import errors
from harness.cli import exits
from harness.cli.app import main

HARNESS = Path(errors.__file__).parent


def _error_classes() -> list[type[BaseException]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == errors.__name__
    ]


def _raised_names() -> set[str]:
    """The names of every class harness/ raises (`raise X(...)` or `raise X`)."""
    names = set()
    for path in HARNESS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name | ast.Attribute):
                    names.add(target.id if isinstance(target, ast.Name) else target.attr)
    return names


def test_every_raised_error_class_has_its_row():
    raised = _raised_names()
    rowed = {row.error for row in exits.ERROR_EXITS}
    missing = [cls.__name__ for cls in _error_classes() if cls.__name__ in raised and cls not in rowed]
    assert not missing, f"harness/cli/exits.py ERROR_EXITS has no row for {missing}"
    # A class without a row is only a base: never raised itself, and each of its subclasses has a row.
    for cls in _error_classes():
        if cls not in rowed:
            assert cls.__name__ not in raised
            assert all(sub in rowed for sub in cls.__subclasses__()), cls


def test_a_subclass_finds_its_own_row_before_its_bases():
    assert exits.error_exit(errors.DeviceNotFound("x")).code == exits.DEVICE_NOT_FOUND
    assert exits.error_exit(errors.UserError("x")).code == exits.USAGE
    assert exits.error_exit(errors.LinkError("x")).code == exits.LINK
    assert exits.error_exit(errors.BuildError("x")).code == exits.BUILD
    assert exits.error_exit(errors.InterruptedRun("x")).code == exits.INTERRUPTED
    assert exits.error_exit(errors.InterruptedRun("x"), terminated=True).code == exits.TERMINATED
    assert exits.error_exit(ValueError("x")) is None
    codes = [row.code for row in exits.ERROR_EXITS]
    assert len(set(codes)) == len(codes) and exits.OK not in codes and exits.FAILED not in codes


@pytest.mark.parametrize("row", exits.ERROR_EXITS, ids=lambda row: row.error.__name__)
def test_the_command_line_ends_with_the_row_s_code_and_one_line(row, monkeypatch, capsys):
    def fails(args):
        raise row.error(f"it failed at {errors.setting('board')}")

    monkeypatch.setattr("harness.cli.app.handler_of", lambda args: fails)
    assert main(["boards", "list"]) == row.code
    err = capsys.readouterr().err
    assert err.startswith(f"harness: {row.says}: ") and err.count("\n") == 1
    assert ("--board" in err) == issubclass(row.error, errors.WordedError)

"""--board, --port and --results are each declared once (harness/cli/args.py COMMON_OPTIONS): every command
that takes one takes that declaration, with its type, default and help; eval's come from its settings, which
share the help, type and default."""

import ast
from pathlib import Path

import pytest

from harness.cli.args import BOARD, COMMON_OPTIONS, PORT, RESULTS
from tests.conftest import cli_commands

CLI = Path(__file__).resolve().parents[3] / "harness" / "cli"
COMMANDS = cli_commands()

# The same flag with another meaning: the LPIRC referee binds a TCP port and keeps its sessions apart.
OTHER_MEANING = {(("lpirc", "referee"), "--port"), (("lpirc", "referee"), "--results")}


def _taking(option):
    return [
        (words, action)
        for words, parser in COMMANDS
        for action in parser._actions
        if option.flag in action.option_strings and (words, option.flag) not in OTHER_MEANING
    ]


@pytest.mark.parametrize("option", COMMON_OPTIONS, ids=lambda option: option.flag)
def test_every_command_takes_the_one_declaration(option):
    taking = _taking(option)
    assert len(taking) >= 4, f"{option.flag} is common to at least four commands"
    for words, action in taking:
        where = f"harness {' '.join(words)} {option.flag}"
        if words == ("eval",) and option is not RESULTS:  # a setting of the run (harness/eval/settings.py)
            assert action.type is option.type and action.default == option.default, where
            assert action.help.startswith(option.help), where
            continue
        assert getattr(action, "declared_by", None) is option, f"{where} is declared by hand"
        assert action.type in (option.type, option.written), where
        default = option.default() if callable(option.default) else option.default  # --results: read from the env
        assert action.required or action.default in (default, None), where
        assert action.help.startswith(option.help), where


def test_no_cli_module_declares_a_common_flag_by_hand():
    flags = {option.flag for option in COMMON_OPTIONS}
    by_hand = set()
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and first.value in flags:
                    by_hand.add((path.name, getattr(node.func.value, "id", "?"), first.value))
    # only the referee's own --port and --results (OTHER_MEANING)
    assert by_hand == {("energy.py", "referee", "--port"), ("energy.py", "referee", "--results")}


def test_a_required_board_has_no_default_and_a_writing_command_checks_its_folder():
    flash = dict(COMMANDS)[("flash",)]
    (board,) = [a for a in flash._actions if "--board" in a.option_strings]
    assert board.required and board.default is None and board.declared_by is BOARD
    run = dict(COMMANDS)[("stream", "run")]
    (results,) = [a for a in run._actions if "--results" in a.option_strings]
    assert results.type == RESULTS.written and results.default == "results"
    (port,) = [a for a in run._actions if "--port" in a.option_strings]
    assert port.declared_by is PORT and port.type is PORT.type


@pytest.mark.parametrize(
    ("variable", "expected"), [(None, "results"), ("", "results"), ("  ", "results"), ("/lab/results", "/lab/results")]
)
def test_results_defaults_to_harness_results_dir_else_results(monkeypatch, variable, expected):
    from harness.cli.app import build_parser

    if variable is None:
        monkeypatch.delenv("HARNESS_RESULTS_DIR", raising=False)
    else:
        monkeypatch.setenv("HARNESS_RESULTS_DIR", variable)
    parser = build_parser()
    for argv in (["runs", "list"], ["runs", "report", "latest"], ["eval"], ["stream", "run", "--wav", "s.wav"]):
        assert parser.parse_args(argv).results == expected, argv
    assert parser.parse_args(["runs", "list", "--results", "here"]).results == "here"


def test_the_api_takes_the_same_default(monkeypatch, tmp_path):
    from harness.api.runs import load_run
    from harness.errors import UserError

    monkeypatch.setenv("HARNESS_RESULTS_DIR", str(tmp_path / "lab"))
    with pytest.raises(UserError, match=r"results folder .*lab does not exist"):
        load_run("latest")

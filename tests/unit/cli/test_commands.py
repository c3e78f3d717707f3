"""The command line as its users meet it: every command's --help (defaults, an example), --json and --quiet,
the old spellings, CI read as a boolean and the exit codes (docs/cli.md)."""

import argparse
import json

import pytest

from harness import console
from harness.cli import exits
from harness.cli.app import build_parser, main
from harness.cli.args import HelpFormatter
from harness.cli.spellings import LISTINGS, RENAMED, modern_spelling
from harness.defaults import DEFAULT_MODEL
from harness.errors import BuildError, DeviceNotFound, LinkError
from tests.conftest import cli_commands
from tests.forked_cli import run_harness_command

COMMANDS = cli_commands()
IDS = [" ".join(words) for words, _ in COMMANDS]


def _groups(parser=None, words=()):
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield words, parser
            for name, sub in action.choices.items():
                yield from _groups(sub, (*words, name))


def test_the_commands_are_grouped():
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"eval", "flash"} <= set(top.choices)  # the main job keeps its spellings
    assert len(top.choices) <= 16 and len(COMMANDS) >= 30
    assert {"stream build", "stream run", "stream score", "dataset build", "dataset list", "runs check"} <= set(IDS)


@pytest.mark.parametrize(("words", "parser"), COMMANDS, ids=IDS)
def test_every_command_has_json_quiet_defaults_and_an_example(words, parser):
    options = {flag for action in parser._actions for flag in action.option_strings}
    assert {"--json", "--quiet"} <= options
    example = f"harness {' '.join(words)}"
    assert parser.epilog.startswith("example:\n") and f"  {example}" in parser.epilog, parser.epilog
    formatter = HelpFormatter(parser.prog)
    for action in parser._actions:
        if action.default in (None, False, argparse.SUPPRESS) or not action.option_strings or action.help is None:
            continue
        shown = formatter._expand_help(action)  # the option's help as --help prints it
        assert "default" in shown, f"{example} {action.option_strings[0]}: {shown}"
    assert example in parser.format_help()


@pytest.mark.parametrize(
    ("words", "parser"), list(_groups()), ids=lambda x: " ".join(x) if isinstance(x, tuple) else ""
)
def test_every_group_shows_an_example(words, parser):
    assert "example:\n  harness " in parser.format_help()


def test_defaults_are_shown_with_their_values():
    (evaluation,) = [parser for words, parser in COMMANDS if words == ("eval",)]
    text = " ".join(evaluation.format_help().split())
    assert f"(default: {DEFAULT_MODEL})" in text and "(default: results)" in text
    (perf,) = [parser for words, parser in COMMANDS if words == ("perf",)]
    assert "timed invokes; 1 to 1,000,000 (default: 50)" in " ".join(perf.format_help().split())


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_spelling_names_its_new_one(old):
    new, notice = modern_spelling([old, "--json"])
    assert new == [*RENAMED[old], "--json"]
    assert f"`harness {old}`" in notice and f"`harness {' '.join(RENAMED[old])}`" in notice
    assert tuple(RENAMED[old]) in {words for words, _ in COMMANDS}


def test_an_old_spelling_works_and_says_so_on_one_line(capsys):
    assert main(["subsets", "--json"]) == exits.OK
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["name"] == "all"
    (line,) = err.strip().splitlines()
    assert line.startswith("harness: warning:") and "`harness dataset subsets`" in line


def test_the_old_stream_run_spelling(tmp_path):
    new, notice = modern_spelling(["stream", "--wav", "s.wav"])
    assert new == ["stream", "run", "--wav", "s.wav"] and "`harness stream run`" in notice
    assert modern_spelling(["stream", "build", "--clips", "c"]) == (["stream", "build", "--clips", "c"], None)
    assert modern_spelling(["stream", "--help"]) == (["stream", "--help"], None)


@pytest.mark.parametrize("group", sorted(LISTINGS))
def test_a_group_without_a_subcommand_lists_quietly(group):
    assert modern_spelling([group]) == ([group, "list"], None)
    assert modern_spelling([group, "--json"]) == ([group, "list", "--json"], None)


@pytest.mark.parametrize(
    "argv",
    [
        ["boards", "list"],
        ["models", "list"],
        ["dataset", "list"],
        ["dataset", "subsets"],
        ["tflm", "sources"],
        ["cache", "list"],
        ["flash", "--board", "sim"],
    ],
)
def test_what_a_command_prints_is_json_with_json(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert main([*argv, "--json"]) == exits.OK
    json.loads(capsys.readouterr().out)


def test_runs_list_is_json_with_json(capsys, tmp_path):
    (tmp_path / "results").mkdir()
    assert main(["runs", "list", "--results", str(tmp_path / "results"), "--json"]) == exits.OK
    assert json.loads(capsys.readouterr().out) == []


def test_flash_on_the_virtual_board(capsys):
    assert main(["flash", "--board", "sim", "--json"]) == exits.OK
    assert json.loads(capsys.readouterr().out) == {"board": "sim", "flashed": False}
    assert main(["flash", "--board", "sim", "--quiet"]) == exits.OK
    assert len(capsys.readouterr().out.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("value", "ci"),
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("on", True),
        ("woodpecker", True),
        ("0", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("off", False),
        ("", False),
        (None, False),
    ],
)
def test_ci_is_read_as_a_boolean(monkeypatch, value, ci):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert console.under_ci() is ci


@pytest.mark.parametrize(
    ("raised", "code", "prefix"),
    [
        (DeviceNotFound("no nucleo_h743 found on USB; connect it"), exits.DEVICE_NOT_FOUND, "harness: error:"),
        (LinkError("the board did not answer"), exits.LINK, "harness: link error:"),
        (BuildError("firmware did not build; log: build.log"), exits.BUILD, "harness: build error:"),
    ],
)
def test_each_failure_has_its_exit_code(monkeypatch, capsys, raised, code, prefix):
    def fails(args):
        raise raised

    monkeypatch.setattr("harness.cli.devices.cmd_boards", fails)
    assert main(["boards", "list"]) == code
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(prefix) and str(raised) in line


def test_exit_codes_are_distinct():
    codes = [exits.OK, exits.FAILED, exits.USAGE, exits.DEVICE_NOT_FOUND, exits.LINK, exits.BUILD, exits.INTERRUPTED]
    codes.append(exits.TERMINATED)
    assert len(set(codes)) == len(codes)


def test_a_port_with_nothing_behind_it_is_device_not_found(tmp_path):
    done = run_harness_command(
        ["boards", "link-test", "--board", "nucleo_h743", "--port", "/dev/ttyNOSUCH9"], cwd=tmp_path
    )
    assert done.returncode == exits.DEVICE_NOT_FOUND, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("harness: error: cannot open link '/dev/ttyNOSUCH9'") and "Traceback" not in done.stderr


def test_a_typo_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["evall"])
    assert exited.value.code == exits.USAGE

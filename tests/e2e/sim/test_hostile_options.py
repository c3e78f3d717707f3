"""Hostile options, generated from the parser: every numeric option of every command given NaN, infinity, a
value below and above its range, Unicode digits and 1e400; every list option a member twice; every option an
empty value; every --port a malformed URL; every output option a FIFO and a character device (left exactly as
they were). Each is refused in one line, exit 2, no traceback, nothing written (tests/hostile.py)."""

import argparse
import json
import os
import stat
from pathlib import Path

import pytest

from harness.values import Bounded, WordOrBounded
from tests.conftest import assert_refused_in_one_line, cli_commands
from tests.hostile import Case, run_case, run_harness

COMMANDS = cli_commands()


def _bounded_options():
    for words, parser in COMMANDS:
        for action in parser._actions:
            if action.option_strings and isinstance(action.type, Bounded | WordOrBounded):
                yield words, action.option_strings[0], action.type


def _hostile_numbers(kind) -> dict[str, str]:
    bounds = kind.bounded if isinstance(kind, WordOrBounded) else kind
    below = bounds.low - 1
    above = bounds.high + 1 if bounds.whole else bounds.high * 2 + 1
    shown = (lambda x: str(int(x))) if bounds.whole else repr
    return {
        "nan": "nan",
        "inf": "inf",
        "below": shown(below),
        "above": shown(above),
        "unicode-digits": "\u0661\u0662",
        "1e400": "1e400",
    }


def numeric_cases():
    for words, flag, kind in _bounded_options():
        for form, text in _hostile_numbers(kind).items():
            words_id = "-".join(words)
            yield Case(f"{words_id}{flag}-{form}", (*words, flag, text), (f"argument {flag}", repr(text)))


# List options: a member named twice is refused while parsing (`names`), or with the boards, before any starts.
DUPLICATES = [
    Case("eval-references", ("eval", "--references", "tflm,tflm"), ("--references", "tflm named twice")),
    Case("eval-references-3", ("eval", "--references", "tflm,litert,tflm"), ("--references", "tflm named twice")),
    Case("eval-subset", ("eval", "--subset", "all,all"), ("--subset", "all named twice")),
    Case("eval-split", ("eval", "--split", "test,test"), ("--split", "test named twice")),
    Case("eval-clean-labels", ("eval", "--clean-labels", "a.csv,a.csv"), ("--clean-labels", "a.csv named twice")),
    Case("convert-subset", ("models", "convert", "--subset", "far,far"), ("--subset", "far named twice")),
    Case("score-subset", ("dataset", "score", "--subset", "far,near,far"), ("--subset", "far named twice")),
    Case("score-clean-labels", ("dataset", "score", "--clean-labels", "x,x"), ("--clean-labels", "x named twice")),
    Case("stream-words", ("stream", "build", "--words", "yes,no,yes"), ("--words", "yes named twice")),
    Case("eval-tags", ("eval", "--labgrid-tags", "board=a,board=b"), ("--labgrid-tags", "tag board given twice")),
    Case(
        "eval-faults",
        ("eval", "--faults", "drop=0.1,drop=0.2"),
        ("--faults", "drop is given twice"),
    ),
    Case(
        "link-test-faults",
        ("boards", "link-test", "--faults", "dup=0.1,dup=0.1"),
        ("--faults", "dup is given twice"),
    ),
    Case(
        "eval-serial",
        ("eval", "--board", "nucleo_h743", "--serial", "A1,A1", "--results", "r"),
        ("--serial names a board twice",),
    ),
    Case(
        "eval-places",
        ("eval", "--board", "nucleo_h743", "--labgrid-place", "p1,p1", "--results", "r"),
        ("--labgrid-place names a board twice",),
    ),
]

# --faults rates: finite, in range, ASCII.
FAULTS = [
    Case(f"faults-{name}", ("eval", "--faults", text), ("--faults", words))
    for name, text, words in (
        ("nan", "drop=nan", "drop=nan is not a number"),
        ("inf", "corrupt=inf", "corrupt=inf is not a number"),
        ("1e400", "dup=1e400", "dup=1e400 is not a number"),
        ("unicode", "drop=\u0660.\u0661", "is not a number"),
        ("reset-huge", "reset-every=99999999999", "out of range"),
        ("reset-fraction", "reset-every=0.5", "is not a number"),
        ("rate-one", "drop=1", "out of range"),
    )
]

# stream build --at: start times in ASCII digits, within an hour (a later start would be a stream too long to hold).
PLACEMENTS = [
    Case(f"stream-build-at-{name}", ("stream", "build", "--clips", "c", "--out", "s.wav", "--at", text), ("--at", text))
    for name, text in (
        ("unicode", "yes:\u0661\u0660\u0660\u0660"),
        ("huge", "yes:99999999999"),
        ("exponent", "yes:1e9"),
        ("negative", "yes:-5"),
        ("no-label", ":1000"),
    )
]

BAD_PORTS = {
    "rfc2217-empty": ("rfc2217://", "needs HOST:PORT"),
    "socket-empty": ("socket://", "needs HOST:PORT"),
    "socket-no-port": ("socket://localhost", "needs HOST:PORT"),
    "socket-port-high": ("socket://host:99999", "not a number from 1 to 65535"),
    "socket-port-text": ("socket://host:http", "not a number from 1 to 65535"),
    "socket-open-bracket": ("socket://[::1", "cannot be read"),
    "tcp": ("tcp://x", "protocol 'tcp' not known"),
    "one-of-two": ("/dev/ttyX0,tcp://x", "protocol 'tcp' not known"),
}
PORT_COMMANDS = {
    "eval": ("eval", "--board", "nucleo_h743", "--results", "r"),
    "flash": ("flash", "--board", "nucleo_h743"),
    "perf": ("perf", "--board", "nucleo_h743"),
    "profile": ("profile", "--board", "nucleo_h743"),
    "link-test": ("boards", "link-test", "--board", "nucleo_h743"),
    "stream-run": ("stream", "run", "--wav", "s.wav"),
}
PORTS = [
    Case(
        f"{command}-port-{form}",
        (*args, "--port", url),
        ("--port", f"cannot open link {url.split(',')[-1]!r}", words, "socket://HOST:PORT"),
    )
    for command, args in PORT_COMMANDS.items()
    for form, (url, words) in BAD_PORTS.items()
]


def empty_value_cases():
    """Every option that takes a value, given '', and every command's first positional."""
    for words, parser in COMMANDS:
        positionals = [a for a in parser._actions if not a.option_strings and a.nargs != argparse.PARSER]
        for action in parser._actions:
            if action.nargs == 0 or (not action.option_strings and action is not positionals[0]):
                continue
            flag = action.option_strings[0] if action.option_strings else None
            args = (*words, flag, "") if flag else (*words, "")
            name = flag or action.metavar or action.dest
            refusal = getattr(action.type, "when_empty", "the value is empty")
            yield Case(f"{'-'.join(words)}-{name.lstrip('-')}-empty", args, (f"argument {name}", refusal))


# --switch-baud above the board's maximum (the sim board's SET_BAUD takes up to 4,000,000): refused naming both
# rates, before any sample, never silently lowered.
ABOVE_MAX_BAUD = ("--switch-baud 9,000,000", "above board sim's maximum baud rate 4,000,000", "pass at most 4000000")
SWITCH_BAUD = [
    Case("eval-switch-baud-above-max", ("eval", "--limit", "2", "--switch-baud", "9000000"), ABOVE_MAX_BAUD),
    Case("link-test-switch-baud-above-max", ("boards", "link-test", "--switch-baud", "9000000"), ABOVE_MAX_BAUD),
]

# --boards above the run's samples: refused before any board starts, nothing written.
BOARDS_ABOVE_SAMPLES = [
    Case(
        "eval-boards-above-samples",
        ("eval", "--limit", "3", "--boards", "8", "--results", "r"),
        ("--boards 8 but the run has 3 samples", "use at most 3 boards"),
    ),
    Case(
        "eval-boards-above-one-sample",
        ("eval", "--limit", "1", "--boards", "2", "--results", "r"),
        ("--boards 2 but the run has 1 sample;", "use at most 1 board"),
    ),
]

CASES = [
    *numeric_cases(),
    *DUPLICATES,
    *FAULTS,
    *PLACEMENTS,
    *PORTS,
    *SWITCH_BAUD,
    *BOARDS_ABOVE_SAMPLES,
    *empty_value_cases(),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_option_is_refused_in_one_line(tmp_path, case):
    run_case(tmp_path, case)


def test_the_manifest_records_the_baud_rate_the_run_used(tmp_path):
    done = run_harness(tmp_path, "eval", "--limit", "2", "--switch-baud", "2000000", "--results", "r", "--json")
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / json.loads(done.stdout)["run_dir"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["switch_baud"] == 2_000_000 == manifest["device"]["baud"]


def test_the_generated_cases_cover_every_numeric_option():
    numeric = list(_bounded_options())
    assert len(numeric) >= 30 and len(CASES) >= 300
    for words, flag, _ in numeric:
        assert any(case.args[: len(words) + 1] == (*words, flag) for case in CASES), (words, flag)


# Every option that writes, with what the command needs besides it: a FIFO or a character device given to it
# is refused and left as it was.
OUTPUTS = {
    ("flash", "--out"): ("--board", "sim"),
    ("firmware generate", "--out"): ("--board", "nucleo_h743"),
    ("firmware build", "--out"): ("--board", "nucleo_h743"),
    ("models convert", "--out"): ("--card", "c.toml"),
    ("dataset build", "--out"): ("--annotations", "a", "--images", "i"),
    ("runs report", "--out"): ("RUN",),
    ("runs check", "--junit"): ("RUN", "--gates", "g.toml"),
    ("stream build", "--out"): ("--clips", "c"),
    ("stream build", "--ledger"): ("--clips", "c", "--out", "s.wav"),
    ("eval", "--results"): (),
    ("stream run", "--results"): ("--wav", "s.wav"),
    ("lpirc referee", "--results"): ("--dataset", "d"),
}
OUTPUT_IDS = [f"{command} {flag}" for command, flag in OUTPUTS]


def _writes(command: str, flag: str) -> str:
    """output_file or output_folder: the type the option is declared with."""
    (parser,) = [p for words, p in COMMANDS if " ".join(words) == command]
    (action,) = [a for a in parser._actions if flag in a.option_strings]
    return action.type.__name__


def _args(command: str, flag: str, value: str) -> tuple[str, ...]:
    return (*command.split(), *OUTPUTS[command, flag], flag, value)


def test_every_output_option_is_listed_here():
    declared = {
        (" ".join(words), action.option_strings[0])
        for words, parser in COMMANDS
        for action in parser._actions
        if getattr(action.type, "__name__", "") in ("output_file", "output_folder")
    }
    assert declared == set(OUTPUTS)


def _special_files(folder: Path) -> dict[str, Path]:
    """A FIFO and a character device (the numbers of /dev/full) in a private folder: root may make them."""
    fifo, device = folder / "fifo", folder / "full"
    os.mkfifo(fifo)
    os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    return {"fifo": fifo, "device": device}


def _identity(path: Path) -> tuple:
    info = path.lstat()
    return stat.S_IFMT(info.st_mode), info.st_rdev, info.st_ino, stat.S_IMODE(info.st_mode), info.st_mtime_ns


@pytest.mark.skipif(os.geteuid() != 0, reason="making a character device needs root (os.mknod)")
@pytest.mark.parametrize("target", ["fifo", "device"])
@pytest.mark.parametrize(("command", "flag"), list(OUTPUTS), ids=OUTPUT_IDS)
def test_an_output_option_leaves_a_fifo_and_a_device_as_they_were(tmp_path, command, flag, target):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    specials = _special_files(private)
    before = {name: _identity(path) for name, path in specials.items()}
    path = specials[target]
    done = run_harness(tmp_path, *_args(command, flag, str(path)))
    kind = "a FIFO" if target == "fifo" else "a character device"
    folder = _writes(command, flag) == "output_folder"
    assert_refused_in_one_line(done, f"argument {flag}", str(path), f"{kind}, not a folder" if folder else kind)
    assert {name: _identity(p) for name, p in specials.items()} == before
    assert sorted(p.name for p in private.iterdir()) == ["fifo", "full"]


@pytest.mark.parametrize(("command", "flag"), list(OUTPUTS), ids=OUTPUT_IDS)
def test_an_output_option_of_the_wrong_kind_is_refused(tmp_path, command, flag):
    """A folder where a file is written, a file where a folder is: refused, left as it was."""
    folder = _writes(command, flag) == "output_folder"
    case = Case(
        f"{command} {flag} wrong kind",
        _args(command, flag, "wrong"),
        (f"argument {flag}", "wrong", "is a regular file, not a folder" if folder else "is a folder"),
        files={"wrong": b"a file\n"} if folder else {"wrong/kept": b"kept\n"},
    )
    run_case(tmp_path, case)


def test_an_argparse_type_error_never_leaks_python_words():
    """Every refusal above is ours: none says 'invalid <type> value', argparse's words for a bare type."""
    for words, flag, kind in _bounded_options():
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            kind("nan")
        assert "invalid" not in str(refused.value) and "'nan'" in str(refused.value), (words, flag)


FILE_OUTPUTS = [(command, flag) for command, flag in OUTPUTS if _writes(command, flag) == "output_file"]
RUN_FILES = {"r/RUN/manifest.json": b"{}\n", "r/RUN/summary.json": b"{}\n"}


@pytest.mark.parametrize("how", ["inside", "link"])
@pytest.mark.parametrize(("command", "flag"), FILE_OUTPUTS, ids=[f"{c} {f}" for c, f in FILE_OUTPUTS])
def test_an_output_never_lands_in_a_run_folder(tmp_path, command, flag, how):
    """Written straight into a run folder, or through a link to a run's file: refused before any work, the run's
    files left as they were (harness/cli/guards.py)."""
    files = dict(RUN_FILES)
    target = "r/RUN/summary.json"
    if how == "link":
        (tmp_path / "out").symlink_to(tmp_path / "r" / "RUN" / "summary.json")  # made before the files: dangling
        target = "out"
    case = Case(f"{command} {flag} {how}", _args(command, flag, target), (flag, target, "run folder"), files)
    run_case(tmp_path, case)


OVER_INPUTS = [
    Case(
        "check-junit-over-gates",
        ("runs", "check", "RUN", "--gates", "g.toml", "--junit", "g.toml"),
        ("--junit g.toml is also this command's input (--gates g.toml)",),
        {"g.toml": b"[accuracy]\nmin = 0.1\n"},
    ),
    Case(
        "convert-out-over-card",
        ("models", "convert", "--card", "c.toml", "--out", "c.toml"),
        ("--out c.toml is also this command's input (--card c.toml)",),
        {"c.toml": b"name = 'x'\n"},
    ),
    Case(
        "report-out-over-gates-link",
        ("runs", "check", "RUN", "--gates", "g.toml", "--junit", "j.xml"),
        ("--junit j.xml is also this command's input (--gates g.toml)",),
        {"g.toml": b"[accuracy]\nmin = 0.1\n"},
    ),
]


@pytest.mark.parametrize("case", OVER_INPUTS, ids=[case.id for case in OVER_INPUTS])
def test_an_output_never_replaces_the_commands_own_input(tmp_path, case):
    if case.id.endswith("-link"):
        (tmp_path / "j.xml").symlink_to(tmp_path / "g.toml")
    run_case(tmp_path, case)

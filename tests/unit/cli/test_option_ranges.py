"""Every numeric option of every command has a declared range (harness/values.py), shown in its --help and in
docs/cli.md's "Option ranges" table; numbers are ASCII and finite; list options name each member once; --port
URLs are checked for their form; an empty value is refused; a closed stdout ends a command quietly."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import exits
from harness.cli.app import build_parser, main
from harness.cli.args import option_ranges_table
from harness.errors import UserError
from harness.link.faults import FaultSpec, fault_spec
from harness.values import (
    Bounded,
    WordOrBounded,
    clip_placements,
    distinct_names,
    place_tags,
    port_names,
    port_url_problem,
    reference_names,
)
from tests.conftest import cli_commands

ROOT = Path(__file__).resolve().parents[3]
COMMANDS = cli_commands()

# The argparse types that take no number: names, paths, specs (each checks its own text).
NOT_NUMERIC = {
    "clip_placements",  # its times are checked against clip_start_ms' range
    "distinct_names",
    "fault_spec",
    "output_file",
    "output_folder",
    "path_text",
    "place_tags",
    "port_names",
    "reference_names",
    "run_reference",
}


def _options():
    for words, parser in COMMANDS:
        for action in parser._actions:
            if action.option_strings:
                yield words, action


def bounded_options() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [(words, a) for words, a in _options() if isinstance(a.type, Bounded | WordOrBounded)]


BOUNDED = bounded_options()
BOUNDED_IDS = [f"{' '.join(words)} {a.option_strings[0]}" for words, a in BOUNDED]


def test_every_numeric_option_has_a_bounded_type():
    bare = []
    for words, action in _options():
        if isinstance(action.type, Bounded | WordOrBounded):
            continue
        name = getattr(action.type, "__name__", None)
        numeric_default = isinstance(action.default, int | float) and not isinstance(action.default, bool)
        if (action.type is not None and name not in NOT_NUMERIC) or (action.type is None and numeric_default):
            bare.append(f"harness {' '.join(words)} {action.option_strings[0]} ({name})")
    assert not bare, "numeric options without a declared range: " + ", ".join(bare)
    assert len(BOUNDED) >= 30


def test_the_docs_table_is_the_parsers():
    docs = (ROOT / "docs" / "cli.md").read_text()
    table = option_ranges_table(build_parser())
    assert table in docs, "docs/cli.md's Option ranges table is out of date; paste option_ranges_table()'s output"


@pytest.mark.parametrize(("words", "action"), BOUNDED, ids=BOUNDED_IDS)
def test_an_options_help_shows_its_range(words, action):
    (parser,) = [p for w, p in COMMANDS if w == words]
    help_text = " ".join(parser.format_help().split())
    assert action.type.range_text() in help_text


def _number(value):
    return float(value) if isinstance(value, str) else value  # WordOrBounded keeps the text


def _bounds(kind):
    return kind.bounded if isinstance(kind, WordOrBounded) else kind


@pytest.mark.parametrize(("words", "action"), BOUNDED, ids=BOUNDED_IDS)
def test_the_ends_of_a_range_are_taken_and_beyond_them_refused(words, action):
    bounds = _bounds(action.type)
    high = str(int(bounds.high)) if bounds.whole else repr(float(bounds.high))
    assert _number(action.type(high)) == bounds.high
    if not bounds.above:
        assert _number(action.type(str(int(bounds.low)))) == bounds.low
    beyond = str(int(bounds.high) + 1) if bounds.whole else repr(bounds.high * 1.5 + 1)
    with pytest.raises(argparse.ArgumentTypeError, match=repr(beyond)):
        action.type(beyond)


HOSTILE_NUMBERS = ["nan", "NaN", "inf", "-inf", "1e400", "\u0661", "\u0661\u0660", "1_0", "0x10", "", " ", "1e20"]


@pytest.mark.parametrize("text", HOSTILE_NUMBERS)
def test_no_numeric_option_takes_a_hostile_number(text):
    for _, action in BOUNDED:
        if text == "1e20" and not _bounds(action.type).whole:
            continue  # a real number may have an exponent; 1e20 is then above every real option's maximum
        with pytest.raises(argparse.ArgumentTypeError):
            action.type(text)


@given(st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=4))
def test_only_ascii_digits_are_numbers(digits):
    whole = Bounded("a number", 0, 10**9)
    if digits.isascii():
        assert whole(digits) == int(digits)
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            whole(digits)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_real_option_takes_exactly_the_finite_numbers_in_its_range(number):
    seconds = Bounded("a number of seconds", 0, 3600, whole=False, above=True)
    if number == number and 0 < number <= 3600:
        assert seconds(repr(number)) == number
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            seconds(repr(number))


def test_a_refusal_names_what_was_expected_and_given():
    boards = Bounded("a number of boards: a whole number", 1, 64)
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        boards("10000")
    assert str(refused.value) == "expected a number of boards: a whole number of at least 1 and at most 64, got '10000'"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tflm,tflm", "tflm named twice"),
        ("tflm,litert,tflm", "tflm named twice"),
        ("tflm,nowhere", "unknown reference nowhere"),
        ("nowhere,tflm,tflm", "unknown reference nowhere; tflm named twice"),
        (",", "no reference"),
    ],
)
def test_references_are_known_and_each_named_once(text, words):
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        reference_names(text)


def test_references_that_are_fine():
    assert reference_names("tflm, litert") == ("tflm", "litert") and reference_names("none") == ()


@pytest.mark.parametrize("text", ["all,all", "far, far", "a,b,a", ","])
def test_a_list_names_each_member_once(text):
    with pytest.raises(argparse.ArgumentTypeError):
        distinct_names(text)
    assert distinct_names("all,far") == "all,far"


@pytest.mark.parametrize("text", ["yes:\u0661", "yes:99999999999", "yes:-5", "yes:1e3", ":100", "yes", "yes:nan"])
def test_clip_times_are_ascii_and_within_a_stream(text):
    with pytest.raises(argparse.ArgumentTypeError, match="label:start_ms"):
        clip_placements(text)
    assert clip_placements("yes:0,no:3500,yes:3600000") == "yes:0,no:3500,yes:3600000"


def test_tags_name_each_key_once():
    with pytest.raises(argparse.ArgumentTypeError, match="tag board given twice"):
        place_tags("board=a,board=b")
    assert place_tags("board=a, lab=2") == "board=a,lab=2"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("drop=nan", "drop=nan is not a number"),
        ("drop=inf", "drop=inf is not a number"),
        ("corrupt=1e400", "is not a number"),
        ("dup=-0.1", "out of range"),
        ("drop=0.5", "out of range"),
        ("drop=\u0661", "is not a number"),
        ("reset-every=1.5", "is not a number"),
        ("reset-every=4294967296", "out of range"),
        ("drop=0.1,drop=0.2", "drop is given twice"),
    ],
)
def test_fault_rates_are_finite_and_in_range(text, words):
    with pytest.raises(UserError, match=words):
        FaultSpec.parse(text)
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        fault_spec(text)


def test_fault_specs_that_are_fine():
    assert FaultSpec.parse("drop=1e-3,corrupt=0,dup=0.25,reset-every=200") == FaultSpec(0.001, 0, 0.25, 200)


BAD_PORTS = {
    "rfc2217://": "needs HOST:PORT",
    "socket://": "needs HOST:PORT",
    "socket://host": "needs HOST:PORT",
    "socket://host:99999": "port is not a number from 1 to 65535",
    "socket://host:0": "port is not a number from 1 to 65535",
    "socket://host:x": "port is not a number from 1 to 65535",
    "socket://[::1": "host or port cannot be read",
    "rfc2217://[::1]:": "needs HOST:PORT",
    "tcp://x": "protocol 'tcp' not known",
    "nosuch://x": "protocol 'nosuch' not known",
}
GOOD_PORTS = ["/dev/ttyACM0", "COM3", "auto", "socket://127.0.0.1:5000", "rfc2217://[::1]:2217", "loop://"]


@pytest.mark.parametrize(("url", "words"), sorted(BAD_PORTS.items()))
def test_a_malformed_port_url_is_named_with_the_accepted_forms(url, words):
    assert words in port_url_problem(url)
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        port_names(url)
    assert f"cannot open link {url!r}" in str(refused.value) and "socket://HOST:PORT" in str(refused.value)


@pytest.mark.parametrize("url", GOOD_PORTS)
def test_well_formed_ports_pass(url):
    assert port_url_problem(url) is None and port_names(url) == url


def test_a_custom_scheme_is_left_to_its_handler():
    assert port_url_problem("benchloop://", custom_schemes=True) is None


def test_open_link_refuses_a_malformed_url_as_bad_input():
    from harness.errors import DeviceNotFound
    from harness.link.transport import open_link

    with pytest.raises(UserError, match="socket://host:99999") as refused:
        open_link("socket://host:99999")
    assert not isinstance(refused.value, DeviceNotFound)


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--results", ""],
        ["eval", "--model", " "],
        ["eval", "--dataset", ""],
        ["runs", "list", "--results", ""],
        ["runs", "report", ""],
        ["runs", "compare", "", "b"],
        ["models", "pull", ""],
        ["stream", "score", "--ledger", "", "--detections", "d.csv"],
        ["lpirc", "referee", "--dataset", "d", "--results", ""],
        ["meter", ""],
    ],
    ids=lambda argv: " ".join(a or "''" for a in argv),
)
def test_an_empty_value_is_refused_while_parsing(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == exits.USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "empty" in line


CLOSED_READER = [
    ["models", "list"],
    ["boards", "list"],
    ["dataset", "subsets"],
    ["dataset", "subsets", "--json"],
    ["tflm", "sources"],
    ["eval", "--help"],
    ["runs", "list", "--results", "."],
    ["runs", "list", "--results", ".", "--json"],
    ["dataset", "list"],
]


@pytest.mark.parametrize("argv", CLOSED_READER, ids=" ".join)
def test_a_closed_stdout_is_a_quiet_exit_0(argv, tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first byte, as `| head -0` leaves it
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")},
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_reader_that_closes_after_the_first_line_ends_the_listing_quietly(tmp_path):
    """`harness models list | head -1`: the reader takes a line and goes; harness exits 0 with nothing on stderr."""
    listing = subprocess.Popen(
        [sys.executable, "-m", "harness", "models", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "80"},
    )
    assert listing.stdout.readline()
    listing.stdout.close()  # as head does after its line
    assert listing.wait(timeout=60) == 0
    assert listing.stderr.read() == b""


def test_a_broken_pipe_that_is_not_stdout_is_a_link_error_not_a_path(capsys):
    """A socket or a child's pipe that closes under a command never reads "check the path and its permissions"."""
    from harness.cli.app import _handled

    def breaks(_args):
        raise BrokenPipeError(32, "Broken pipe")

    args = argparse.Namespace(handler=breaks)
    assert _handled(build_parser(), args, False, []) == exits.LINK
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("harness: link error:") and "(Broken pipe)" in line and "went away" in line
    assert "path" not in line and "permissions" not in line

"""The command line's one line: whatever a value holds, a message is one line the terminal only shows."""

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from harness.cli.guards import one_line
from tests.forked_cli import run_harness_command


@given(st.text())
def test_a_message_is_one_line_with_nothing_a_terminal_acts_on(text):
    shown = one_line(f"harness: error: {text} is not a run folder")
    assert "\n" not in shown and "\r" not in shown
    assert not [ch for ch in shown if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]


def test_printable_text_is_left_as_it_is():
    assert one_line("harness: error: schön ١٢ ✓") == "harness: error: schön ١٢ ✓"


def test_escapes_are_shown_not_acted_on():
    assert one_line("a\nb\x1b[31mc\u202ed") == "a\\nb\\x1b[31mc\\u202ed"


def test_every_refusal_of_the_cli_goes_through_it(tmp_path):
    """A run id holding a newline and an ANSI escape: one line, escaped (runs report, an argparse error)."""
    for args in (["runs", "report", "RUN\x1b[2J\nFAKE", "--results", str(tmp_path)], ["eval", "--limit", "1\n2"]):
        done = run_harness_command([*args], cwd=tmp_path)
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "\x1b" not in done.stderr

"""Meter logs (issue #31): a count that falls (a second log joined on) or leaps is refused naming the line;
repeats are one reading; missed polls within the limit are counted."""

import pytest

from harness.energy.replay import MAX_POLL_GAP, read_wt310_log
from harness.errors import UserError

ROWS = ["5,0.1,0.5,0.0001,1", "5,0.1,0.5,0.0002,2", "5,0.1,0.5,0.0003,3"]


def _log(tmp_path, *rows: str):
    path = tmp_path / "log.csv"
    path.write_text("".join(row + "\n" for row in rows))
    return path


def test_two_logs_back_to_back_are_refused_at_the_second(tmp_path):
    with pytest.raises(UserError, match=r"log.csv:4: the sample count falls from 3 to 1: a second log starts here"):
        read_wt310_log(_log(tmp_path, *ROWS, *ROWS))


def test_a_leap_of_the_count_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"log.csv:2: the sample count jumps from 1 to 1e\+15"):
        read_wt310_log(_log(tmp_path, ROWS[0], "5,0.1,0.5,0.0002,1e15"))


def test_missed_polls_up_to_the_limit_are_counted(tmp_path):
    trace = read_wt310_log(_log(tmp_path, ROWS[0], f"5,0.1,0.5,0.0002,{1 + MAX_POLL_GAP}"))
    assert trace.notes["polls_missed"] == MAX_POLL_GAP - 1
    assert trace.mean_watts(trace.t[0], trace.t[-1]) == pytest.approx(0.0002 * 3600 / (1 + MAX_POLL_GAP))


def test_a_poll_read_twice_is_one_reading(tmp_path):
    trace = read_wt310_log(_log(tmp_path, ROWS[0], ROWS[1], ROWS[1], ROWS[2]))
    assert list(trace.t) == [0.0, 1.0, 2.0, 3.0]


def test_a_log_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "log.csv").mkdir()
    with pytest.raises(UserError, match=r"meter log .*log\.csv is a folder"):
        read_wt310_log(tmp_path / "log.csv")


@pytest.mark.parametrize("count", ["\uff12", "\u0662", "1_0"], ids=["fullwidth", "arabic-indic", "underscore"])
def test_a_count_not_in_ascii_digits_is_refused(tmp_path, count):
    with pytest.raises(UserError, match=r"log.csv:2: expected 5 numbers .* in ASCII digits"):
        read_wt310_log(_log(tmp_path, ROWS[0], f"5,0.1,0.5,0.0002,{count}"))

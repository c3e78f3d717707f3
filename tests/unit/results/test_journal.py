"""The eval journal on its own: whole lines only, whatever the file system does."""

import errno
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import UserError
from harness.results.journal import Journal

ENTRY = {
    "index": 0,
    "id": "a.jpg",
    "device_output": "00ff",
    "ticks": 5,
    "tick_hz": 1000,
    "timer": 2,
    "host": {"tflm": "00ff"},
    "instructions": None,
}


def test_a_short_write_is_continued_until_the_line_is_whole(tmp_path, monkeypatch):
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:7]))
    journal = Journal(tmp_path)
    journal.append(ENTRY)
    journal.append(ENTRY | {"index": 1})
    journal.close()
    assert sorted(Journal(tmp_path).load()) == [0, 1]


def test_a_write_that_fails_part_way_leaves_no_cut_line(tmp_path, monkeypatch):
    journal = Journal(tmp_path)
    journal.append(ENTRY)
    real_write = os.write
    calls = []

    def disk_fills(fd, data):
        calls.append(data)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data[:10])

    monkeypatch.setattr(os, "write", disk_fills)
    with pytest.raises(UserError, match="No space left on device"):
        journal.append(ENTRY | {"index": 1})
    monkeypatch.undo()
    journal.append(ENTRY | {"index": 2})
    journal.close()
    assert sorted(Journal(tmp_path).load()) == [0, 2]


class _Interrupted(KeyboardInterrupt):
    pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.integers(1, 40), min_size=1, max_size=8),
    at=st.integers(0, 12),
    after_the_write=st.booleans(),
    rows_per_group=st.integers(2, 4),
)
def test_an_interrupt_anywhere_in_an_append_keeps_the_line_exactly_when_it_was_written_whole(
    tmp_path_factory, pieces, at, after_the_write, rows_per_group
):
    """Ctrl-C (or SIGTERM, raised as KeyboardInterrupt) lands on write call `at`, before its bytes go out or
    just after: the journal then holds whole lines only, the interrupted entry exactly when every byte of its
    line was written (what a reader saw in the file stays), and the next run appends after it."""
    folder = tmp_path_factory.mktemp("journal")
    journal = Journal(folder, rows_per_group=rows_per_group)
    _append(journal, range(3))
    real_write, written = os.write, []

    def interrupted_write(fd, data):
        call = len(written)
        if call == at and not after_the_write:
            raise _Interrupted
        written.append(real_write(fd, data[: pieces[call % len(pieces)]]))
        if call == at:
            raise _Interrupted
        return written[-1]

    line = (json.dumps(_entry(3), separators=(",", ":")) + "\n").encode()
    os.write = interrupted_write  # not monkeypatch: hypothesis runs many examples in one test call
    try:
        journal.append(_entry(3))
        interrupted = False
    except _Interrupted:
        interrupted = True
    finally:
        os.write = real_write
    journal.close()
    whole = sum(written) == len(line)
    resumed = Journal(folder, rows_per_group=rows_per_group)
    kept = [0, 1, 2, 3] if whole else [0, 1, 2]
    assert sorted(resumed.done()) == kept
    assert interrupted or whole
    _append(resumed, range(4, 7))
    resumed.close()
    assert sorted(Journal(folder, rows_per_group=rows_per_group).done()) == [*kept, 4, 5, 6]


@pytest.mark.parametrize(
    "torn",
    [
        b'{"index":1,"id":"b.jpg","dev',
        b'{"index":1,"id":"b.jpg","dev' + json.dumps(ENTRY | {"index": 2}).encode(),  # the next append glued on
        b'{"index":1,"id":"caf\xc3',  # cut inside a character
    ],
)
def test_a_line_cut_short_is_no_entry_and_its_sample_runs_again(tmp_path, torn):
    (tmp_path / "journal.jsonl").write_bytes(json.dumps(ENTRY).encode() + b"\n" + torn + b"\n")
    assert list(Journal(tmp_path).load()) == [0]
    assert (tmp_path / "journal.jsonl").read_bytes() == json.dumps(ENTRY).encode() + b"\n", "appends follow entries"


@pytest.mark.parametrize(
    ("damaged", "words"),
    [
        (b"[1, 2]", "not a journal entry"),
        (b'{"index":"1"}', "not a journal entry"),
        (json.dumps(ENTRY | {"index": 1, "device_output": "zz"}).encode(), "not a journal entry"),
        (json.dumps(ENTRY | {"index": -1}).encode(), "not a journal entry"),
        (json.dumps(ENTRY | {"index": 1, "ticks": 2**64}).encode(), "not a journal entry"),
        (json.dumps(ENTRY | {"index": 1, "board": 5}).encode(), "not a journal entry"),
        (b"[" * 10000 + b"]" * 10000, "deep"),
        (json.dumps(ENTRY | {"index": 1}).encode().replace(b'"ticks": 5', b'"ticks": NaN'), "field 'ticks' is nan"),
        (b'{"index": ' + b"9" * 5001 + b"}", "integer"),
        (json.dumps(ENTRY).encode(), "holds sample 0 a second time"),
    ],
    ids=[
        "list",
        "index-text",
        "output-not-hex",
        "index-negative",
        "ticks-huge",
        "board-number",
        "deep",
        "nan",
        "5001-digits",
        "twice",
    ],
)
def test_a_whole_line_that_is_no_entry_is_named_with_its_line(tmp_path, damaged, words):
    (tmp_path / "journal.jsonl").write_bytes(json.dumps(ENTRY).encode() + b"\n" + damaged + b"\n")
    with pytest.raises(UserError) as refused:
        Journal(tmp_path).load()
    message = str(refused.value)
    assert all(w in message for w in (words, "journal.jsonl line 2", "delete line 2")), message
    assert "\n" not in message


def test_a_journal_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "journal.jsonl")
    with pytest.raises(UserError, match="is a FIFO"):
        Journal(tmp_path).done()


def test_a_row_group_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    (tmp_path / "rows").mkdir()
    os.mkfifo(tmp_path / "rows" / "group-00000.parquet")
    with pytest.raises(UserError, match="is a FIFO"):
        Journal(tmp_path).done()


def test_a_full_disk_names_the_journal_and_the_exact_resume_command(tmp_path, monkeypatch):
    partial = tmp_path / "my results" / ".20260101T000000Z-m-b-abcd.partial"
    partial.mkdir(parents=True)
    journal = Journal(partial)
    journal.append(ENTRY)
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    with pytest.raises(UserError) as refused:
        journal.append(ENTRY | {"index": 1})
    journal.close()
    message = str(refused.value)
    assert "journal.jsonl of unfinished run 20260101T000000Z-m-b-abcd" in message
    assert f"`harness eval --resume 20260101T000000Z-m-b-abcd --results '{tmp_path}/my results'` goes on" in message


def _entry(i: int) -> dict:
    return ENTRY | {"index": i, "id": f"{i}.jpg", "host": {"tflm": f"{i:02x}"}}


def _append(journal, indices):
    for i in indices:
        journal.append(_entry(i))


def test_every_rows_per_group_lines_become_a_row_group_and_are_cut_off(tmp_path):
    journal = Journal(tmp_path, rows_per_group=4)
    _append(journal, range(10))
    journal.close()
    assert [p.name for p in journal.groups()] == ["group-00000.parquet", "group-00001.parquet"]
    assert sorted(Journal(tmp_path).load()) == [8, 9]  # the lines since the last group
    again = Journal(tmp_path, rows_per_group=4)
    assert again.done() == {i: f"{i}.jpg" for i in range(10)}
    tables = list(again.tables())
    assert [t.num_rows for t in tables] == [4, 4, 2]
    outputs = [bytes(v).hex() for t in tables for v in t.column("host.tflm").to_pylist()]
    assert outputs == [f"{i:02x}" for i in range(10)]


def test_a_run_resumed_mid_group_goes_on_filling_that_group(tmp_path):
    first = Journal(tmp_path, rows_per_group=4)
    _append(first, range(6))  # killed here: one group and two lines
    resumed = Journal(tmp_path, rows_per_group=4)
    assert sorted(resumed.done()) == list(range(6))
    _append(resumed, range(6, 9))
    resumed.close()
    assert [t.num_rows for t in Journal(tmp_path).tables()] == [4, 4, 1]


def test_lines_already_in_a_group_are_not_journaled_twice(tmp_path):
    """Killed after a group was renamed into place, before its lines were cut off."""
    journal = Journal(tmp_path, rows_per_group=4)
    _append(journal, range(3))
    journal.close()
    lines = (tmp_path / "journal.jsonl").read_bytes()
    _append(journal, [3])  # seals the group, cuts the lines
    journal.close()
    (tmp_path / "journal.jsonl").write_bytes(lines + json.dumps(ENTRY | {"index": 4, "id": "4.jpg"}).encode() + b"\n")
    again = Journal(tmp_path, rows_per_group=4)
    assert sorted(again.done()) == [0, 1, 2, 3, 4]
    assert sorted(Journal(tmp_path).load()) == [4]


LINE = json.dumps(ENTRY).encode() + b"\n"


@pytest.mark.parametrize(
    ("journal", "words"),
    [
        ("\n".join([json.dumps(ENTRY)] * 2).encode("utf-32"), ("line 1", "byte 0xff")),
        (LINE + b'{"index":1,"id":"\xc0\xaf"}\n' + LINE.replace(b"0,", b"2,", 1), ("line 2", "byte 0xc0")),
        (LINE + b'{"index":1,"id":"\xed\xa0\x80"}\n' + LINE.replace(b"0,", b"2,", 1), ("line 2", "byte 0xed")),
        (LINE + b"\xff\n" + LINE.replace(b"0,", b"2,", 1), ("line 2", "byte 0xff")),
        (LINE + b"\xff\n", ("line 2", "byte 0xff")),
        (LINE + b"\xff", ("line 2", "byte 0xff")),
        (LINE + b'{"index":1,"id":"b.jpg","dev\n' + LINE.replace(b"0,", b"2,", 1), ("line 2",)),
    ],
    ids=["utf32", "overlong", "lone-surrogate", "0xff-line", "0xff-last-line", "0xff-tail", "cut-not-last"],
)
def test_only_the_last_line_may_be_cut_short_any_other_is_named_with_its_byte(tmp_path, journal, words):
    (tmp_path / "journal.jsonl").write_bytes(journal)
    with pytest.raises(UserError) as refused:
        Journal(tmp_path).load()
    message = str(refused.value)
    assert all(w in message for w in ("journal.jsonl", *words, "delete line")), message
    assert "\n" not in message
    assert (tmp_path / "journal.jsonl").read_bytes() == journal, "a refused journal is left as it was"


@pytest.mark.parametrize(
    ("changed", "field"),
    [
        ({"tick_hz": 0}, "tick_hz"),
        ({"timer": 9}, "timer"),
        ({"board": "\x1b[31mevil"}, "board"),
        ({"board": "a\nb"}, "board"),
        ({"id": ""}, "id"),
        ({"host": {"tflm": "zz"}}, "host"),
        ({"instructions": -1}, "instructions"),
        ({"ticks": None}, "ticks"),
    ],
    ids=lambda v: str(v),
)
def test_an_entry_with_a_field_out_of_range_is_named_with_line_and_field(tmp_path, changed, field):
    (tmp_path / "journal.jsonl").write_bytes(LINE + json.dumps(ENTRY | {"index": 1} | changed).encode() + b"\n")
    with pytest.raises(UserError) as refused:
        Journal(tmp_path).load()
    message = str(refused.value)
    assert all(w in message for w in ("journal.jsonl line 2", f"field {field}", "delete line 2")), message


def test_a_device_without_a_timer_journals_no_ticks(tmp_path):
    entry = ENTRY | {"ticks": None, "tick_hz": 0, "timer": 0, "board": "sim-board"}
    (tmp_path / "journal.jsonl").write_bytes(json.dumps(entry).encode() + b"\n")
    assert Journal(tmp_path).load() == {0: entry}


def test_a_tail_cut_inside_a_character_is_dropped(tmp_path):
    (tmp_path / "journal.jsonl").write_bytes(LINE + b'{"index":1,"id":"caf\xc3')
    assert list(Journal(tmp_path).load()) == [0]
    assert (tmp_path / "journal.jsonl").read_bytes() == LINE

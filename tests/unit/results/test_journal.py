"""The eval journal on its own: whole lines only, whatever the file system does."""

import errno
import json
import os

import pytest

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


@pytest.mark.parametrize(
    "damaged",
    [
        b'{"index":1,"id":"b.jpg","dev',
        b"[1, 2]",
        b'{"index":"1"}',
        json.dumps(ENTRY | {"index": 1, "device_output": "zz"}).encode(),
    ],
)
def test_a_damaged_line_is_no_entry(tmp_path, damaged):
    (tmp_path / "journal.jsonl").write_bytes(json.dumps(ENTRY).encode() + b"\n" + damaged + b"\n")
    assert list(Journal(tmp_path).load()) == [0]

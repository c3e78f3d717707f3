"""The one way in (harness/reading.py), the one way out (harness/files.py) and the folder lock (harness/locks.py).

Each reader is tried with every form a hostile file takes, and with generated text (hypothesis): it gives its
value or a UserError, never another exception, never a hang."""

import json
import math
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import files, locks, names, reading
from harness.errors import UserError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
KINDS = [value for value in vars(reading).values() if isinstance(value, reading.FileKind)]
READERS = {
    "bytes": reading.read_bytes,
    "text": reading.read_text,
    "csv": reading.read_csv,
    "json": reading.read_json,
    "toml": reading.read_toml,
    "check": reading.check_regular,
}


def _not_regular(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    folder = tmp_path / "folder"
    folder.mkdir()
    return {
        "fifo": (fifo, "is a FIFO"),
        "dev-zero link": (zero, "is a character device"),
        "folder": (folder, "folder"),
        "missing": (tmp_path / "missing", "does not exist"),
        "link loop": (loop, "cannot be read"),
    }


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("form", ["fifo", "dev-zero link", "folder", "missing", "link loop"])
def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path, reader, form):
    path, words = _not_regular(tmp_path)[form]
    with pytest.raises(UserError, match=re.escape(words)) as refused:
        READERS[reader](path, reading.CARD)
    assert str(path) in str(refused.value) and "model card" in str(refused.value)


def test_a_fifo_with_a_writer_waiting_is_still_refused(tmp_path):
    """Even a FIFO that would deliver data is not a file: the refusal does not depend on timing."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('a = 1')"])
    try:
        with pytest.raises(UserError, match="is a FIFO"):
            reading.read_toml(fifo, reading.BOARD)
    finally:
        writer.kill()
        writer.wait()


def test_a_file_over_its_kinds_size_is_refused_naming_the_limit(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (reading.BOARD.max_bytes + 1))
    with pytest.raises(UserError, match=r"more than the 1 MiB a board file may be"):
        reading.read_toml(big, reading.BOARD)
    with pytest.raises(UserError, match="more than the 1 MiB"):
        reading.check_regular(big, reading.BOARD)


def test_a_link_to_a_regular_file_is_read(tmp_path):
    target = tmp_path / "real.json"
    target.write_text('{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert reading.read_json(link, reading.SUMMARY) == {"a": 1}


def test_a_bom_is_dropped_and_text_is_utf8(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"\xef\xbb\xbfname,value\nsch\xc3\xb6n,1\n")
    assert reading.read_csv(path, reading.LABELS) == [["name", "value"], ["schön", "1"]]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"a,b\n\xff\n", "byte 0xff at offset 4"),
        ("café".encode("latin-1"), "byte 0xe9 at offset 3"),
        ("a,b".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        ("a,b".encode("utf-16-be"), "NUL character"),
        (b"a\x00b", "NUL character at offset 1"),
    ],
)
def test_text_that_is_not_utf8_is_refused_naming_the_byte(tmp_path, data, words):
    path = tmp_path / "x.csv"
    path.write_bytes(data)
    with pytest.raises(UserError, match=re.escape(words)):
        reading.read_text(path, reading.LABELS)


def test_a_csv_field_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n" + "x" * (reading.MAX_CSV_FIELD + 1) + ",1\n")
    with pytest.raises(UserError, match="a field may be at most 65,536 characters"):
        reading.read_csv(path, reading.LABELS)
    path.write_text("a,b\n" + "x" * reading.MAX_CSV_FIELD + ",1\n")
    assert len(reading.read_csv(path, reading.LABELS)[1][0]) == reading.MAX_CSV_FIELD


@pytest.mark.parametrize(
    ("reader", "text", "words"),
    [
        (reading.parse_json, "[" * 10_000 + "]" * 10_000, "more than 32 deep"),
        (reading.parse_json, "[" * 33 + "]" * 33, "more than 32 deep"),
        (reading.parse_json, '{"a": NaN}', "field 'a' is nan, not a finite number"),
        (reading.parse_json, '{"a": [1, -Infinity]}', "field 'a[1]' is -inf, not a finite number"),
        (reading.parse_json, '{"a": {"b": 1e400}}', "field 'a.b' is inf, not a finite number"),
        (reading.parse_json, '{"a": ' + "9" * 5001 + "}", "Exceeds the limit"),
        (reading.parse_json, '{"a": ' + "9" * 30 + "}", "field 'a' is a 30-digit integer"),
        (reading.parse_json, '{"a": ', "line 1, column 7"),
        (reading.parse_toml, "a = " + "[" * 10_000 + "]" * 10_000, "more than 32 deep"),
        (reading.parse_toml, "[sim]\nemulate_invoke_ms = inf", "field 'sim.emulate_invoke_ms' is inf, not a finite"),
        (reading.parse_toml, "a = -inf", "field 'a' is -inf, not a finite number"),
        (reading.parse_json, "NaN", "summary.json is nan, not a finite number"),
        (reading.parse_toml, "a = " + "9" * 5001, "is not valid TOML"),
        (reading.parse_toml, "a = [1,", "is not valid TOML"),
    ],
)
def test_structured_text_is_bounded(reader, text, words):
    with pytest.raises(UserError, match=re.escape(words)):
        reader(text, reading.SUMMARY, "summary.json")


def test_nesting_up_to_the_limit_is_read():
    assert reading.depth(reading.parse_json("[" * 32 + "]" * 32, reading.SUMMARY, "s.json")) == 32


class _Figures(pydantic.BaseModel):
    model_config = reading.STRICT
    accuracy: float = pydantic.Field(ge=0, le=1)
    n: int = pydantic.Field(ge=0)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"accuracy": 0.5}, "missing field 'n'"),
        ({"accuracy": 0.5, "n": 3, "acuracy": 1}, "unknown field 'acuracy'"),
        ({"accuracy": 5.0, "n": 3}, "field 'accuracy': Input should be less than or equal to 1"),
        ({"accuracy": 0.5, "n": -1}, "field 'n'"),
        ({"accuracy": "x", "n": 1}, "field 'accuracy'"),
        ([1, 2], "the top level"),
    ],
)
def test_a_schema_names_the_file_and_the_field(data, words):
    with pytest.raises(UserError, match=re.escape(words)) as refused:
        reading.validate(data, _Figures, reading.SUMMARY, "run/summary.json", fix="restore the run")
    assert str(refused.value).startswith("run summary run/summary.json: ")
    assert str(refused.value).endswith("; restore the run")


def test_the_docs_list_every_kind_with_its_limit():
    table = DOCS.read_text().split("<!-- file-limits")[1].split("<!-- end file-limits")[0]
    rows = dict(re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|$", table, re.M)[1:])
    assert rows == {kind.name: reading._size(kind.max_bytes) for kind in KINDS}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=40,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(st.text(), json_values.map(lambda v: json.dumps(v, allow_nan=True))))
def test_any_text_is_json_or_a_one_line_refusal(text):
    try:
        value = reading.parse_json(text, reading.SUMMARY, "s.json")
    except UserError as refused:
        assert "\n" not in str(refused)
        return
    assert reading.depth(value) <= reading.MAX_DEPTH
    stack = [value]
    while stack:
        item = stack.pop()
        assert not (isinstance(item, float) and not math.isfinite(item))
        stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else [])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_toml_or_a_one_line_refusal(text):
    try:
        reading.parse_toml(text, reading.BOARD, "b.toml")
    except UserError as refused:
        assert "\n" not in str(refused).split(" is not valid TOML")[0]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_text_or_a_refusal_naming_the_byte(data):
    try:
        text = reading.decode_text(data, reading.TEXT, "t.txt")
    except UserError as refused:
        assert re.search(r"byte 0x[0-9a-f]{2} at offset \d+|UTF-16|UTF-32|NUL character", str(refused))
        return
    assert text == data.decode("utf-8-sig")


# One way out ---------------------------------------------------------------------------------------------


def _node(path: Path) -> tuple:
    info = path.lstat()
    return stat.S_IFMT(info.st_mode), info.st_rdev, info.st_size, info.st_mtime_ns


def test_only_a_regular_file_is_ever_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    targets = [fifo, folder, Path("/dev/null")]
    if os.geteuid() == 0:
        device = tmp_path / "full"
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's numbers
        targets.append(device)
    for target in targets:
        before = _node(target)
        with pytest.raises(UserError, match="harness only ever replaces regular files"):
            files.write_bytes_atomically(target, b"report")
        assert _node(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in targets if p.parent == tmp_path)


def test_a_link_is_followed_and_its_file_written(tmp_path):
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    files.write_text_atomically(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to_fifo"
    to_fifo.symlink_to(fifo)
    with pytest.raises(UserError, match="is a FIFO"):
        files.check_output(to_fifo, "--out")


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.bin"

    def fail(partial: Path) -> None:
        partial.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        files.write_atomically(target, fail)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_output_path_is_refused():
    with pytest.raises(UserError, match="path is empty"):
        files.check_output("", "--out")
    with pytest.raises(UserError, match="path is empty"):
        files.check_output_folder("", "--results")


# The lock and ids ----------------------------------------------------------------------------------------


def test_a_second_writer_is_told_who_holds_the_folder(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from harness.locks import held\n"
            f"with held(Path({str(tmp_path)!r}), 'run'):\n    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        refused = pytest.raises(UserError, match=rf"is being written by pid {holder.pid} on host \S+; wait")
        with refused, locks.held(tmp_path, "run"):
            pass
        assert locks.is_held(tmp_path) == f"pid {holder.pid} on host {os.uname().nodename}"
    finally:
        holder.kill()
        holder.wait()
    # Killed with SIGKILL: the kernel dropped the lock, and the stale .lock file blocks no one.
    assert locks.is_held(tmp_path) is None
    with locks.held(tmp_path, "run"):
        assert (tmp_path / locks.LOCK_NAME).read_text().split()[0] == str(os.getpid())


@pytest.mark.parametrize("good", ["sim", "nucleo_h743", "wv_quality_micronets_vww2_50_50_INT8", "a.b-c", "x" * 64])
def test_ids_that_are_folder_names(good):
    assert names.check_id(good, "board id") == good


@pytest.mark.parametrize(
    "bad", ["", "..", ".hidden", "x/../../../escaped", "a/b", "line\nbreak", "tab\t", " sp", "x" * 65, "é", 5, None]
)
def test_ids_that_could_escape_or_break_a_folder_name_are_refused(bad):
    with pytest.raises(UserError, match="is not a valid id"):
        names.check_id(bad, "board id", "boards/x.toml")


@given(st.text(max_size=80))
def test_a_valid_id_is_always_one_plain_path_component(text):
    if names.is_valid_id(text):
        assert Path(text).name == text and text not in (".", "..") and "\n" not in text


def _streamed(path, kind) -> bytes:
    with reading.open_binary(path, kind) as handle:
        return handle.read(4096)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc/self/mem (reading it: EIO)")
@pytest.mark.parametrize("read", [reading.read_bytes, reading.read_text, _streamed])
def test_an_error_part_way_through_a_read_names_the_file(read):
    # /proc/self/mem is a regular file of size 0 whose first page cannot be read: the read fails with EIO.
    with pytest.raises(UserError, match=r"text file /proc/self/mem could not be read \(Input/output error\)"):
        read("/proc/self/mem", reading.TEXT)


def test_a_control_character_is_refused_naming_its_field():
    data = {"id": "b", "sim": {"notes": "two\nlines", "hal": "x\x1b[2J"}}
    with pytest.raises(UserError, match=r"board file b.toml: field 'sim.hal' holds the control character '\\x1b'"):
        reading.refuse_control_characters(data, reading.BOARD, "b.toml", allowed_fields=("sim.notes",))
    reading.refuse_control_characters({"notes": "two\n\tlines"}, reading.CARD, "c.toml", allowed_fields=("notes",))


def test_csv_rows_carry_the_line_they_start_on(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text('filename,label\n\n"a\nb.jpg",1\nc.jpg\nd.jpg,0,extra\n')
    assert reading.read_csv_lines(path, reading.LABELS) == [
        (1, ["filename", "label"]),
        (3, ["a\nb.jpg", "1"]),
        (5, ["c.jpg"]),
        (6, ["d.jpg", "0", "extra"]),
    ]
    header, rows = reading.read_csv_records(path, reading.LABELS)
    assert header == ["filename", "label"]
    assert [row for _, row in rows][1:] == [
        {"filename": "c.jpg", "label": None},
        {"filename": "d.jpg", "label": "0", None: ["extra"]},
    ]
    assert reading.read_csv_records(tmp_path / "labels.csv", reading.LABELS)[0] is not None
    (tmp_path / "empty.csv").write_text("")
    assert reading.read_csv_records(tmp_path / "empty.csv", reading.LABELS) == (None, [])


def test_a_broken_csv_names_its_line(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("a,b\n1,2\n" + "x" * (reading.MAX_CSV_FIELD + 1) + ",1\n")
    with pytest.raises(UserError, match=r"is not valid CSV \(line 3: "):
        reading.read_csv(path, reading.LABELS)


def test_utf32_is_named_as_such(tmp_path):
    path = tmp_path / "x.csv"
    for encoding in ("utf-32", "utf-32-be"):
        path.write_bytes("\ufeffa,b".encode(encoding) if encoding.endswith("be") else "a,b".encode(encoding))
        with pytest.raises(UserError, match="is UTF-32 text; save it as UTF-8"):
            reading.read_text(path, reading.LABELS)


def test_a_pseudo_file_never_makes_a_read_wait(tmp_path):
    """The descriptor stays non-blocking: a /proc file that says it is regular (/proc/kmsg, empty) answers 'try
    again' to a read, which is one line, rather than waiting forever."""
    path = tmp_path / "x.csv"
    path.write_text("a,b\n")
    with reading.open_binary(path, reading.LABELS) as handle:
        assert os.get_blocking(handle.fileno()) is False
        assert handle.read() == b"a,b\n"


@pytest.mark.parametrize("char", ["\n", "\x1b", "\u202e", "\u200b", "\u2028"])
def test_text_values_that_a_terminal_acts_on_are_refused(char):
    with pytest.raises(UserError, match=r"field 'board.name' holds the control character"):
        reading.refuse_control_characters({"board": {"name": f"nucleo{char}x"}}, reading.BOARD, "b.toml")


def test_a_key_twice_in_one_json_object_is_refused():
    with pytest.raises(UserError, match="names key 'n' twice in one object"):
        reading.parse_json('{"a": {"n": 1, "n": 2}}', reading.SUMMARY, "s.json")


def test_a_writer_that_lets_go_leaves_no_lock_file(tmp_path):
    with locks.held(tmp_path, "run"):
        assert (tmp_path / locks.LOCK_NAME).is_file()
    assert list(tmp_path.iterdir()) == []


def test_a_lock_file_removed_while_a_writer_waited_to_take_it_is_not_taken(tmp_path, monkeypatch):
    """The holder removes the file as it lets go; one who opened it just before locks a file no longer there and
    must take the new one, or two writers would each hold a lock."""
    stale = tmp_path / locks.LOCK_NAME
    stale.write_text("1 elsewhere\n")
    opened = []
    real_open = locks._open_lock

    def open_then_replace(path, flags):
        fd = real_open(path, flags)
        if not opened:  # the first open: the file is replaced under us, as a releasing holder does
            opened.append(fd)
            path.unlink()
            path.write_text("")
        return fd

    monkeypatch.setattr(locks, "_open_lock", open_then_replace)
    with locks.held(tmp_path, "run"):
        assert stale.read_text().split()[0] == str(os.getpid())

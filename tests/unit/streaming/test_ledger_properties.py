"""Property tests of the ledger parser (issue #31): whatever the bytes, a ledger is read or refused with a
UserError; what stream build writes reads back as it was, BOM or not; and a first row holding a digit in its time
cell is never taken as a header, so no event is dropped without a word."""

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import UserError
from harness.streaming.ledger import Event, load_ledger, write_ledger

LABELS = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DURATION_MS = 100_000


@st.composite
def events(draw) -> list[Event]:
    found = []
    for label in draw(st.lists(LABELS, max_size=12)):
        start = draw(st.integers(0, DURATION_MS - 1))
        end = draw(st.one_of(st.none(), st.integers(start, DURATION_MS)))
        if Event(label, start, end) not in found:  # the same event twice is refused (issue #31)
            found.append(Event(label, start, end))
    return found


def _key(event: Event) -> tuple:
    return (event.start_ms, event.label, -1 if event.end_ms is None else event.end_ms)


@SETTINGS
@given(written=events(), bom=st.booleans())
def test_what_stream_build_writes_reads_back(tmp_path, written, bom):
    path = tmp_path / "ledger.csv"
    write_ledger(path, written)
    if bom:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    # times of at least 1000 ms somewhere keep the seconds guess quiet; the unit is declared to be sure
    read = load_ledger(path, DURATION_MS, unit="ms")
    assert sorted(map(_key, read.events)) == sorted(map(_key, written))
    assert read.header_line == 1


@SETTINGS
@given(data=st.binary(max_size=400))
def test_any_bytes_are_read_or_refused_in_words(tmp_path, data):
    path = tmp_path / "ledger.csv"
    path.write_bytes(data)
    try:
        load_ledger(path, DURATION_MS, unit="ms")
    except UserError as refused:
        assert "ledger" in str(refused) and "\n" not in str(refused)


TIME_CELLS = st.text(alphabet=string.printable.replace("\n", "").replace("\r", "").replace(",", ""), max_size=8)


@SETTINGS
@given(label=LABELS, cell=TIME_CELLS)
def test_a_first_row_with_a_digit_is_data_never_a_header(tmp_path, label, cell):
    """`yes,1O00` or `yes,0x10`: an event or a refusal naming line 1, never a header dropped in silence."""
    if not any(c.isdigit() for c in cell):
        return
    path = tmp_path / "ledger.csv"
    path.write_text(f"{label},{cell}\nno,5000\n")
    try:
        read = load_ledger(path, DURATION_MS, unit="ms")
    except UserError as refused:
        assert "line 1" in str(refused) or "outside the audio" in str(refused)
        return
    assert read.header_line is None and len(read.events) == 2


@pytest.mark.parametrize(
    ("first_row", "header"),
    [
        ("label,start_ms,end_ms", True),
        ("label,onset", True),
        ("word , start", True),
        ("yes,1O00", False),
        ("yes,0x10", False),
        ("yes,nan", False),
        ("yes,inf", False),
        ("yes,", False),
        ("yes,\u0661\u0660\u0660\u0660", False),  # Arabic-Indic 1000: digits of another script are still digits
    ],
)
def test_header_or_data(tmp_path, first_row, header):
    path = tmp_path / "ledger.csv"
    path.write_text(f"{first_row}\nno,5000\n")
    if header:
        assert load_ledger(path, DURATION_MS, unit="ms").header_line == 1
    else:
        with pytest.raises(UserError, match="line 1"):
            load_ledger(path, DURATION_MS, unit="ms")


def test_a_bom_is_dropped_before_the_first_label(tmp_path):
    path = tmp_path / "ledger.csv"
    path.write_bytes(b"\xef\xbb\xbfyes,1000,2000\n")
    assert [e.label for e in load_ledger(path, DURATION_MS).events] == ["yes"]

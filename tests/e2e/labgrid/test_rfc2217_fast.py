"""harness's RFC 2217 client (harness/link/rfc2217_fast.py) against a real ser2net on loopback, serving a
pseudo-terminal: bytes arrive whole and in order both ways (0xFF too, which Telnet doubles), in large
transfers, and the baud rate set through RFC 2217 reaches the device."""

import os
import random
import termios
import threading
import time
import tty

import pytest

from harness.link import rfc2217_fast
from harness.link.transport import open_link
from tests.labgrid_farm import needs_labgrid, ser2net_port

pytestmark = needs_labgrid


@pytest.fixture
def pty_and_url():
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        with ser2net_port(os.ttyname(slave)) as port:
            yield master, slave, f"rfc2217://127.0.0.1:{port}?ign_set_control"
    finally:
        os.close(master)
        os.close(slave)


def _read_exactly(read, size: int, seconds: float = 60) -> bytes:
    data, deadline = bytearray(), time.monotonic() + seconds
    while len(data) < size and time.monotonic() < deadline:
        data += read(size - len(data))
    return bytes(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[:4096]) :]


def test_every_byte_value_both_ways(pty_and_url):
    master, _, url = pty_and_url
    link = open_link(url, 115200)
    try:
        assert isinstance(link, rfc2217_fast.Serial)
        every = bytes(range(256)) + b"\xff\xff\xff" + bytes(range(255, -1, -1))
        link.write(every)
        assert _read_exactly(lambda n: os.read(master, n), len(every)) == every
        _write_all(master, every)
        assert _read_exactly(link.read, len(every)) == every
        assert link.in_waiting == 0 and link.read(10) == b""  # the timeout: nothing more came
    finally:
        link.close()


def test_large_transfers_arrive_whole_and_in_order(pty_and_url):
    master, _, url = pty_and_url
    payload = random.Random(7).randbytes(4 << 20)  # a 0xFF every 256 bytes on average
    link = open_link(url, 2_000_000)
    try:
        writer = threading.Thread(target=_write_all, args=(master, payload))
        writer.start()
        got = _read_exactly(lambda n: link.read(min(n, 65536)), len(payload))
        writer.join()
        assert got == payload
        up = payload[: 1 << 20]
        reader = threading.Thread(target=lambda: received.append(_read_exactly(lambda n: os.read(master, n), len(up))))
        received: list[bytes] = []
        reader.start()
        link.write(up)
        reader.join()
        assert received == [up]
    finally:
        link.close()


def test_the_baud_rate_reaches_the_device(pty_and_url):
    _, slave, url = pty_and_url
    link = open_link(url, 921600)
    try:
        deadline = time.monotonic() + 10
        while termios.tcgetattr(slave)[4] != termios.B921600 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert termios.tcgetattr(slave)[4] == termios.B921600
        link.baudrate = 2_000_000
        assert termios.tcgetattr(slave)[4] == termios.B2000000
    finally:
        link.close()


def test_a_closed_server_is_a_serial_error(pty_and_url):
    import serial

    _, _, url = pty_and_url
    link = open_link(url, 115200)
    try:
        link._socket.shutdown(2)  # the connection gone, as when ser2net or the exporter stops
        with pytest.raises(serial.SerialException):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                link.read(1)
    finally:
        link.close()


def test_opening_waits_for_answers_not_for_pyserials_polls(pty_and_url, monkeypatch):
    """The settings, the modem lines (answers ignored, as on a place) and the purges are awaited as ser2net
    answers: pyserial's own 50 ms polls and 0.1 s sleeps for them (some 0.5 s a connection) are not taken.
    Only its Telnet option negotiation in open() still polls."""
    from serial import rfc2217

    _, _, url = pty_and_url
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(rfc2217.time, "sleep", lambda seconds: (slept.append(seconds), real_sleep(seconds)))
    link = open_link(url, 921600)
    try:
        opened = list(slept)
        link.reset_input_buffer()  # a purge, as each HELLO does
        link.baudrate = 115200
        assert slept == opened  # neither slept
    finally:
        monkeypatch.setattr(rfc2217.time, "sleep", real_sleep)  # close() pauses 0.3 s as pyserial's does
        link.close()
    assert 0.1 not in opened and sum(opened) <= 0.1, opened  # one or two of the option negotiation's polls


def _answer_twice(master: int, tries: int, gap: float) -> None:
    """The board's side: for each request, an answer at once and another `gap` seconds later."""
    for _ in range(tries):
        _read_exactly(lambda n: os.read(master, n), 4)
        os.write(master, b"A")
        time.sleep(gap)
        os.write(master, b"B")


def test_a_second_answer_is_not_held_for_a_delayed_ack(pty_and_url):
    """ser2net does not set TCP_NODELAY: an answer that follows an unacknowledged one waits (Nagle) for the
    host's TCP ACK, which Linux delays up to 40 ms on a connection where the host answers what it receives.
    The client acknowledges at once, so the second answer comes after the board's 5 ms, not ~40 ms."""
    master, _, url = pty_and_url
    tries, gap = 12, 0.005
    link = open_link(url, 921600)
    board = threading.Thread(target=_answer_twice, args=(master, tries, gap), daemon=True)
    board.start()
    gaps = []
    try:
        for _ in range(tries):
            link.write(b"req!")
            assert _read_exactly(link.read, 1, 10) == b"A"
            first = time.monotonic()
            assert _read_exactly(link.read, 1, 10) == b"B"
            gaps.append(time.monotonic() - first)
    finally:
        link.close()
    gaps.sort()
    assert gaps[len(gaps) // 2] < 0.025, [round(g * 1000, 1) for g in gaps]

"""The virtual board's link emulation, windowed input, pipelining and the baud switch, on the C core."""

import time

import pytest

from harness.device.sim_board import LinkEmulation
from harness.errors import UserError
from harness.link.framing import FrameDecoder, encode_frame
from harness.link.protocol import RESPONSE_BIT, Msg, load_input_payload
from tests.fake_runner import ChecksumRunner, PortProxy, core_on_pty, expected_output

pytestmark = pytest.mark.usefixtures("raw_inputs")  # constant and ramp inputs: the link as it carries raw bytes


INPUT = bytes(range(256)) * 32  # 8 KB
FRAMES = dict(rx_frame=2060, tx_frame=524, rx_buffer=4096)  # 2 KB chunks, two in flight


def _load_seconds(client, data: bytes) -> float:
    started = time.perf_counter()
    client.load_input(data)
    return time.perf_counter() - started


def test_paced_link_never_carries_payload_above_the_line_rate():
    """Only the lower bound is a property of the pacing; how near the line rate the link gets is a speed
    figure, measured by benchmarks/link.py (payload efficiency), not asserted here."""
    baud = 460800
    with core_on_pty(ChecksumRunner(len(INPUT), 2), emulation=LinkEmulation(baud), **FRAMES) as (_, client):
        client.hello()
        seconds = min(_load_seconds(client, INPUT) for _ in range(2))
        assert client.stats.corrupt_frames == 0
    wire = len(INPUT) * 10 / baud
    assert seconds >= wire


def test_emulated_inference_time_is_spent_and_reported():
    with core_on_pty(ChecksumRunner(10, 2), emulation=LinkEmulation(0, 0, 80)) as (_, client):
        started = time.perf_counter()
        result = client.run(bytes(10))
        wall = time.perf_counter() - started
    assert result.output == expected_output(bytes(10), 2)
    assert 0.08 <= result.timing.seconds <= wall


def test_next_input_is_accepted_while_the_model_runs():
    """LOAD_INPUT answers for the next sample come back before the running INVOKE's answer."""
    runner = ChecksumRunner(100, 2)
    with core_on_pty(runner, emulation=LinkEmulation(0, 0, 300)) as (port, client):
        client.hello()
        client.load_input(bytes(100))
        port.write(encode_frame(Msg.INVOKE, 1000))
        time.sleep(0.05)
        port.write(encode_frame(Msg.LOAD_INPUT, 1001, load_input_payload(0, bytes([7]) * 100)))
        decoder, events, deadline = FrameDecoder(), [], time.monotonic() + 2
        while len(events) < 2 and time.monotonic() < deadline:
            events += decoder.feed(port.read(64))
    assert [(e.type, e.seq) for e in events] == [
        (Msg.LOAD_INPUT | RESPONSE_BIT, 1001),
        (Msg.INVOKE | RESPONSE_BIT, 1000),
    ]
    assert events[1].payload[12:] == expected_output(bytes(100), 2)  # the first input, not the second


@pytest.mark.slow
def test_pipelined_stream_keeps_every_result():
    baud, data = 921600, [bytes([i]) * len(INPUT) for i in range(6)]
    invoke_ms = len(INPUT) * 10 / baud * 1e3  # inference as long as the transfer
    emulation = LinkEmulation(baud, 0, invoke_ms)
    with core_on_pty(ChecksumRunner(len(INPUT), 2), emulation=emulation, **FRAMES) as (_, client):
        client.hello()
        sequential = [client.run(d).output for d in data]
        pipelined = [r.output for r in client.run_stream(data)]
    # How much the overlap saves is a speed figure: benchmarks/link.py (c) measures it side by side.
    assert pipelined == sequential == [expected_output(d, 2) for d in data]


def test_an_invoke_lost_while_the_next_input_streams_is_not_run_on_the_wrong_input():
    with core_on_pty(ChecksumRunner(100, 2), emulation=LinkEmulation(0, 0, 10)) as (_, client):
        client.hello()
        first, second = bytes([1]) * 100, bytes([2]) * 100
        client.load_input(first)
        client.load_input(second)  # the INVOKE for `first` never arrived: `second` overwrote it
        started = client._start_invoke(first)
        results = list(client.run_stream([second]))
        assert client._finish_pipelined(first, started, next_data=None).output == expected_output(first, 2)
    assert results[0].output == expected_output(second, 2)


class _WrongRateDropsBytes(PortProxy):
    """A port whose bytes are lost while host and device disagree on the rate, like a real UART."""

    def __init__(self, port):
        super().__init__(port)
        self.good = port.baudrate

    def write(self, data):
        return self._port.write(data) if self._port.baudrate == self.good else len(data)


def test_baud_switch_after_the_handshake_speeds_up_the_emulated_link():
    boards = []

    def keep_board(port, board):
        boards.append(board)
        return port

    emulation = LinkEmulation(115200, 2_000_000)
    with core_on_pty(ChecksumRunner(len(INPUT), 2), emulation=emulation, **FRAMES, wrap=keep_board) as (_, c):
        assert c.hello().max_baud == 2_000_000
        assert c.switch_baud(2_000_000) and c.port.baudrate == 2_000_000 and c.stats.baud == 2_000_000
        seconds = _load_seconds(c, INPUT)
        assert boards[0].baud == 2_000_000  # the device switched too: its link is paced at the new rate
    assert seconds >= len(INPUT) * 10 / 2_000_000


def test_a_rate_above_the_boards_maximum_is_refused_naming_both_never_lowered():
    with core_on_pty(ChecksumRunner(10, 2), emulation=LinkEmulation(115200, 2_000_000)) as (_, c):
        c.hello()
        with pytest.raises(UserError) as refused:
            c.switch_baud(4_294_967_295)
        message = str(refused.value)  # the setting as the API names it; the CLI says --switch-baud
        assert message == "'switch_baud' 4,294,967,295 is above board test-board's maximum baud rate 2,000,000; " + (
            "pass at most 2000000"
        )
        assert c.port.baudrate == 115200 and c.stats.baud_fallbacks == 0
        assert c.run(bytes(10)).output == expected_output(bytes(10), 2)  # the link was never touched


@pytest.mark.slow
def test_a_baud_switch_the_link_cannot_carry_falls_back_on_both_ends():
    with core_on_pty(ChecksumRunner(len(INPUT), 2), emulation=LinkEmulation(115200, 2_000_000), **FRAMES) as (p, c):
        c.port = _WrongRateDropsBytes(p)
        c.hello()
        assert not c.switch_baud(2_000_000)
        assert c.stats.baud_fallbacks == 1 and c.port.baudrate == 115200
        seconds = _load_seconds(c, INPUT)  # the device went back to 115200 as well
        assert c.run(INPUT).output == expected_output(INPUT, 2)
    assert seconds >= len(INPUT) * 10 / 115200


class _UartPair(PortProxy):
    """Host and virtual board as two UARTs: what the host writes is lost unless both are at the same
    rate, and answers the host reads are lost while lose(sent) holds (sent: the message types written)."""

    def __init__(self, port, board, lose):
        super().__init__(port)
        self._board, self._lose, self.sent = board, lose, []

    def write(self, data):
        self.sent += [frame.type for frame in FrameDecoder().feed(data)]
        return self._port.write(data) if self._port.baudrate == self._board.baud else len(data)

    def read(self, size=1):
        data = self._port.read(size)
        return b"" if self._lose(self) else data


NEW_RATE = 2_000_000


def _switch_through(lose):
    emulation = LinkEmulation(115200, NEW_RATE)
    boards = []

    def wrap(port, board):
        boards.append(board)
        return _UartPair(port, board, lose)

    return core_on_pty(ChecksumRunner(len(INPUT), 2), emulation=emulation, wrap=wrap, **FRAMES), boards


@pytest.mark.slow
def test_a_heard_hello_whose_answers_are_lost_does_not_strand_the_device_at_the_new_rate():
    link, boards = _switch_through(lambda pair: pair.baudrate == NEW_RATE)  # the host hears nothing there
    with link as (_, c):
        c.hello()
        assert not c.switch_baud(NEW_RATE)
        assert c.stats.baud_fallbacks == 1 and c.port.baudrate == boards[0].baud == 115200
        assert c.run(INPUT).output == expected_output(INPUT, 2)


@pytest.mark.slow
def test_a_lost_confirmation_answer_finds_the_device_committed_at_the_new_rate():
    link, boards = _switch_through(lambda pair: pair.baudrate == NEW_RATE and pair.sent[-1] == Msg.LINK_TEST)
    with link as (_, c):
        c.hello()
        assert c.switch_baud(NEW_RATE)
        assert c.port.baudrate == boards[0].baud == NEW_RATE and c.stats.baud == NEW_RATE
        assert c.run(INPUT).output == expected_output(INPUT, 2)


@pytest.mark.slow
def test_set_baud_without_an_answer_falls_back_instead_of_raising():
    link, boards = _switch_through(lambda pair: pair.sent[-1] == Msg.SET_BAUD)
    with link as (_, c):
        c.hello()
        assert not c.switch_baud(NEW_RATE)
        assert c.stats.baud_fallbacks == 1 and c.port.baudrate == boards[0].baud == 115200
        assert c.run(INPUT).output == expected_output(INPUT, 2)


class _Faulty:
    """Damages chosen writes: frame number -> "drop" or "corrupt" (one byte of the payload flipped)."""

    def __init__(self, port, faults: dict[int, str]):
        self._port, self._faults, self.writes = port, faults, 0

    def __getattr__(self, name):
        return getattr(self._port, name)

    def write(self, data):
        self.writes += 1
        fault = self._faults.pop(self.writes, None)
        if fault == "drop":
            return len(data)
        if fault == "corrupt":
            data = data[:20] + bytes([data[20] ^ 0xFF]) + data[21:]
        return self._port.write(data)


def test_windowed_input_recovers_from_dropped_and_damaged_chunks():
    with core_on_pty(ChecksumRunner(len(INPUT), 2), **FRAMES, timeout=0.3) as (port, client):
        client.hello()
        client.port = _Faulty(port, {2: "corrupt", 5: "drop"})  # chunks of the first and second window
        first = client.run(INPUT)
        second = client.run(INPUT[::-1])
    assert first.output == expected_output(INPUT, 2) and second.output == expected_output(INPUT[::-1], 2)
    assert client.stats.go_backs >= 1 and client.stats.resends >= 2

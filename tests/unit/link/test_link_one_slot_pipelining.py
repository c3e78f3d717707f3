"""One-slot pipelining within the receive window (DeviceClient.run_stream on a device with one input slot
and a link buffer): the next input's first chunks go out right after INVOKE and wait in the device's
link buffer until the invoke ends. Results must equal sequential ones, also when the INVOKE or a chunk
sent ahead is lost or damaged. No speed is asserted: benchmarks/link.py measures it."""

import dataclasses

import numpy as np
import pytest
import serial

from harness.boards import board_ids, get_board
from harness.device.hosted_hal import hosted_board_process
from harness.device.sim_board import LinkEmulation
from harness.link.client import DeviceClient
from harness.link.framing import FrameDecoder, Received
from harness.link.protocol import RESPONSE_BIT, ErrorCode, Msg, parse_error
from harness.model.tflite_file import read_tflite
from tests.conftest import fixture_model
from tests.fake_runner import ChecksumRunner, PortProxy, core_on_pty, expected_output

pytestmark = pytest.mark.usefixtures("raw_inputs")  # constant and ramp inputs: the link as it carries raw bytes

INPUT_BYTES = 3000
FRAMES = dict(rx_frame=1036, tx_frame=524, rx_buffer=4096)  # the whole next input fits the window
SMALL_MODEL = "wake_vision_zoo/wv_quality_k_2_c_3.tflite"  # uint8[1,50,50,3] in


def _inputs(count: int, size: int = INPUT_BYTES) -> list[bytes]:
    """Distinct inputs with distinct byte sums, so an output computed on the wrong one shows."""
    return [bytes([i + 1]) * size for i in range(count)]


class _Recorder(PortProxy):
    """A port in the middle that logs the frames going out and coming in, in order, and may drop or damage
    chosen writes: drop(index, data) and damage(index, data) get each write's index and bytes."""

    def __init__(self, port, drop=None, damage=None):
        super().__init__(port)
        self._out, self._in = FrameDecoder(), FrameDecoder()
        self.log: list[tuple[str, int, int, bytes]] = []  # (direction, type, seq, payload)
        self.writes: list[bytes] = []
        self._drop, self._damage = drop, damage

    def write(self, data):
        index = len(self.writes)
        self.writes.append(bytes(data))
        if self._drop and self._drop(index, data):
            return len(data)
        if self._damage:
            data = self._damage(index, data)
        self.log += [("out", e.type, e.seq, e.payload) for e in self._out.feed(bytes(data)) if isinstance(e, Received)]
        return self._port.write(data)

    def read(self, size=1):
        data = self._port.read(size)
        self.log += [("in", e.type, e.seq, e.payload) for e in self._in.feed(data) if isinstance(e, Received)]
        return data


def _sent_ahead(log) -> int:
    """LOAD_INPUT frames that went out after an INVOKE and before that INVOKE's answer came in."""
    count, open_invoke = 0, None
    for direction, kind, seq, _ in log:
        if direction == "out" and kind == Msg.INVOKE:
            open_invoke = seq
        elif direction == "in" and seq == open_invoke:
            open_invoke = None
        elif direction == "out" and kind == Msg.LOAD_INPUT and open_invoke is not None:
            count += 1
    return count


def _one_slot_board(invoke_ms=20.0, **frames):
    runner = ChecksumRunner(INPUT_BYTES, 4)
    emulation = LinkEmulation(921600, 0, invoke_ms, input_slots=1)
    frames = {**FRAMES, **frames}
    return runner, core_on_pty(runner, emulation=emulation, **frames, wrap=lambda port, _: _Recorder(port))


def test_one_slot_stream_equals_sequential_and_sends_ahead():
    runner, board = _one_slot_board()
    data = _inputs(6)
    with board as (_, client):
        info = client.hello()
        assert (info.input_slots, info.rx_buffer_bytes) == (1, 4096)
        sequential = [client.run(d).output for d in data]
        client.port.log.clear()
        pipelined = [r.output for r in client.run_stream(data)]
        log = client.port.log
    assert pipelined == sequential == [expected_output(d, 4) for d in data]
    assert _sent_ahead(log) >= len(data) - 1  # every next input started during the invoke before it
    assert client.stats.reruns == 0 and client.stats.resends == 0
    assert runner.invokes == 2 * len(data)


def test_without_a_link_buffer_nothing_is_sent_ahead():
    _, board = _one_slot_board(rx_buffer=0)
    data = _inputs(4)
    with board as (_, client):
        assert client.hello().rx_buffer_bytes == 0
        pipelined = [r.output for r in client.run_stream(data)]
        log = client.port.log
    assert pipelined == [expected_output(d, 4) for d in data]
    assert _sent_ahead(log) == 0


def test_chunks_sent_ahead_stay_within_the_announced_buffer():
    """A 1000-byte link buffer: what goes out between an INVOKE and its answer fits it (framing included)."""
    _, board = _one_slot_board(rx_buffer=1000)
    data = _inputs(3)
    with board as (_, client):
        client.hello()
        pipelined = [r.output for r in client.run_stream(data)]
        writes = client.port.writes
    assert pipelined == [expected_output(d, 4) for d in data]
    after_invoke = [writes[i + 1] for i, w in enumerate(writes[:-1]) if w[2] == Msg.INVOKE and writes[i + 1][2] == 2]
    assert after_invoke and all(len(w) <= 1000 for w in after_invoke)


def _drop_invoke(number: int):
    """Drops the number-th INVOKE frame written (counting from 0), and only that one."""
    seen = []

    def drop(_index, data):
        if data[:3] == b"\xa5\x5a" + bytes([Msg.INVOKE]):
            seen.append(data)
            return len(seen) - 1 == number
        return False

    return drop


@pytest.mark.parametrize("same_inputs", [False, True])
def test_a_lost_invoke_is_never_run_on_the_next_input(same_inputs):
    """INVOKE(1) is lost: the device takes the chunks of input 2 sent ahead first (the whole of it fits
    the window), then the resent INVOKE(1). That must be refused (state lost) and sample 1 run again; with
    identical inputs the CRC cannot tell them apart, the sequence numbers do."""
    runner = ChecksumRunner(INPUT_BYTES, 4)
    emulation = LinkEmulation(921600, 0, 20, input_slots=1)
    data = [bytes([7]) * INPUT_BYTES] * 4 if same_inputs else _inputs(4)
    wrap = lambda port, _: _Recorder(port, drop=_drop_invoke(1))  # noqa: E731
    with core_on_pty(runner, emulation=emulation, wrap=wrap, **FRAMES) as (_, client):
        client.hello()
        results = [r.output for r in client.run_stream(data)]
        log = client.port.log
    assert results == [expected_output(d, 4) for d in data]
    assert client.stats.reruns == 1
    refusals = [parse_error(p)[0] for d, kind, _, p in log if d == "in" and kind == Msg.ERROR]
    assert refusals == [ErrorCode.INPUT_MISMATCH]
    invoke_seqs = [seq for d, kind, seq, _ in log if d == "out" and kind == Msg.INVOKE]
    answered = [seq for d, kind, seq, _ in log if d == "in" and kind == Msg.INVOKE | RESPONSE_BIT]
    assert len(answered) == len(data) and len(invoke_seqs) == len(data) + 1  # the rerun's INVOKE
    assert runner.invokes == len(data)  # the refused INVOKE ran nothing


def test_a_lost_invoke_with_part_of_the_next_input_ahead_reruns_the_sample():
    """The window holds part of the next input only: the resent INVOKE finds it incomplete."""
    runner = ChecksumRunner(INPUT_BYTES, 4)
    emulation = LinkEmulation(921600, 0, 20, input_slots=1)
    data = _inputs(4)
    wrap = lambda port, _: _Recorder(port, drop=_drop_invoke(2))  # noqa: E731
    with core_on_pty(runner, emulation=emulation, wrap=wrap, rx_frame=1036, tx_frame=524, rx_buffer=1200) as (
        _,
        client,
    ):
        client.hello()
        results = [r.output for r in client.run_stream(data)]
        log = client.port.log
    assert results == [expected_output(d, 4) for d in data]
    assert client.stats.reruns == 1
    refusals = [parse_error(p)[0] for d, kind, _, p in log if d == "in" and kind == Msg.ERROR]
    assert refusals == [ErrorCode.INPUT_INCOMPLETE]


def _damage_first_chunk_after_invoke():
    state = {"after_invoke": False, "done": False}

    def damage(_index, data):
        if data[:3] == b"\xa5\x5a" + bytes([Msg.INVOKE]):
            state["after_invoke"] = True
            return data
        if state["after_invoke"] and not state["done"] and data[2] == Msg.LOAD_INPUT:
            state["done"] = True
            damaged = bytearray(data)
            damaged[20] ^= 0x10  # inside the first chunk's payload: its CRC fails
            return bytes(damaged)
        state["after_invoke"] = False
        return data

    return damage


def test_a_damaged_chunk_sent_ahead_is_sent_again():
    runner = ChecksumRunner(INPUT_BYTES, 4)
    emulation = LinkEmulation(921600, 0, 20, input_slots=1)
    data = _inputs(4)
    wrap = lambda port, _: _Recorder(port, damage=_damage_first_chunk_after_invoke())  # noqa: E731
    with core_on_pty(runner, emulation=emulation, wrap=wrap, **FRAMES) as (_, client):
        client.hello()
        results = [r.output for r in client.run_stream(data)]
        log = client.port.log
    assert results == [expected_output(d, 4) for d in data]
    assert client.stats.go_backs >= 1 and client.stats.reruns == 0
    errors = [parse_error(p)[0] for d, kind, _, p in log if d == "in" and kind == Msg.ERROR]
    assert ErrorCode.BAD_CRC in errors


@pytest.mark.slow
@pytest.mark.parametrize("name", board_ids("hosted"))
def test_one_slot_pipelining_through_each_hosted_hal(name):
    """The real HAL sources (their rings, their announced buffers): pipelined results equal sequential
    ones, something was sent ahead, and the emulated receive buffer lost nothing."""
    model = read_tflite(fixture_model(SMALL_MODEL))
    board = get_board(name)
    board = board.with_sim(emulate_invoke_ms=30)
    rng = np.random.default_rng(3)
    data = [rng.integers(0, 256, model.input.bytes, dtype=np.uint8).tobytes() for _ in range(4)]
    report: list[str] = []
    with hosted_board_process(board, model, report) as path:
        port = serial.Serial(path, baudrate=board.link.baudrate, timeout=0.05)
        try:
            client = DeviceClient(_Recorder(port), timeout=2.0, invoke_timeout=10.0)
            info = client.hello()
            assert info.input_slots == 1 and info.rx_buffer_bytes >= model.input.bytes
            if info.max_baud:
                assert client.switch_baud(2_000_000)
            sequential = [client.run(d).output for d in data]
            client.port.log.clear()
            before = dataclasses.replace(client.stats)  # a switch may cost a resend (bytes at the old rate)
            pipelined = [r.output for r in client.run_stream(data)]
            ahead = _sent_ahead(client.port.log)
        finally:
            port.close()
    assert pipelined == sequential
    assert ahead >= len(data) - 1
    assert (client.stats.resends, client.stats.reruns) == (before.resends, before.reruns)
    assert report and " 0 bytes lost at a full receive buffer" in report[-1], report

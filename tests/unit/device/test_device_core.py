"""The C device core (firmware/core) behind a real pseudo-terminal, driven by the host client."""

import time

import pytest

from harness.link.client import DeviceError
from harness.link.framing import FrameDecoder, Received, encode_frame
from harness.link.protocol import ErrorCode, Msg, TickKind, load_input_payload, parse_error
from tests.fake_runner import ChecksumRunner, core_on_pty, expected_output


def _raw_exchange(port, frame: bytes, wait: float = 0.5) -> list:
    port.write(frame)
    decoder, events, deadline = FrameDecoder(), [], time.monotonic() + wait
    while time.monotonic() < deadline:
        events += decoder.feed(port.read(512))
        if events:
            time.sleep(0.05)
            events += decoder.feed(port.read(port.in_waiting or 1))
            return events
    return events


def test_hello_describes_the_device():
    with core_on_pty(ChecksumRunner(300, 2)) as (_, client):
        info = client.hello()
    assert (info.protocol_version, info.board_id, info.build_id) == (2, "test-board", "test-build")
    assert info.model_sha256_prefix == "0001020304050607"
    assert (info.arena_configured, info.arena_used) == (1000, 600)
    assert (info.max_request_frame, info.max_response_frame, info.rx_buffer_bytes) == (524, 524, 4096)
    assert info.input.shape == (1, 300) and info.input.bytes == 300 and info.input.dtype_name == "uint8"
    assert info.output.shape == (1, 2)
    assert info.tick_kind == TickKind.WALL_CLOCK and info.tick_hz == 10**9 and info.runner_status == 0
    assert (info.input_slots, info.max_baud) == (2, 0)  # the sim runner starts invokes; no bound on rates


@pytest.mark.usefixtures("raw_inputs")  # counts the chunks of a ramp input's raw bytes
def test_chunked_input_and_invoke():
    data = bytes(range(256)) * 4  # 1024 bytes: two LOAD_INPUT chunks of a 524-byte frame
    runner = ChecksumRunner(len(data), 4)
    with core_on_pty(runner) as (_, client):
        result = client.run(data)
        assert client.stats.frames_sent == 1 + 3 + 1  # HELLO, three chunks, INVOKE
    assert result.output == expected_output(data, 4)
    assert result.timing.micros > 0 and result.timing.cycles is None


def test_output_larger_than_a_response_frame_is_read_in_pieces():
    data = bytes(range(50))
    with core_on_pty(ChecksumRunner(50, 300), tx_frame=211) as (_, client):
        result = client.run(data)
    assert result.output == expected_output(data, 300)


def test_invoke_needs_the_whole_input_again_after_each_invoke():
    with core_on_pty(ChecksumRunner(10, 2)) as (_, client):
        with pytest.raises(DeviceError) as first:
            client.invoke()
        client.run(bytes(10))
        with pytest.raises(DeviceError) as second:
            client.invoke()
    assert first.value.code == second.value.code == ErrorCode.INPUT_INCOMPLETE


def test_input_chunk_with_a_gap_is_refused():
    with core_on_pty(ChecksumRunner(100, 2)) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as error:
            client.request(Msg.LOAD_INPUT, load_input_payload(10, b"abc"))
    assert error.value.code == ErrorCode.BAD_OFFSET


def test_model_that_failed_to_load_is_reported():
    with core_on_pty(ChecksumRunner(10, 2, status=5)) as (_, client):
        assert client.hello().runner_status == 5
        with pytest.raises(DeviceError) as error:
            client.load_input(bytes(10))
    assert error.value.code == ErrorCode.MODEL_NOT_READY


def test_corrupt_request_gets_bad_crc_and_the_next_frame_is_served():
    with core_on_pty(ChecksumRunner(10, 2)) as (port, _):
        frame = bytearray(encode_frame(Msg.HELLO, 41))
        frame[-1] ^= 0xFF
        events = _raw_exchange(port, bytes(frame))
        assert events[0].type == Msg.ERROR and parse_error(events[0].payload)[0] == ErrorCode.BAD_CRC
        assert _raw_exchange(port, encode_frame(Msg.HELLO, 42))[0].type == Msg.HELLO | 0x80


def test_exact_retransmission_is_answered_from_cache_without_running_twice():
    runner = ChecksumRunner(4, 2)
    with core_on_pty(runner) as (port, _):
        _raw_exchange(port, encode_frame(Msg.LOAD_INPUT, 7, load_input_payload(0, b"\x01\x02\x03\x04")))
        invoke = encode_frame(Msg.INVOKE, 8)
        first = _raw_exchange(port, invoke)
        again = _raw_exchange(port, invoke)
    assert runner.invokes == 1
    assert first[0].payload[8:] == again[0].payload[8:]  # same output; the timing field is identical too
    assert first == again


def test_noise_and_a_stalled_partial_frame_do_not_wedge_the_device():
    with core_on_pty(ChecksumRunner(10, 2)) as (port, client):
        port.write(b"\x00\xa5 boot noise \xa5\x5a\x01")  # ends inside a frame header
        time.sleep(0.4)  # longer than the device's idle reset
        assert client.hello().board_id == "test-board"


def test_oversized_frame_is_refused_with_frame_too_long():
    with core_on_pty(ChecksumRunner(10, 2), rx_frame=64) as (port, _):
        events = _raw_exchange(port, encode_frame(Msg.LOAD_INPUT, 3, bytes(200)))
    assert isinstance(events[0], Received) and events[0].type == Msg.ERROR
    assert parse_error(events[0].payload)[0] == ErrorCode.FRAME_TOO_LONG


class _CorruptingPort:
    """Wraps a port and damages selected outgoing frames, as a noisy line would."""

    def __init__(self, port, damage_writes: set[int]):
        self._port, self._damage, self._writes = port, damage_writes, 0

    def write(self, data: bytes) -> int:
        self._writes += 1
        if self._writes in self._damage:
            data = bytearray(data)
            data[10] ^= 0x40  # inside every frame: header, payload or CRC
        return self._port.write(bytes(data))

    def __getattr__(self, name):
        return getattr(self._port, name)


def test_client_recovers_from_corrupted_requests():
    data = bytes(range(200))
    with core_on_pty(ChecksumRunner(200, 3)) as (port, client):
        client.port = _CorruptingPort(port, damage_writes={2, 4, 5})
        result = client.run(data)
    assert result.output == expected_output(data, 3)
    assert client.stats.resends >= 2 and client.stats.go_backs >= 1  # writes 2, 4, 5: input and markers


def test_link_test_echoes_and_perf_times_a_fixed_workload():
    with core_on_pty(ChecksumRunner(10, 2), tx_frame=300) as (_, client):
        payload = bytes(range(256))
        assert client.echo(payload) == payload
        with pytest.raises(DeviceError) as error:
            client.echo(bytes(400))  # fits a request frame, not a 300-byte response frame
        with pytest.raises(DeviceError) as too_long:
            client.echo(bytes(600))  # larger than the 524-byte receive buffer
        first, checksum = client.perf(100)
        second, again = client.perf(100)
    assert error.value.code == ErrorCode.BAD_PAYLOAD
    assert too_long.value.code == ErrorCode.FRAME_TOO_LONG
    assert checksum == again != 0
    assert first.seconds > 0 and second.seconds > 0 and first.cycles is None


def test_bench_times_repeated_invokes_and_profile_needs_a_profiling_runner():
    runner = ChecksumRunner(10, 2)
    with core_on_pty(runner, tx_frame=211) as (_, client):
        timings = client.bench(bytes(10), runs=30, warmups=3)  # 24 runs fit a 211-byte frame: two batches
        assert len(timings) == 30 and all(t.seconds > 0 for t in timings)
        assert runner.invokes == 33
        with pytest.raises(DeviceError) as unsupported:
            client.profile(bytes(10))
    assert unsupported.value.code == ErrorCode.UNSUPPORTED


@pytest.mark.slow
def test_after_link_damage_a_long_bench_still_gets_its_whole_wait():
    """Once a frame was damaged, quick requests are resent after a short wait; a BENCH of 60 invokes
    of 120 ms each must still get its full bound, not run out of attempts while the device works."""
    from harness.device.sim_board import LinkEmulation

    runner = ChecksumRunner(64, 8)
    with core_on_pty(runner, emulation=LinkEmulation(invoke_ms=120), timeout=2.0) as (_, client):
        client.timeout = 2.0
        client.hello()
        client.stats.corrupt_frames = 1  # damage seen earlier in the session
        assert len(client.bench(bytes(64), runs=60)) == 60
    assert runner.invokes == 60


def test_going_back_never_grows_chunks_past_a_small_devices_frame():
    runner = ChecksumRunner(200, 8)
    with core_on_pty(runner, rx_frame=64, tx_frame=256) as (port, client):
        client.hello()
        write, damaged = port.write, []

        def damage_first_load(data):
            if not damaged and data[2] == Msg.LOAD_INPUT:
                damaged.append(True)
                data = bytes([*data[:12], data[12] ^ 1, *data[13:]])
            return write(data)

        port.write = damage_first_load
        result = client.run(bytes(range(200)))
    assert damaged and result.output == expected_output(bytes(range(200)), 8)
    assert client.stats.go_backs >= 1

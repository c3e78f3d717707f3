"""A lost INVOKE before any INVOKE was answered, on a damaged link: sent again on a growing wait, not after
the whole invoke timeout. On a fake link and a fake clock: what is asserted is the waits and the sends."""

import types

import pytest

import harness.link.requests as requests_module
from harness.errors import LinkError
from harness.link.client import DeviceClient
from harness.link.framing import FrameDecoder, Received, encode_frame
from harness.link.protocol import RESPONSE_BIT, Msg
from harness.link.requests import DAMAGED_LINK_WAIT, UNANSWERED_INVOKE_WAIT_CAP, unanswered_invoke_waits

ANSWER = b"\x01" * 8 + b"\x04\x00\x00\x00" + b"\x2a" * 4  # ticks, output size, output


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Device:
    """The device end of a fake port: drops the first `lost` INVOKE frames; the rest are answered once the
    invoke, begun at the first INVOKE that arrived, has run `invoke_seconds` (a repeat from its store, as
    firmware/core/hp_device.c does: the invoke runs once). Reading an empty port lets 10 ms pass."""

    baudrate = 115200

    def __init__(self, clock: Clock, lost: int = 0, invoke_seconds: float = 0.001):
        self.clock, self.lost, self.invoke_seconds = clock, lost, invoke_seconds
        self.decoder = FrameDecoder()
        self.invokes_sent: list[float] = []  # when each INVOKE frame went out
        self.runs = 0
        self.answers: list[tuple[float, bytes]] = []  # (ready at, bytes)
        self.done_at: float | None = None

    def write(self, data: bytes) -> int:
        for event in self.decoder.feed(data):
            assert isinstance(event, Received) and event.type == Msg.INVOKE
            self.invokes_sent.append(self.clock.now)
            if len(self.invokes_sent) <= self.lost:
                continue
            if self.done_at is None:
                self.runs += 1
                self.done_at = self.clock.now + self.invoke_seconds
            answer = encode_frame(Msg.INVOKE | RESPONSE_BIT, event.seq, ANSWER)
            self.answers.append((max(self.done_at, self.clock.now), answer))
        return len(data)

    def _ready(self) -> bytes:
        out = b"".join(data for at, data in self.answers if at <= self.clock.now)
        self.answers = [(at, data) for at, data in self.answers if at > self.clock.now]
        return out

    @property
    def in_waiting(self) -> int:
        return sum(len(data) for at, data in self.answers if at <= self.clock.now)

    def read(self, n: int) -> bytes:
        data = self._ready()
        if not data:
            self.clock.now += 0.01
        return data


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(requests_module, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    return clock


def _invoke(device: Device, damaged: bool = True, answered_before: float | None = None):
    """One INVOKE sent and its answer awaited as _invoke_result awaits it; the client for its stats."""
    client = DeviceClient(device, timeout=2.0, invoke_timeout=60.0)
    if damaged:
        client.stats.corrupt_frames = 1  # an earlier input chunk arrived damaged
    if answered_before is not None:  # an INVOKE was answered before, its invoke timed by the device
        client._invoke_answered, client._longest_invoke = True, answered_before
    waits = []
    next_answer = client._next_answer

    def spy(seqs, timeout):
        waits.append(timeout)
        return next_answer(seqs, timeout)

    client._next_answer = spy
    seq = client._next_seq()
    frame = encode_frame(Msg.INVOKE, seq)
    client._write(frame)
    started = device.clock.now
    try:
        return client._complete(Msg.INVOKE, seq, frame, client._invoke_wait()), client, waits, started
    except LinkError as exc:
        return exc, client, waits, started


def test_the_waits_before_an_invoke_was_answered_double_to_a_cap_and_add_up_to_the_timeout():
    assert unanswered_invoke_waits(60.0) == [0.5, 1, 2, 4, 8, 8, 8, 8, 8, 8, 4.5]
    assert unanswered_invoke_waits(3.0) == [0.5, 1, 1.5]
    for bound in (0.2, 7.0, 60.0, 600.0):
        waits = unanswered_invoke_waits(bound)
        assert sum(waits) == pytest.approx(bound) and max(waits) <= UNANSWERED_INVOKE_WAIT_CAP


def test_a_lost_first_invoke_is_sent_again_after_half_a_second_not_the_invoke_timeout(clock):
    device = Device(clock, lost=1)
    payload, client, waits, started = _invoke(device)
    assert payload == ANSWER and client.stats.resends == 1 and device.runs == 1
    wire = client.wire_seconds(len(encode_frame(Msg.INVOKE, 0)))
    assert waits[0] == pytest.approx(0.5 + wire)  # before: the whole 60 s invoke timeout
    assert device.invokes_sent[1] - started < 1.0


def test_three_lost_invokes_wait_longer_each_time(clock):
    device = Device(clock, lost=3)
    payload, client, _waits, _started = _invoke(device)
    assert payload == ANSWER and client.stats.resends == 3 and device.runs == 1
    gaps = [b - a for a, b in zip(device.invokes_sent, device.invokes_sent[1:], strict=False)]
    assert gaps == pytest.approx([0.5, 1.0, 2.0], abs=0.02)


def test_a_long_first_invoke_resent_meanwhile_runs_once_and_its_answer_is_taken(clock):
    # 20 s of inference: the resends queue behind it and are answered from the device's store.
    device = Device(clock, invoke_seconds=20.0)
    payload, client, _waits, started = _invoke(device)
    assert payload == ANSWER and device.runs == 1
    assert client.stats.resends == 5  # at 0.5, 1.5, 3.5, 7.5 and 15.5 s
    assert 20.0 <= clock.now - started < 20.1


def test_an_invoke_never_answered_gives_up_after_the_invoke_timeout(clock):
    device = Device(clock, lost=1000)
    error, _client, _waits, started = _invoke(device)
    assert isinstance(error, LinkError) and "no valid answer to INVOKE" in str(error)
    assert len(device.invokes_sent) == len(unanswered_invoke_waits(60.0)) == 11
    assert 60.0 <= clock.now - started < 61.0


def test_once_an_invoke_was_answered_the_wait_is_twice_the_longest_invoke(clock):
    device = Device(clock, lost=1)
    payload, client, waits, _started = _invoke(device, answered_before=0.2)
    assert payload == ANSWER and client.stats.resends == 1
    wire = client.wire_seconds(len(encode_frame(Msg.INVOKE, 0)))
    assert waits[0] == pytest.approx(DAMAGED_LINK_WAIT + 2 * 0.2 + wire, abs=0.01)


def test_on_a_clean_link_a_first_invoke_keeps_the_whole_timeout(clock):
    device = Device(clock, invoke_seconds=5.0)
    payload, client, waits, _started = _invoke(device, damaged=False)
    assert payload == ANSWER and client.stats.resends == 0 and waits[0] >= 60.0

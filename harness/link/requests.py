"""The harness protocol's request engine: frames out with sequence numbers, answers matched back to them, a
request sent again on silence or damage with waits that shrink once the link shows damage, and the HELLO
handshake. The rest of the session builds on `request` (harness/link/client.py)."""

import math
import random
import select
import time
from abc import abstractmethod
from collections import deque
from collections.abc import Iterator

import serial

from harness.errors import LinkError
from harness.link.frame_sizer import FrameSizer
from harness.link.framing import FrameDecoder, Rejected, encode_frame
from harness.link.protocol import (
    PROTOCOL_VERSION,
    RESPONSE_BIT,
    SUPPORTED_VERSIONS,
    DeviceInfo,
    ErrorCode,
    Msg,
    parse_error,
    parse_hello,
)
from harness.link.session import DeviceSession
from harness.link.transport import POLL_SECONDS

# A damaged request is dropped by the device; sending it again is the cure. (An oversized one is
# refused with FRAME_TOO_LONG, which no resend cures.)
RETRYABLE_ERRORS = {ErrorCode.BAD_CRC}
# After a fault, zero bytes behind each burst complete a frame that lost a byte, so the device answers
# BAD_CRC at once rather than waiting for bytes that never come. The decoder skips them otherwise.
PAD = bytes(16)
PARTIAL_GAP_SECONDS = 0.03  # more than a USB-serial adapter's latency timer (16 ms on FTDI)
# Once the link has damaged frames, waits shrink to just over the device's 50 ms partial-frame reset
# (a resend any sooner would land in the broken frame) and more attempts are allowed.
DAMAGED_LINK_WAIT = 0.1
DAMAGED_LINK_EXTRA_TRIES = 26
# Before any INVOKE has been answered nothing tells how long one takes: on a damaged link the INVOKE is
# sent again after a wait that starts here and doubles up to the cap, the waits adding up to the caller's bound.
UNANSWERED_INVOKE_WAIT = 0.5
UNANSWERED_INVOKE_WAIT_CAP = 8.0
STATELESS = {Msg.LINK_TEST, Msg.PERF}
QUICK_REQUESTS = {Msg.HELLO, Msg.LOAD_INPUT, Msg.READ_OUTPUT, Msg.LINK_TEST, Msg.SET_BAUD}  # answered at once
RESETS_PER_SAMPLE = 20  # boot notices tolerated while one sample runs before giving up (a boot loop)


def unanswered_invoke_waits(bound: float) -> list[float]:
    """The waits between sends of an INVOKE on a damaged link before any INVOKE was answered: 0.5 s,
    doubling up to 8 s, in all `bound` (the invoke timeout), so a lost first INVOKE costs about as long
    as the waits before its resend rather than the whole bound, while an invoke that truly runs that
    long still gets its answer. Resending is safe: the device answers a repeated INVOKE (same sequence
    number and CRC) from its store once the invoke ends, never running it twice (docs/protocol.md)."""
    waits: list[float] = []
    wait = UNANSWERED_INVOKE_WAIT
    left = bound
    while left > 1e-9:
        waits.append(min(wait, left))
        left -= waits[-1]
        wait = min(2 * wait, UNANSWERED_INVOKE_WAIT_CAP)
    return waits


class DeviceReset(LinkError):
    """The device announced a boot in the middle of the session: its state is gone."""

    def __init__(self):
        super().__init__("the device reset during the session (boot notice); say HELLO again")


# What makes the device state unknown: a boot notice, or the port going away under us.
LOST_STATE = (DeviceReset, serial.SerialException, OSError)


class DeviceError(LinkError):
    def __init__(self, code: int, message: str):
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else f"code {code}"
        super().__init__(f"device error {name}: {message}")
        self.code = code


class RequestEngine(DeviceSession):
    """Requests and their answers on a harness-protocol link; how the session gets back from a reset is its
    subclass's (harness/link/recovery.py)."""

    def __init__(
        self,
        port,
        *,
        timeout: float = 2.0,
        invoke_timeout: float = 60.0,
        retries: int = 3,
        reconnect_seconds: float = 30.0,
    ):
        super().__init__(port)
        self.reconnect_seconds = reconnect_seconds
        self.timeout = timeout
        self.invoke_timeout = invoke_timeout
        self.retries = retries
        self._decoder = FrameDecoder()
        self._events: deque = deque()
        self._held: dict = {}  # answers that came while other answers were awaited, by sequence number
        self._expected: set[int] = set()
        self.frame_sizer = FrameSizer()  # input chunks and window from the byte error rate seen so far
        self._in_hello = False
        self._probing = False  # HELLO to whatever is behind a port that came back: a clean link's tries and waits
        self._slowest_invoke = 0.0  # wall time from INVOKE sent to answer, the link included
        self._longest_invoke: float | None = None  # the longest invoke as the device timed it (None: no timer)
        self._invoke_answered = False  # an INVOKE has been answered in this session (its time is known)
        # last_invoke: INVOKE sent, its answer read; last_device_window: ending when that answer arrived.
        # A fresh random start keeps a new session's requests from matching a cached old answer.
        self._seq = random.randrange(0x10000)

    def hello(self) -> DeviceInfo:
        self.port.reset_input_buffer()
        self._decoder.reset()
        self._events.clear()
        self._held.clear()
        self._expected.clear()
        self._in_hello = True
        try:
            info = parse_hello(self.request(Msg.HELLO))
        finally:
            self._in_hello = False
        if info.protocol_version not in SUPPORTED_VERSIONS:
            raise LinkError(
                f"device speaks protocol v{info.protocol_version}, this harness v{PROTOCOL_VERSION}: "
                "flash matching firmware"
            )
        self.info = self._identified(info)
        return info

    def _damaged_link_wait(self, msg: Msg) -> float:
        """How long an answer takes at most once the link damages frames: the device's partial-frame
        reset for the quick requests, plus for INVOKE twice the longest invoke the device has timed (if
        it has a timer; if not, the usual bound stays). A resent INVOKE is answered from the device's
        store, never run twice. Requests that run the model many times (BENCH, PERF, PROFILE, streaming)
        keep the caller's bound: the device answers them only when done. (An INVOKE before any was
        answered waits as unanswered_invoke_waits says.)"""
        if msg in QUICK_REQUESTS:
            return DAMAGED_LINK_WAIT
        if msg != Msg.INVOKE:
            return math.inf
        if self._longest_invoke is None:
            return self.invoke_timeout
        return DAMAGED_LINK_WAIT + 2 * self._longest_invoke

    def _waits_unanswered(self, msg: Msg) -> bool:
        """An INVOKE on a damaged link before any INVOKE was answered: its silence is a lost frame as often
        as a long invoke, and no invoke time bounds it yet, so it is sent again on a growing wait."""
        return msg == Msg.INVOKE and self._damaged_link and not self._invoke_answered

    def _retries(self) -> int:
        """Attempts per frame: more once the link has shown damage, where each try is cheaper."""
        return self.retries + 1 + (DAMAGED_LINK_EXTRA_TRIES if self._damaged_link else 0)

    @property
    def _damaged_link(self) -> bool:
        """The link has shown damage (a probe of a port that came back is sent as on a clean link)."""
        return not self._probing and bool(self.stats.go_backs or self.stats.corrupt_frames or self.stats.resets)

    def _partial_gap(self) -> float:
        """Silence in the middle of an answer longer than this means bytes were lost (a device sends
        each frame in one go; USB adapters add a few milliseconds)."""
        return PARTIAL_GAP_SECONDS + self.wire_seconds(64)

    def wire_seconds(self, nbytes: int) -> float:
        """How long nbytes take on the wire at the port's rate (10 bits a byte)."""
        return nbytes * 10 / (getattr(self.port, "baudrate", 0) or 115200)

    def _invoke_wait(self) -> float:
        """Until one invoke has been seen, the configured bound; then a multiple of the slowest seen,
        so a lost INVOKE frame costs seconds rather than the whole bound."""
        if not self._slowest_invoke:
            return self.invoke_timeout
        return min(self.invoke_timeout, max(self.timeout, 5 * self._slowest_invoke))

    def request(self, msg: Msg, payload: bytes = b"", timeout: float | None = None) -> bytes:
        for _ in range(RESETS_PER_SAMPLE):
            seq = self._next_seq()
            frame = encode_frame(msg, seq, payload)
            self._write(frame)
            try:
                return self._complete(msg, seq, frame, timeout or self.timeout)
            except DeviceReset:
                if msg not in STATELESS:
                    raise
            self._recover()  # nothing of this request's depended on the lost state: ask again
        raise LinkError(
            f"the device reset {RESETS_PER_SAMPLE} times answering {msg.name}; check its power and watchdog"
        )

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFF
        return self._seq

    def _write(self, frame: bytes, pad_ahead: bool = False) -> None:
        self.port.write((PAD if pad_ahead else b"") + frame + (PAD if self._damaged_link else b""))
        self.stats.frames_sent += 1

    def _complete(self, msg: Msg, seq: int, frame: bytes, timeout: float) -> bytes:
        """The answer to a request already sent, sending the same frame again on silence or damage."""
        attempt = 0
        for wait in self._answer_waits(msg, frame, timeout):
            attempt += 1
            if attempt > 1:
                self.stats.resends += 1
                self._write(frame)
            event = self._next_answer({seq}, wait)
            if event is None:
                continue
            if event.type == Msg.ERROR:
                code, text = parse_error(event.payload)
                fits = self.info is not None and len(frame) <= self.info.max_request_frame
                if code in RETRYABLE_ERRORS or (code == ErrorCode.FRAME_TOO_LONG and fits):  # damaged length
                    continue
                raise DeviceError(code, text)
            if event.type == msg | RESPONSE_BIT:
                return event.payload
            self.stats.stale_frames += 1
        raise LinkError(
            f"no valid answer to {msg.name} after {attempt} attempts; "
            "check the port, the baud rate and that the board runs harness firmware"
        )

    def _answer_waits(self, msg: Msg, frame: bytes, bound: float) -> Iterator[float]:
        """How long each send of a request waits for its answer (the first, then each resend), decided
        as each send goes out: the caller's bound, shorter once the link shows damage (more attempts
        then, this request's too). An INVOKE on a damaged link before any was answered waits as
        unanswered_invoke_waits says, longer after each silence, the silences adding up to the caller's
        bound; damage answered at once (BAD_CRC, a broken frame) sends it again after the same wait."""
        answer_wire = self.wire_seconds(len(frame) + self.info.max_response_frame if self.info else len(frame))
        timeout = (min(bound, self._damaged_link_wait(msg)) if self._damaged_link else bound) + answer_wire
        growing: Iterator[float] | None = None
        wait, silences, prompt, attempt = 0.0, 0, 0, 0
        while True:
            attempt += 1
            if self._waits_unanswered(msg):
                if growing is None or self.stats.timeouts > silences:  # the first wait, or the last ran out
                    growing = growing or iter(unanswered_invoke_waits(bound))
                    wait = next(growing, None)
                    if wait is None:
                        return
                else:
                    prompt += 1
                    if prompt >= self._retries():
                        return
                silences = self.stats.timeouts
                yield wait + answer_wire
                continue
            if attempt > self._retries():
                return
            if attempt > 1 and self._damaged_link:  # an answer already made comes back at once
                timeout = min(timeout, self._damaged_link_wait(msg) + self.wire_seconds(len(frame) + 64))
            yield timeout

    def _next_answer(self, seqs: set[int], timeout: float):
        """The next answer to one of `seqs`, or None on silence or a damaged frame (send again).
        Answers to other requests still awaited are kept for later; the rest are stale."""
        for seq in seqs & self._held.keys():
            return self._held.pop(seq)
        deadline = last_byte = time.monotonic()
        deadline += timeout
        while True:
            while self._events:
                event = self._events.popleft()
                if isinstance(event, Rejected):
                    self.stats.corrupt_frames += 1
                    return None
                if event.type == Msg.BOOT:
                    if self._in_hello:
                        continue
                    raise DeviceReset()
                if event.seq in seqs:
                    return event
                if event.seq in self._expected:
                    self._held[event.seq] = event
                else:
                    self.stats.stale_frames += 1
            now = time.monotonic()
            if now > deadline:
                self._decoder.reset()
                self.stats.timeouts += 1
                return None
            until = min(deadline, last_byte + self._partial_gap()) if self._decoder.partial else deadline
            data = self._read_some(until - now)
            now = time.monotonic()
            if data:
                self._events.extend(self._decoder.feed(data))
                last_byte = now
            elif self._decoder.partial and now - last_byte > self._partial_gap():
                self._decoder.reset()  # an answer that lost bytes: no use waiting for the rest
                self.stats.corrupt_frames += 1
                return None

    def _read_some(self, wait: float) -> bytes:
        """What the port holds, waiting at most `wait` seconds (within its poll) for a first byte. A local
        port is watched with select, so a decision due in a few milliseconds is not held up by a read
        that waits out the port's whole poll."""
        waiting = self.port.in_waiting
        if waiting or not isinstance(self.port, serial.Serial):
            return self.port.read(max(1, waiting))
        ready, _, _ = select.select([self.port.fileno()], [], [], max(0.0, min(wait, POLL_SECONDS)))
        # Readable with nothing to read is a port gone away: the read raises it.
        return self.port.read(max(1, self.port.in_waiting)) if ready else b""

    def _require_info(self) -> DeviceInfo:
        if self.info is None:
            self.info = self.hello()
        return self.info

    @abstractmethod
    def _recover(self, cause: Exception | None = None) -> None:
        """Back to a device that answers after it lost its state (harness/link/recovery.py)."""

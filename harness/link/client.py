"""Protocol client: requests with sequence numbers, retries on silence or corruption; input streamed
through a window of frames in flight, the next sample sent while the device runs the current one."""

import contextlib
import math
import random
import select
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import serial

from harness.errors import LinkError, UserError, setting
from harness.link.frame_sizer import ANSWER_BYTES, CHUNK_FRAMING, SMALLEST_CHUNK, FrameSizer
from harness.link.framing import OVERHEAD, FrameDecoder, Rejected, crc32, encode_frame
from harness.link.protocol import (
    PROTOCOL_VERSION,
    RESPONSE_BIT,
    SUPPORTED_VERSIONS,
    DeviceInfo,
    ErrorCode,
    InvokeResult,
    MalformedPayload,
    Msg,
    StreamChunkResult,
    TickKind,
    Timing,
    load_input_payload,
    parse_bench,
    parse_error,
    parse_hello,
    parse_invoke,
    parse_perf,
    parse_profile,
    parse_stream_audio,
    parse_stream_start,
    read_output_payload,
    timing,
)
from harness.link.session import BoardChanged, BoardLost, DeviceSession, Span
from harness.link.session import LinkStats as LinkStats  # where it was first defined
from harness.link.transport import POLL_SECONDS

# A damaged request is dropped by the device; sending it again is the cure. (An oversized one is
# refused with FRAME_TOO_LONG, which no resend cures.)
RETRYABLE_ERRORS = {ErrorCode.BAD_CRC}
REAL_CLOCKS = (TickKind.WALL_CLOCK, TickKind.CPU_CYCLES)  # an emulator's time says nothing of how long we wait
# While input streams, a lost chunk makes the ones behind it land past the loaded range: go back.
# (FRAME_TOO_LONG too: our chunks fit, so the length field was damaged on the way.)
RESEND_INPUT_ERRORS = {ErrorCode.BAD_CRC, ErrorCode.BAD_OFFSET, ErrorCode.FRAME_TOO_LONG}
MAX_WINDOW = 8
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
# A device answers each input chunk as it arrives, during an invoke too (two slots) or once it ends (chunks
# sent ahead are collected with the INVOKE's answer): silence past the wire time and this is a lost chunk.
INPUT_ANSWER_WAIT = 0.5
STATELESS = {Msg.LINK_TEST, Msg.PERF}
QUICK_REQUESTS = {Msg.HELLO, Msg.LOAD_INPUT, Msg.READ_OUTPUT, Msg.LINK_TEST, Msg.SET_BAUD}  # answered at once
# The device no longer holds the input or output it was sent: run the sample again.
STATE_LOST_ERRORS = {ErrorCode.INPUT_MISMATCH, ErrorCode.INPUT_INCOMPLETE, ErrorCode.NO_OUTPUT}
RECONNECT_POLL_SECONDS = 0.2
RESETS_PER_SAMPLE = 20  # boot notices tolerated while one sample runs before giving up (a boot loop)
MIN_WINDOW_FRAME = 256  # below this, framing overhead outweighs what a window gains
FALLBACK_SECONDS = 1.2  # the device's probation after SET_BAUD (HP_BAUD_PROBATION_MS) and a margin
# Of a one-slot device's link buffer, what chunks sent ahead of an INVOKE's answer leave free: room for a
# resent INVOKE (and its padding) queued behind them while the model still runs.
AHEAD_RESERVE = 64


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


def _within_max_baud(baud: int, info: DeviceInfo) -> int:
    """baud, if the board's SET_BAUD accepts it (HELLO's max_baud); a higher rate is refused before any sample,
    never silently lowered (the run would record a rate it did not use)."""
    if baud > info.max_baud:
        raise UserError(
            f"{setting('switch_baud')} {baud:,} is above board {info.board_id}'s maximum baud rate {info.max_baud:,}; "
            f"pass at most {info.max_baud}"
        )
    return baud


class DeviceClient(DeviceSession):
    """The harness protocol (docs/protocol.md): every member of the device session."""

    protocol = "harness"

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

    @classmethod
    def over(cls, port, model=None, switch_baudrate: int = 0) -> "DeviceClient":
        """HELLO (the device says what it runs), then SET_BAUD where the board or the command asks."""
        client = cls(port)
        client.hello()
        client.stats.baud = getattr(port, "baudrate", 0)
        if switch_baudrate:
            client.switch_baud(switch_baudrate)
        return client

    def meet_firmware_of(self, dut) -> None:
        """Our firmware reports the model's hash in HELLO, which the commands check against the model."""

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

    def load_input(self, data: bytes) -> None:
        """The input in chunks of the largest frame, a window of them in flight: as many as the device's
        frame buffer and link buffer hold. A lost or damaged chunk sends the window again from the last
        byte the device acknowledged."""
        _InputLoad(self, data).finish()

    def _drain(self, outstanding: dict[int, int], acked: int) -> int:
        """Before going back: an empty LINK_TEST behind the frames still on their way. The device answers
        in order, so once its echo is back every earlier frame was handled (acknowledgements among them
        count) or lost, and resent frames cannot land in a frame broken on the way."""
        marker = self._next_seq()
        # Padding ahead completes a chunk that lost a byte, which would otherwise swallow the marker's head.
        self._write(encode_frame(Msg.LINK_TEST, marker), pad_ahead=True)
        while True:
            event = self._next_answer({*outstanding, marker}, DAMAGED_LINK_WAIT)
            if event is None or event.seq == marker:
                return acked
            if event.type == Msg.LOAD_INPUT | RESPONSE_BIT:
                acked = max(acked, int.from_bytes(event.payload[:4], "little"))
            outstanding.pop(event.seq, None)

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

    def invoke(self) -> InvokeResult:
        return self._invoke_result(self._start_invoke(None))

    def run_stream(self, inputs: Iterable[bytes]) -> Iterator[InvokeResult]:
        """Results in order. On a device with two input slots, sample k+1 streams while k is inferred; on
        a one-slot device with a link buffer, the first bytes of k+1 (as many as that buffer holds) go
        out right after INVOKE(k) and wait there until the invoke ends. A device reset (boot notice)
        costs a new handshake and the samples it interrupted, never a result."""
        info = self._require_info()
        ahead = info.input_slots < 2 and self._ahead_limit() > 0
        if info.input_slots < 2 and not ahead:
            for data in inputs:
                yield self._recovering(lambda data=data: self.run(data))
            return
        pending = None  # (data, started invoke)
        for data in inputs:
            try:
                if ahead and pending:
                    result = self._finish_sending_ahead(*pending, next_data=data)
                else:
                    self.load_input(data)
                    result = self._finish_pipelined(*pending, next_data=data) if pending else None
            except LOST_STATE as lost:
                self._recover(lost)
                result = self._recovering(lambda p=pending: self.run(p[0])) if pending else None
                self._recovering(lambda data=data: self.load_input(data))
            if result is not None:
                yield result
            pending = (data, self._start_invoke(data))
        if pending is not None:
            try:
                yield self._finish_pipelined(*pending, next_data=None)
            except LOST_STATE as lost:
                self._recover(lost)
                yield self._recovering(lambda: self.run(pending[0]))

    def _ahead_limit(self) -> int:
        """Bytes of the next input a one-slot device may be sent while it runs the model: its link buffer
        (HELLO) less room for a resent INVOKE, and only where that INVOKE names its input (v2), so the
        device can refuse it once the next input has overwritten this one. 0: none (send nothing ahead)."""
        info = self._require_info()
        limit = info.rx_buffer_bytes - AHEAD_RESERVE
        if info.protocol_version < 2 or limit < SMALLEST_CHUNK + CHUNK_FRAMING + len(PAD):
            return 0
        return limit

    def _finish_sending_ahead(self, data: bytes, started, next_data: bytes) -> InvokeResult:
        """One-slot pipelining: INVOKE(k) is on its way; send the first chunks of k+1 at once (they wait in
        the device's link buffer while the model runs), collect k's answer, then send the rest of k+1.
        If INVOKE(k) was lost or damaged, the device handled those chunks first: the resent INVOKE is
        refused (state lost: the input was written by a chunk sent after it) and k runs again."""
        load = _InputLoad(self, next_data)
        try:
            load.send_ahead(self._ahead_limit())
            try:
                result = self._invoke_result(started)
            except DeviceError as error:
                if error.code not in STATE_LOST_ERRORS:
                    raise
                result = None
            if result is not None:
                try:
                    load.finish()
                except LOST_STATE as lost:  # k's answer is in hand; only k+1 must be loaded again
                    self._recover(lost)
                    self._recovering(lambda: self.load_input(next_data))
                return result
        finally:
            load.forget()
        self.stats.reruns += 1
        result = self._recovering(lambda: self.run(data))
        self._recovering(lambda: self.load_input(next_data))
        return result

    def _recover(self, cause: Exception | None = None) -> None:
        """After a boot notice: a new handshake (which may itself meet another reset). After the port
        went away (USB re-enumeration, a dropped network link): BoardLost at once where the caller hands
        the board's samples on (hands_on_loss), else wait for it to come back here."""
        if not isinstance(cause, serial.SerialException | OSError):
            self._hello_again(probe=False)
            return
        if self.hands_on_loss:
            with contextlib.suppress(serial.SerialException, OSError):
                self.port.close()
            raise BoardLost(cause) from None
        self.reconnect(lambda: True)

    def reconnect(self, wanted: Callable[[], bool]) -> None:
        """Wait for the port that went away (within reconnect_seconds, while `wanted()`), then HELLO."""
        self._reconnect(wanted)
        self._hello_again(probe=True)

    def _hello_again(self, probe: bool) -> None:
        """HELLO after the device lost its state, again after each reset it meets. After the port came back
        (`probe`) whatever is now behind it may be another device: it gets HELLO and nothing else until it
        says it is the same board (hello() checks), with a clean link's tries, not a damaged one's many;
        no answer as harness firmware is BoardChanged too."""
        for _ in range(RESETS_PER_SAMPLE):
            self.stats.resets += 1
            self._probing = probe
            try:
                self.hello()
                return
            except DeviceReset:
                continue
            except BoardChanged:
                raise
            except LinkError as exc:
                if probe and self.identity is not None:
                    raise BoardChanged(self.identity, None, str(exc)) from None
                raise
            finally:
                self._probing = False
        raise LinkError(f"the device reset {RESETS_PER_SAMPLE} times in a row; check its power and watchdog")

    def _reconnect(self, wanted: Callable[[], bool]) -> None:
        """Close the port and open it again as soon as it is back, within reconnect_seconds and while `wanted()`."""
        deadline = time.monotonic() + self.reconnect_seconds
        with contextlib.suppress(serial.SerialException, OSError):
            self.port.close()
        while True:
            try:
                self.port.open()
                break
            except (serial.SerialException, OSError) as exc:
                if not self.reconnect_seconds:
                    raise LinkError(f"the board's port went away ({exc}): its board stopped") from None
                if time.monotonic() > deadline:
                    raise LinkError(
                        f"the port {getattr(self.port, 'port', '')} did not come back within "
                        f"{self.reconnect_seconds:.0f} s ({exc}); check the cable and the board"
                    ) from None
                if not wanted():
                    raise LinkError(
                        f"the port {getattr(self.port, 'port', '')} went away ({exc}); the run's samples were "
                        "done before it came back"
                    ) from None
                time.sleep(RECONNECT_POLL_SECONDS)
        self.stats.reconnects += 1

    def _recovering(self, step):
        """Run `step` (a whole sample, or loading one), starting over after each device reset, or
        when the device no longer holds what it was sent (a reset whose boot notice was lost)."""
        for _ in range(RESETS_PER_SAMPLE):
            try:
                return step()
            except LOST_STATE as lost:
                self._recover(lost)
            except DeviceError as error:
                if error.code not in STATE_LOST_ERRORS:
                    raise
            self.stats.reruns += 1
        raise LinkError(f"the device reset {RESETS_PER_SAMPLE} times during one sample; check its power and watchdog")

    def _finish_pipelined(self, data: bytes, started, next_data: bytes | None) -> InvokeResult:
        try:
            return self._invoke_result(started)
        except DeviceError as error:
            if error.code not in STATE_LOST_ERRORS:
                raise
        # The INVOKE was lost while the next input overwrote this one (or the device lost it in a reset):
        # run it again, then reload the next.
        self.stats.reruns += 1
        result = self._recovering(lambda: self.run(data))
        if next_data is not None:
            self._recovering(lambda: self.load_input(next_data))
        return result

    def _start_invoke(self, data: bytes | None):
        """Send INVOKE (naming the input by its CRC-32 on v2 devices) without waiting for the answer."""
        info = self._require_info()
        payload = struct.pack("<I", crc32(data)) if data is not None and info.protocol_version >= 2 else b""
        seq = self._next_seq()
        frame = encode_frame(Msg.INVOKE, seq, payload)
        self._write(frame)
        self._expected.add(seq)
        return seq, frame, time.monotonic()

    def _invoke_result(self, started) -> InvokeResult:
        seq, frame, at = started
        info = self._require_info()
        try:
            payload = self._complete(Msg.INVOKE, seq, frame, self._invoke_wait())
        finally:
            self._expected.discard(seq)
        self.last_invoke = (at, time.monotonic())
        self._invoke_answered = True
        self._slowest_invoke = max(self._slowest_invoke, self.last_invoke[1] - at)
        measured, total, output = parse_invoke(payload, info)
        self.last_device_window = _device_window(measured, self.last_invoke[1])
        if measured.kind in REAL_CLOCKS and measured.seconds is not None:  # however short the invokes are
            self._longest_invoke = max(self._longest_invoke or 0.0, measured.seconds)
        if total != info.output.bytes or len(output) > total:
            raise MalformedPayload(f"INVOKE answer announces {total} output bytes, HELLO {info.output.bytes}")
        while len(output) < total:
            want = min(total - len(output), info.max_response_payload - 4)  # after the offset field
            more = self.request(Msg.READ_OUTPUT, read_output_payload(len(output), want))
            if not 0 < len(more) - 4 <= want:
                raise MalformedPayload(f"READ_OUTPUT answered {len(more)} bytes for {want} asked")
            output += more[4:]
        return InvokeResult(measured, output)

    def switch_baud(self, baud: int) -> bool:
        """SET_BAUD after the handshake: both ends move to `baud`. The device keeps the new rate only once
        a request with a new sequence number reaches it there (proof that the host heard it), so after
        HELLO at the new rate the host confirms with an empty LINK_TEST. If that fails both ends fall
        back (the device on its own after a second) and the link carries on; if the old rate gets no
        answer either, the device committed after all and the host follows it. True if switched."""
        info = self._require_info()
        old = self.port.baudrate
        if baud == old or info.protocol_version < 2 or not info.max_baud:
            return False
        new = _within_max_baud(baud, info)
        try:
            self.request(Msg.SET_BAUD, struct.pack("<I", new))
            answered = True
        except DeviceError:
            raise
        except LinkError:  # no answer: the device may have switched and lost its answers, or not
            answered = False
        switched_at = time.monotonic()
        if answered:
            self.port.baudrate = new
            saved = self.timeout, self.retries
            self.timeout, self.retries = 0.2, 1  # the tries fit the device's one-second probation
            try:
                self.hello()
                self.echo(b"")  # a new sequence number: the device commits the rate on it
                self.stats.baud = new
                return True
            except LinkError:
                pass
            finally:
                self.timeout, self.retries = saved
        self.port.baudrate = old
        time.sleep(max(0.0, switched_at + FALLBACK_SECONDS - time.monotonic()))
        try:
            self.hello()
        except LinkError as at_old:
            self.port.baudrate = new  # the confirmation reached the device but its answers were lost
            try:
                self.hello()
            except LinkError:
                self.port.baudrate = old
                raise at_old from None
            self.stats.baud = new
            return True
        self.stats.baud_fallbacks += 1
        self.stats.baud = old
        return False

    def _partial_gap(self) -> float:
        """Silence in the middle of an answer longer than this means bytes were lost (a device sends
        each frame in one go; USB adapters add a few milliseconds)."""
        return PARTIAL_GAP_SECONDS + self.wire_seconds(64)

    def wire_seconds(self, nbytes: int) -> float:
        """How long nbytes take on the wire at the port's rate (10 bits a byte)."""
        return nbytes * 10 / (getattr(self.port, "baudrate", 0) or 115200)

    def echo(self, payload: bytes) -> bytes:
        """LINK_TEST: the device sends the payload back."""
        return self.request(Msg.LINK_TEST, payload)

    def perf(self, iterations: int) -> tuple[Timing, int]:
        """PERF: the device times its fixed workload; returns the span and the workload's checksum."""
        info = self._require_info()
        return parse_perf(self.request(Msg.PERF, struct.pack("<I", iterations), timeout=self._invoke_wait()), info)

    def bench(self, data: bytes, runs: int, warmups: int = 0) -> list[Timing]:
        """`runs` timed invokes after `warmups` untimed ones, the input loaded once per batch."""
        return [t for batch, _, _ in self._bench_batches(data, runs, warmups) for t in batch]

    def back_to_back(self, data: bytes, count: int) -> list[Span]:
        """BENCH batches: each runs its invokes back to back; between them the input is loaded again."""
        spans = []
        for batch, start, answered in self._bench_batches(data, count, 0):
            real = all(t.kind in REAL_CLOCKS and t.seconds is not None for t in batch)
            spans.append(Span(len(batch), sum(t.seconds for t in batch) if real else None, start, answered))
        return spans

    def _bench_batches(self, data: bytes, runs: int, warmups: int) -> Iterator[tuple[list[Timing], float, float]]:
        """As many BENCH requests as one response frame's timings need: each batch's timings, when its
        invokes began and when its answer was read (host monotonic). They begin once the request (a few
        bytes) has crossed the wire; the answer (up to a frame of timings) is no anchor for them."""
        info = self._require_info()
        per_frame = (info.max_response_payload - 4) // 8  # u32 count, then u64 ticks per run
        done = 0
        while done < runs:
            batch = min(per_frame, runs - done)
            self.load_input(data)
            resends = self.stats.resends
            started = time.monotonic()
            payload = self.request(
                Msg.BENCH,
                struct.pack("<II", warmups if not done else 0, batch),
                timeout=self._invoke_wait() * (batch + warmups),
            )
            answered = time.monotonic()
            self._slowest_invoke = max(self._slowest_invoke, (answered - started) / (batch + warmups))
            timings = [timing(ticks, info) for ticks in parse_bench(payload)]
            done += len(timings)
            # A resent BENCH is answered from the device's store: its invokes began at a send unknown here.
            start = started + self.wire_seconds(OVERHEAD + 8) if self.stats.resends == resends else math.nan
            yield timings, start, answered

    def profile(self, data: bytes) -> tuple[Timing, list[tuple[str, Timing]], int]:
        """One invoke timed operator by operator: (whole invoke, per operator, operators run)."""
        info = self._require_info()
        self.load_input(data)
        total, ops, operators = parse_profile(self.request(Msg.PROFILE, timeout=self._invoke_wait()))
        return timing(total, info), [(name, timing(ticks, info)) for name, ticks in ops], operators

    def stream_start(self, config: bytes) -> int:
        """STREAM_START: configure and reset the keyword pipeline; returns the frontend's arena use."""
        return parse_stream_start(self.request(Msg.STREAM_START, config, timeout=self._invoke_wait()))

    def stream_audio(self, samples: bytes) -> StreamChunkResult:
        """STREAM_AUDIO: int16 LE samples in; the detections they completed out. The wait scales with
        the number of model runs the chunk can cause."""
        return parse_stream_audio(self.request(Msg.STREAM_AUDIO, samples, timeout=self.invoke_timeout))

    def _invoke_wait(self) -> float:
        """Until one invoke has been seen, the configured bound; then a multiple of the slowest seen,
        so a lost INVOKE frame costs seconds rather than the whole bound."""
        if not self._slowest_invoke:
            return self.invoke_timeout
        return min(self.invoke_timeout, max(self.timeout, 5 * self._slowest_invoke))

    def run(self, data: bytes) -> InvokeResult:
        self.load_input(data)
        return self._invoke_result(self._start_invoke(data))

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


class _InputLoad:
    """One input on its way to the device (DeviceClient.load_input): chunks of the largest frame, a
    window of them in flight, going back to the last acknowledged byte after a loss or damage.
    send_ahead puts the first chunks out before an INVOKE's answer is in (one-slot pipelining); finish
    sends the rest and waits until the device holds the whole input."""

    def __init__(self, client: DeviceClient, data: bytes):
        info = client._require_info()
        if len(data) != info.input.bytes:
            raise LinkError(f"input is {len(data)} bytes, the device expects {info.input.bytes}")
        self.client, self.data = client, data
        # Bytes in flight are bounded by the device's frame buffer plus its link buffer; frames small
        # enough that three fit keep the line busy while the device handles one and the host is slow
        # to send the next.
        self.budget = info.max_request_frame + info.rx_buffer_bytes
        largest_frame = min(info.max_request_frame, max(self.budget // 3, MIN_WINDOW_FRAME))
        self.largest = min(info.max_request_payload, largest_frame - OVERHEAD) - 4
        self._resize()
        self.acked = self.sent = 0
        self.outstanding: dict[int, int] = {}  # sequence number -> input bytes loaded once it is acknowledged
        self.ahead: set[int] = set()  # chunks sent ahead, whose answers may come while others are awaited

    def _resize(self) -> None:
        """Chunk and window for the byte error rate the link has shown (harness/link/frame_sizer.py)."""
        bytes_per_second = (getattr(self.client.port, "baudrate", 0) or 115200) / 10
        sizing = self.client.frame_sizer.choose(self.largest, self.budget, MAX_WINDOW, bytes_per_second)
        self.chunk, self.window = sizing.chunk, sizing.window
        self.client.stats.chunk_bytes = self.chunk

    def _frame(self) -> bytes:
        piece = self.data[self.sent : self.sent + self.chunk]
        seq = self.client._next_seq()
        self.client.stats.frames_sent += 1
        frame = encode_frame(Msg.LOAD_INPUT, seq, load_input_payload(self.sent, piece))
        self.sent += len(piece)
        self.outstanding[seq] = self.sent
        return frame

    def send_ahead(self, limit: int) -> None:
        """As many chunks as fit `limit` bytes (framing and padding included), in one burst, their answers
        kept for finish() while the client awaits other answers."""
        client = self.client
        pad = PAD if client._damaged_link else b""
        burst = b""
        while self.sent < len(self.data):
            size = min(self.chunk, len(self.data) - self.sent) + 4 + OVERHEAD
            if len(burst) + size + len(pad) > limit:
                break
            burst += self._frame()
        self.ahead.update(self.outstanding)
        client._expected.update(self.outstanding)
        if burst:
            client.port.write(burst + pad)

    def finish(self) -> None:
        client = self.client
        failures = 0
        while self.acked < len(self.data):
            burst = b""
            while len(self.outstanding) < self.window and self.sent < len(self.data):
                burst += self._frame()
            if burst:
                # A chunk that lost a byte is completed by the next one; only one nothing follows needs padding.
                last = self.sent == len(self.data) or self.window == 1
                client.port.write(burst + (PAD if client._damaged_link and last else b""))
            wait = min(client.timeout, DAMAGED_LINK_WAIT if client._damaged_link else INPUT_ANSWER_WAIT)
            in_flight = max(self.window, len(self.outstanding)) * (self.chunk + CHUNK_FRAMING)
            event = client._next_answer(set(self.outstanding), wait + client.wire_seconds(in_flight))
            ok = event is not None and event.type == Msg.LOAD_INPUT | RESPONSE_BIT
            if not ok and event is not None and event.type == Msg.ERROR:
                code, text = parse_error(event.payload)
                if code not in RESEND_INPUT_ERRORS:
                    raise DeviceError(code, text)
                if code == ErrorCode.BAD_OFFSET and failures >= 2:
                    self.acked = 0  # the device holds less than it acknowledged: a reset whose notice was lost
            exchange = self.chunk + CHUNK_FRAMING + ANSWER_BYTES
            if ok:
                self.acked = max(self.acked, int.from_bytes(event.payload[:4], "little"))
                del self.outstanding[event.seq]
                failures = 0
                client.frame_sizer.delivered(exchange)
                continue
            failures += 1
            client.frame_sizer.fault(exchange)
            if failures > client._retries():
                raise LinkError(f"input not accepted after {failures} attempts; check the link and the baud rate")
            client.stats.go_backs += 1
            self.acked = client._drain(self.outstanding, self.acked)
            client.stats.resends += len(self.outstanding)
            self.outstanding.clear()
            self.sent = self.acked
            self._resize()
        client.stats.byte_error_rate = client.frame_sizer.byte_error_rate
        self.forget()

    def forget(self) -> None:
        """Stop keeping answers to the chunks sent ahead: once loaded, or given up for a rerun."""
        for seq in self.ahead:
            self.client._expected.discard(seq)
            self.client._held.pop(seq, None)
        self.ahead.clear()


def _device_window(measured: Timing, answered: float) -> tuple[float, float] | None:
    """The invoke's span on the host's clock: as long as the device's own timer says, ending when its
    answer arrived. Emulated time is no real time; a device without a clock gives none."""
    if measured.kind not in REAL_CLOCKS or measured.seconds is None:
        return None
    return answered - measured.seconds, answered

"""Protocol v1 client: requests with sequence numbers, retries on silence or corruption."""

import random
import struct
import time
from collections import deque
from dataclasses import dataclass

from harness.errors import LinkError
from harness.link.framing import FrameDecoder, Rejected, encode_frame
from harness.link.protocol import (
    PROTOCOL_VERSION,
    RESPONSE_BIT,
    DeviceInfo,
    ErrorCode,
    InvokeResult,
    Msg,
    StreamChunkResult,
    Timing,
    load_input_payload,
    parse_bench,
    parse_error,
    parse_hello,
    parse_invoke,
    parse_perf,
    parse_profile,
    parse_stream_audio,
    read_output_payload,
    timing,
)

# A damaged request is dropped by the device; sending it again is the cure. (An oversized one is
# refused with FRAME_TOO_LONG, which no resend cures.)
RETRYABLE_ERRORS = {ErrorCode.BAD_CRC}


class DeviceError(LinkError):
    def __init__(self, code: int, message: str):
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else f"code {code}"
        super().__init__(f"device error {name}: {message}")
        self.code = code


@dataclass
class LinkStats:
    frames_sent: int = 0
    resends: int = 0
    corrupt_frames: int = 0
    stale_frames: int = 0


class DeviceClient:
    def __init__(self, port, *, timeout: float = 2.0, invoke_timeout: float = 60.0, retries: int = 3):
        self.port = port
        self.timeout = timeout
        self.invoke_timeout = invoke_timeout
        self.retries = retries
        self.stats = LinkStats()
        self.info: DeviceInfo | None = None
        self.firmware: dict | None = None  # how the firmware was built, where harness built it
        self._decoder = FrameDecoder()
        self._events: deque = deque()
        self._slowest_invoke = 0.0
        self.last_invoke: tuple[float, float] | None = None  # host monotonic: INVOKE sent, its answer read
        # A fresh random start keeps a new session's requests from matching a cached old answer.
        self._seq = random.randrange(0x10000)

    def hello(self) -> DeviceInfo:
        self.port.reset_input_buffer()
        self._decoder.reset()
        self._events.clear()
        info = parse_hello(self.request(Msg.HELLO))
        if info.protocol_version != PROTOCOL_VERSION:
            raise LinkError(
                f"device speaks protocol v{info.protocol_version}, this harness v{PROTOCOL_VERSION}: "
                "flash matching firmware"
            )
        self.info = info
        return info

    def load_input(self, data: bytes) -> None:
        info = self._require_info()
        if len(data) != info.input.bytes:
            raise LinkError(f"input is {len(data)} bytes, the device expects {info.input.bytes}")
        chunk = info.max_request_payload - 4
        for offset in range(0, len(data), chunk):
            piece = data[offset : offset + chunk]
            ack = int.from_bytes(self.request(Msg.LOAD_INPUT, load_input_payload(offset, piece)), "little")
            if ack != offset + len(piece):
                raise LinkError(f"device acknowledged {ack} input bytes, expected {offset + len(piece)}")

    def invoke(self) -> InvokeResult:
        info = self._require_info()
        started = time.monotonic()
        payload = self.request(Msg.INVOKE, timeout=self._invoke_wait())
        self.last_invoke = (started, time.monotonic())
        self._slowest_invoke = max(self._slowest_invoke, self.last_invoke[1] - started)
        measured, total, output = parse_invoke(payload, info)
        while len(output) < total:
            want = min(total - len(output), info.max_response_payload - 4)  # after the offset field
            more = self.request(Msg.READ_OUTPUT, read_output_payload(len(output), want))
            output += more[4:]
        return InvokeResult(measured, output)

    def echo(self, payload: bytes) -> bytes:
        """LINK_TEST: the device sends the payload back."""
        return self.request(Msg.LINK_TEST, payload)

    def perf(self, iterations: int) -> tuple[Timing, int]:
        """PERF: the device times its fixed workload; returns the span and the workload's checksum."""
        info = self._require_info()
        return parse_perf(self.request(Msg.PERF, struct.pack("<I", iterations), timeout=self._invoke_wait()), info)

    def bench(self, data: bytes, runs: int, warmups: int = 0) -> list[Timing]:
        """`runs` timed invokes after `warmups` untimed ones, the input loaded once per batch."""
        info = self._require_info()
        per_frame = (info.max_response_payload - 4) // 8  # u32 count, then u64 ticks per run
        timings: list[Timing] = []
        while len(timings) < runs:
            batch = min(per_frame, runs - len(timings))
            self.load_input(data)
            started = time.monotonic()
            payload = self.request(
                Msg.BENCH,
                struct.pack("<II", warmups if not timings else 0, batch),
                timeout=self._invoke_wait() * (batch + warmups),
            )
            self._slowest_invoke = max(self._slowest_invoke, (time.monotonic() - started) / (batch + warmups))
            timings += [timing(ticks, info) for ticks in parse_bench(payload)]
        return timings

    def profile(self, data: bytes) -> tuple[Timing, list[tuple[str, Timing]], int]:
        """One invoke timed operator by operator: (whole invoke, per operator, operators run)."""
        info = self._require_info()
        self.load_input(data)
        total, ops, operators = parse_profile(self.request(Msg.PROFILE, timeout=self._invoke_wait()))
        return timing(total, info), [(name, timing(ticks, info)) for name, ticks in ops], operators

    def stream_start(self, config: bytes) -> int:
        """STREAM_START: configure and reset the keyword pipeline; returns the frontend's arena use."""
        (frontend_arena,) = struct.unpack_from(
            "<I", self.request(Msg.STREAM_START, config, timeout=self._invoke_wait())
        )
        return frontend_arena

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
        return self.invoke()

    def request(self, msg: Msg, payload: bytes = b"", timeout: float | None = None) -> bytes:
        self._seq = (self._seq + 1) & 0xFFFF
        frame = encode_frame(msg, self._seq, payload)
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.resends += 1
            self.port.write(frame)
            self.stats.frames_sent += 1
            answer = self._await(msg, self._seq, timeout or self.timeout)
            if answer is not None:
                return answer
        raise LinkError(
            f"no valid answer to {msg.name} after {self.retries + 1} attempts; "
            "check the port, the baud rate and that the board runs harness firmware"
        )

    def _await(self, msg: Msg, seq: int, timeout: float) -> bytes | None:
        """The answer's payload, or None when the request should be sent again."""
        deadline = time.monotonic() + timeout
        while True:
            while self._events:
                event = self._events.popleft()
                if isinstance(event, Rejected):
                    self.stats.corrupt_frames += 1
                    return None
                if event.seq != seq:
                    self.stats.stale_frames += 1
                    continue
                if event.type == Msg.ERROR:
                    code, text = parse_error(event.payload)
                    if code in RETRYABLE_ERRORS:
                        return None
                    raise DeviceError(code, text)
                if event.type == msg | RESPONSE_BIT:
                    return event.payload
                self.stats.stale_frames += 1
            if time.monotonic() > deadline:
                self._decoder.reset()
                return None
            data = self.port.read(max(1, self.port.in_waiting))
            if data:
                self._events.extend(self._decoder.feed(data))

    def _require_info(self) -> DeviceInfo:
        if self.info is None:
            self.info = self.hello()
        return self.info

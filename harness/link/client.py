"""The harness protocol's session (docs/protocol.md): the operations a command uses, on the request engine
(harness/link/requests.py), its recovery (recovery.py) and baud switching (baud.py); inputs go through a window
of frames in flight (input_window.py), the next sample sent while the device runs the current one."""

import math
import struct
import time
from collections.abc import Iterable, Iterator

from harness.errors import UserError
from harness.link.baud import BaudSwitcher
from harness.link.frame_sizer import CHUNK_FRAMING, SMALLEST_CHUNK
from harness.link.framing import OVERHEAD, crc32, encode_frame
from harness.link.input_window import InputLoad
from harness.link.layer_trace import (
    LayerRecord,
    layer_dump_payload,
    layer_trace_payload,
    parse_layer_dump,
    parse_layer_trace,
)
from harness.link.protocol import (
    ErrorCode,
    InvokeResult,
    MalformedPayload,
    Msg,
    StreamChunkResult,
    TickKind,
    Timing,
    parse_bench,
    parse_invoke,
    parse_perf,
    parse_profile,
    parse_stream_audio,
    parse_stream_start,
    read_output_payload,
    timing,
)
from harness.link.recovery import STATE_LOST_ERRORS, Recovering
from harness.link.requests import LOST_STATE, PAD, DeviceError
from harness.link.roles import KeywordStreaming, LayerTracing, LinkTesting, Profiling
from harness.link.session import Span, Unsupported

REAL_CLOCKS = (TickKind.WALL_CLOCK, TickKind.CPU_CYCLES)  # an emulator's time says nothing of how long we wait
# Of a one-slot device's link buffer, what chunks sent ahead of an INVOKE's answer leave free: room for a
# resent INVOKE (and its padding) queued behind them while the model still runs.
AHEAD_RESERVE = 64


class DeviceClient(Recovering, BaudSwitcher, Profiling, LayerTracing, KeywordStreaming, LinkTesting):
    """The harness protocol (docs/protocol.md): the core session and every role."""

    protocol = "harness"

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

    def load_input(self, data: bytes) -> None:
        """The input in chunks of the largest frame, a window of them in flight: as many as the device's
        frame buffer and link buffer hold. A lost or damaged chunk sends the window again from the last
        byte the device acknowledged."""
        InputLoad(self, data).finish()

    def invoke(self) -> InvokeResult:
        return self._invoke_result(self._start_invoke(None))

    def run(self, data: bytes) -> InvokeResult:
        self.load_input(data)
        return self._invoke_result(self._start_invoke(data))

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
        load = InputLoad(self, next_data)
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

    def layer_trace(self, data: bytes) -> list[LayerRecord]:
        """LAYER_TRACE pages: each loads the input and runs it once, answering the records from the first
        operator still missing that fit one frame (the device keeps nothing between them)."""
        records: list[LayerRecord] = []
        operators = None
        while operators is None or len(records) < operators:
            self.load_input(data)
            page = parse_layer_trace(self._traced(Msg.LAYER_TRACE, layer_trace_payload(len(records))))
            if operators is not None and page.operators_run != operators:
                raise MalformedPayload(f"LAYER_TRACE ran {page.operators_run} operators, before {operators}")
            operators = page.operators_run
            if page.first_op != len(records) or [r.index for r in page.records] != list(
                range(len(records), len(records) + len(page.records))
            ):
                raise MalformedPayload(f"LAYER_TRACE answered records out of order for operator {len(records)}")
            if not page.records and len(records) < operators:
                raise MalformedPayload(f"operator {len(records)}'s trace record does not fit one answer frame")
            records += page.records
        return records

    def layer_tensor(self, data: bytes, op_index: int, output: int = 0) -> bytes:
        """LAYER_DUMP pages: each loads the input, runs it once and answers a frame's worth of the tensor."""
        info = self._require_info()
        got, total = b"", None
        while total is None or len(got) < total:
            self.load_input(data)
            want = min(info.max_response_payload - 4, 0xFFFF)
            payload = self._traced(Msg.LAYER_DUMP, layer_dump_payload(op_index, output, len(got), want))
            size, chunk = parse_layer_dump(payload)
            if (total is not None and size != total) or not (chunk or size == len(got)) or len(chunk) > want:
                raise MalformedPayload(f"LAYER_DUMP answered {len(chunk)} bytes of {size} at {len(got)}")
            total, got = size, got + chunk
        return got

    def _traced(self, msg: Msg, payload: bytes) -> bytes:
        try:
            return self.request(msg, payload, timeout=self._invoke_wait())
        except DeviceError as error:
            if error.code == ErrorCode.UNSUPPORTED:
                raise Unsupported(
                    f"{self.info.board_id}: its firmware cannot trace layers (built with HP_LAYER_TRACE 0, or its "
                    "runner has no trace); rebuild it with the default HP_LAYER_TRACE 1"
                ) from None
            if error.code == ErrorCode.BAD_OFFSET:
                raise UserError(f"the traced model has no such operator output ({error}); check the index") from None
            raise

    def stream_start(self, config: bytes) -> int:
        """STREAM_START: configure and reset the keyword pipeline; returns the frontend's arena use."""
        return parse_stream_start(self.request(Msg.STREAM_START, config, timeout=self._invoke_wait()))

    def stream_audio(self, samples: bytes) -> StreamChunkResult:
        """STREAM_AUDIO: int16 LE samples in; the detections they completed out. The wait scales with
        the number of model runs the chunk can cause."""
        return parse_stream_audio(self.request(Msg.STREAM_AUDIO, samples, timeout=self.invoke_timeout))


def _device_window(measured: Timing, answered: float) -> tuple[float, float] | None:
    """The invoke's span on the host's clock: as long as the device's own timer says, ending when its
    answer arrived. Emulated time is no real time; a device without a clock gives none."""
    if measured.kind not in REAL_CLOCKS or measured.seconds is None:
        return None
    return answered - measured.seconds, answered

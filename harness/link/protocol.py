"""Protocol v1 messages as the host sees them: types, error codes and payload layouts.

The device side is firmware/core/hp_device.c; tests check these numbers against its header.
"""

import struct
from dataclasses import dataclass
from enum import IntEnum

from harness.errors import LinkError
from harness.link.framing import MAX_PAYLOAD, OVERHEAD
from harness.tensors import TensorSpec

PROTOCOL_VERSION = 2
MAX_RANK = 6  # HP_MAX_DIMS
SUPPORTED_VERSIONS = (1, 2)  # v2 only adds to v1: HELLO's tail, SET_BAUD, INVOKE naming its input
RESPONSE_BIT = 0x80


class Msg(IntEnum):
    HELLO = 0x01
    LOAD_INPUT = 0x02
    INVOKE = 0x03
    READ_OUTPUT = 0x04
    LINK_TEST = 0x05
    PERF = 0x06
    BENCH = 0x07
    PROFILE = 0x08
    SET_BAUD = 0x09
    BOOT = 0x0A  # unasked, from the device: it (re)started
    STREAM_START = 0x0B
    STREAM_AUDIO = 0x0C
    LAYER_TRACE = 0x0D  # one invoke traced: every operator's output digests (harness/link/layer_trace.py)
    LAYER_DUMP = 0x0E  # one invoke traced: a slice of one operator's output tensor
    ERROR = 0x7F


class ErrorCode(IntEnum):
    BAD_CRC = 1
    FRAME_TOO_LONG = 2
    UNKNOWN_TYPE = 3
    BAD_PAYLOAD = 4
    BAD_OFFSET = 5
    INPUT_INCOMPLETE = 6
    INVOKE_FAILED = 7
    MODEL_NOT_READY = 8
    NO_OUTPUT = 9
    UNSUPPORTED = 10
    INPUT_MISMATCH = 11


class TickKind(IntEnum):
    NONE = 0
    CPU_CYCLES = 1
    WALL_CLOCK = 2
    EMULATED = 3  # an emulator's virtual time: under QEMU -icount it counts instructions, not cycles


@dataclass(frozen=True)
class DeviceInfo:
    protocol_version: int
    board_id: str
    build_id: str
    model_sha256_prefix: str
    arena_configured: int | None  # None: the DUT does not report it (EEMBC)
    arena_used: int | None
    max_request_frame: int
    max_response_frame: int
    rx_buffer_bytes: int
    cpu_hz: int
    tick_hz: int
    tick_kind: TickKind
    runner_status: int
    input: TensorSpec
    output: TensorSpec
    input_slots: int = 1  # 2: the device takes the next input while it runs the model (v2)
    max_baud: int = 0  # the highest rate SET_BAUD may switch to; 0: no switching (v2)
    baud_applies: bool = True  # False: the link has no baud rate (USB CDC), the host's rate is ignored (v2)
    input_encodings: int = 1  # bit e: LOAD_INPUT may carry the input in encoding e (harness/link/input_forms.py)
    codec_row_max: int = 0  # the longest row the device's row codec decodes (harness/link/row_codec.py)

    @property
    def max_request_payload(self) -> int:
        return min(self.max_request_frame - OVERHEAD, MAX_PAYLOAD)

    @property
    def max_response_payload(self) -> int:
        return min(self.max_response_frame - OVERHEAD, MAX_PAYLOAD)


@dataclass(frozen=True)
class Timing:
    """A span the device measured in its own ticks."""

    ticks: int | None
    tick_hz: int
    kind: TickKind

    @property
    def seconds(self) -> float | None:
        return self.ticks / self.tick_hz if self.ticks is not None and self.tick_hz else None

    @property
    def micros(self) -> float | None:
        seconds = self.seconds
        return None if seconds is None else seconds * 1e6

    @property
    def cycles(self) -> int | None:
        """Only a cycle counter gives cycles; emulated ticks are never presented as cycles."""
        return self.ticks if self.kind == TickKind.CPU_CYCLES else None


@dataclass(frozen=True)
class InvokeResult:
    timing: Timing
    output: bytes


class MalformedPayload(LinkError):
    """An answer whose payload does not have the layout its type promises."""


def _unpack(fmt: str, data: bytes, offset: int = 0) -> tuple:
    try:
        return struct.unpack_from("<" + fmt, data, offset)
    except struct.error:
        raise MalformedPayload(f"answer payload of {len(data)} bytes is too short for <{fmt} at {offset}") from None


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def values(self, fmt: str) -> tuple:
        values = _unpack(fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, fmt: str):
        values = self.values(fmt)
        return values if len(values) > 1 else values[0]

    def string(self) -> str:
        return self.raw(self.take("B")).decode("utf-8", "replace")

    def raw(self, n: int) -> bytes:
        value = self.data[self.pos : self.pos + n]
        if len(value) < n:
            raise MalformedPayload(f"answer payload ends {n - len(value)} bytes early")
        self.pos += n
        return value

    def tensor(self) -> TensorSpec:
        dtype, rank = self.take("BB")
        if rank > MAX_RANK:
            raise MalformedPayload(f"tensor of rank {rank}; the protocol allows {MAX_RANK}")
        shape = self.values(f"{rank}i")
        scale, zero_point, nbytes = self.take("fiI")
        return TensorSpec(dtype, shape, float(scale), zero_point, nbytes)


LINK_NO_BAUD = 1  # HELLO link flags (v2): hp_link_flag in firmware/core/hp_device.h


def parse_hello(payload: bytes) -> DeviceInfo:
    r = _Reader(payload)
    version = r.take("H")
    board_id = r.string()
    build_id = r.string()
    sha_prefix = r.raw(8).hex()
    arena_configured, arena_used, max_req, max_resp, rx_buffer, cpu_hz, tick_hz = r.take("7I")
    kind = r.take("B")
    if kind not in TickKind._value2member_map_:
        raise MalformedPayload(f"HELLO names tick kind {kind}, which this harness does not know")
    tick_kind = TickKind(kind)
    if max_req <= OVERHEAD + 4 or max_resp <= OVERHEAD + 4:
        raise MalformedPayload(f"HELLO announces frames of {max_req}/{max_resp} bytes, too small to carry data")
    runner_status = r.take("I")
    return DeviceInfo(
        version,
        board_id,
        build_id,
        sha_prefix,
        arena_configured,
        arena_used,
        max_req,
        max_resp,
        rx_buffer,
        cpu_hz,
        tick_hz,
        tick_kind,
        runner_status,
        r.tensor(),
        r.tensor(),
        *(r.take("BI") if len(payload) - r.pos >= 5 else ()),
        baud_applies=not (r.take("B") & LINK_NO_BAUD) if len(payload) - r.pos >= 1 else True,
        # Absent from older devices: they take the raw form only.
        input_encodings=r.take("I") | 1 if len(payload) - r.pos >= 4 else 1,
        codec_row_max=r.take("I") if len(payload) - r.pos >= 4 else 0,
    )


def timing(ticks: int, info: DeviceInfo) -> Timing:
    has_clock = info.tick_kind != TickKind.NONE
    return Timing(ticks if has_clock else None, info.tick_hz, info.tick_kind)


def parse_invoke(payload: bytes, info: DeviceInfo) -> tuple[Timing, int, bytes]:
    ticks, total = _unpack("QI", payload)
    return timing(ticks, info), total, payload[12:]


def parse_perf(payload: bytes, info: DeviceInfo) -> tuple[Timing, int]:
    ticks, checksum = _unpack("QI", payload)
    return timing(ticks, info), checksum


def parse_bench(payload: bytes) -> list[int]:
    (runs,) = _unpack("I", payload)
    if 4 + 8 * runs != len(payload):
        raise MalformedPayload(f"BENCH answer of {len(payload)} bytes cannot hold {runs} timings")
    return list(_unpack(f"{runs}Q", payload, 4))


def parse_profile(payload: bytes) -> tuple[int, list[tuple[str, int]], int]:
    """(total ticks, [(operator, ticks)…], operators run — more than listed if the frame was full)."""
    r = _Reader(payload)
    total = r.take("Q")
    listed = r.take("H")
    ops = []
    for _ in range(listed):
        ticks = r.take("Q")
        ops.append((r.string(), ticks))
    return total, ops, r.take("I")


@dataclass(frozen=True)
class StreamChunkResult:
    rows_total: int  # feature rows computed since the stream started
    model_runs: int  # model invokes since the stream started
    busy_ticks: int  # frontend and model time spent on this chunk, in the device's ticks
    found: int  # detections in this chunk (more than listed if the frame was full)
    detections: list[tuple[int, int, int]]  # (class index, score 0..255, decision time in ms)


def parse_stream_audio(payload: bytes) -> StreamChunkResult:
    rows, runs, busy, found, sent = _unpack("IIQHH", payload)
    detections = [_unpack("BBI", payload, 20 + 6 * i) for i in range(sent)]
    return StreamChunkResult(rows, runs, busy, found, detections)


def parse_stream_start(payload: bytes) -> int:
    """The frontend's arena use."""
    return _unpack("I", payload)[0]


def parse_error(payload: bytes) -> tuple[int, str]:
    code, n = _unpack("HB", payload)
    return code, payload[3 : 3 + n].decode("utf-8", "replace")


OFFSET_ENCODED = 0x80000000  # LOAD_INPUT's offset bit 31: an encoding u8 follows, the offset counts its bytes


def load_input_payload(offset: int, chunk: bytes, encoding: int = 0) -> bytes:
    if encoding:
        return struct.pack("<IB", offset | OFFSET_ENCODED, encoding) + chunk
    return struct.pack("<I", offset) + chunk


def read_output_payload(offset: int, length: int) -> bytes:
    return struct.pack("<IH", offset, length)

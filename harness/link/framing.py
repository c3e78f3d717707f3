"""Protocol v1 frames on the host, through the C codec in firmware/core (one implementation)."""

import ctypes
from dataclasses import dataclass

from harness.native import Decoder, Frame, device_core

SYNC = b"\xa5\x5a"  # a frame's first two bytes (firmware/core/hp_frame.h HP_SYNC0, HP_SYNC1)
HEADER_BYTES = 8
OVERHEAD = 12
MAX_PAYLOAD = 0xFFFF

DECODE_FRAME = 1
DECODE_BAD_CRC = -1
DECODE_TOO_LONG = -2


@dataclass(frozen=True)
class Received:
    """A whole frame whose CRC matched."""

    type: int
    seq: int
    payload: bytes


@dataclass(frozen=True)
class Rejected:
    """Bytes that looked like a frame but failed the CRC or were too long to hold."""

    reason: str
    seq: int


def encode_frame(msg_type: int, seq: int, payload: bytes = b"") -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    out = ctypes.create_string_buffer(len(payload) + OVERHEAD)
    size = device_core().hp_frame_encode(out, len(out), msg_type, seq & 0xFFFF, payload, len(payload))
    return out.raw[:size]


def crc32(data: bytes) -> int:
    return device_core().hp_crc32_update(0, data, len(data))


class FrameDecoder:
    """Feeds received bytes to the C decoder and yields what it finds."""

    def __init__(self, max_frame_bytes: int = MAX_PAYLOAD + OVERHEAD):
        self._lib = device_core()
        self._buf = ctypes.create_string_buffer(max_frame_bytes)
        self._state = Decoder()
        self._lib.hp_decoder_init(ctypes.byref(self._state), self._buf, max_frame_bytes)

    @property
    def skipped_bytes(self) -> int:
        return self._state.skipped

    @property
    def partial(self) -> bool:
        return self._state.have > 0

    def reset(self) -> None:
        self._lib.hp_decoder_reset(ctypes.byref(self._state))

    def feed(self, data: bytes) -> list[Received | Rejected]:
        events: list[Received | Rejected] = []
        consumed = ctypes.c_uint32()
        frame = Frame()
        while data:
            status = self._lib.hp_decoder_feed(
                ctypes.byref(self._state), data, len(data), ctypes.byref(consumed), ctypes.byref(frame)
            )
            data = data[consumed.value :]
            if status == DECODE_FRAME:
                payload = ctypes.string_at(frame.payload, frame.length) if frame.length else b""
                events.append(Received(frame.type, frame.seq, payload))
            elif status == DECODE_BAD_CRC:
                events.append(Rejected("bad CRC", frame.seq))
            elif status == DECODE_TOO_LONG:
                events.append(Rejected("frame too long", frame.seq))
        return events

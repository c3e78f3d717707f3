"""Frame encoding and decoding through the C codec in firmware/core."""

import random
import re
import struct
import zlib

from harness.link.framing import FrameDecoder, Received, Rejected, crc32, encode_frame
from harness.link.protocol import ErrorCode, Msg
from tests.conftest import REPO


def test_crc32_matches_zlib():
    rng = random.Random(1)
    for size in (0, 1, 7, 64, 1000):
        data = bytes(rng.randrange(256) for _ in range(size))
        assert crc32(data) == zlib.crc32(data)


def test_encoded_layout():
    frame = encode_frame(0x02, 0x1234, b"\x01\x02\x03")
    assert frame[:2] == b"\xa5\x5a"
    assert frame[2] == 0x02 and frame[3] == 0
    assert struct.unpack_from("<HH", frame, 4) == (0x1234, 3)
    assert frame[8:11] == b"\x01\x02\x03"
    assert struct.unpack("<I", frame[-4:])[0] == zlib.crc32(frame[2:-4])


def test_round_trip_whole_and_byte_by_byte():
    rng = random.Random(2)
    for size in (0, 1, 100, 4096, 65535):
        payload = bytes(rng.randrange(256) for _ in range(size))
        frame = encode_frame(Msg.LOAD_INPUT, size, payload)
        assert FrameDecoder().feed(frame) == [Received(Msg.LOAD_INPUT, size, payload)]
    decoder = FrameDecoder()
    frame = encode_frame(Msg.INVOKE, 7, b"abc")
    events = [event for byte in frame for event in decoder.feed(bytes([byte]))]
    assert events == [Received(Msg.INVOKE, 7, b"abc")]


def test_garbage_before_and_between_frames_is_skipped():
    noise = b"\x00\xa5\xa5\x13boot log line\r\n\xa5"
    stream = noise + encode_frame(1, 1, b"x") + b"\xff\xa5" + encode_frame(2, 2, b"yz")
    decoder = FrameDecoder()
    assert decoder.feed(stream) == [Received(1, 1, b"x"), Received(2, 2, b"yz")]
    assert decoder.skipped_bytes >= len(noise)


def test_every_corrupted_byte_is_rejected():
    frame = encode_frame(Msg.LOAD_INPUT, 9, bytes(range(40)))
    for position in range(2, len(frame)):
        damaged = bytearray(frame)
        damaged[position] ^= 0x10
        decoder = FrameDecoder()
        events = decoder.feed(bytes(damaged) + encode_frame(Msg.HELLO, 10))
        assert not any(isinstance(e, Received) and e.seq == 9 for e in events), position
        # Unless the damage hit the length field, the decoder rejects the frame and finds the next one.
        if position not in (6, 7):
            assert events[0] == Rejected("bad CRC", 9 if position not in (4, 5) else events[0].seq)
            assert events[-1] == Received(Msg.HELLO, 10, b"")


def test_frame_longer_than_the_buffer_is_refused():
    decoder = FrameDecoder(max_frame_bytes=64)
    events = decoder.feed(encode_frame(Msg.LOAD_INPUT, 3, bytes(100)) + encode_frame(Msg.HELLO, 4))
    assert events[0] == Rejected("frame too long", 3)
    assert events[-1] == Received(Msg.HELLO, 4, b"")


def test_reset_drops_a_partial_frame():
    decoder = FrameDecoder()
    frame = encode_frame(Msg.HELLO, 5, b"abcdef")
    assert decoder.feed(frame[:9]) == []
    assert decoder.partial
    decoder.reset()
    assert decoder.feed(frame) == [Received(Msg.HELLO, 5, b"abcdef")]


def _c_enum(name: str) -> dict[str, int]:
    header = (REPO / "firmware" / "core" / "hp_device.h").read_text()
    body = re.search(r"enum " + name + r" \{(.*?)\};", header, re.S).group(1)
    return {k: int(v, 0) for k, v in re.findall(r"(HP_\w+) = (0x[0-9A-Fa-f]+|\d+)", body)}


def test_host_constants_match_the_c_header():
    messages = _c_enum("hp_message_type")
    for msg in Msg:
        assert messages[f"HP_MSG_{msg.name}"] == msg.value
    errors = _c_enum("hp_error_code")
    assert {k.removeprefix("HP_ERR_"): v for k, v in errors.items()} == {e.name: e.value for e in ErrorCode}

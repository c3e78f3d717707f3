"""Fuzzing the frame parsers: the C core with libFuzzer, the C decoder and the Python parsers with hypothesis."""

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import LinkError
from harness.link.eembc import EembcClient
from harness.link.framing import FrameDecoder, Received, Rejected, encode_frame
from harness.link.layer_trace import parse_layer_dump, parse_layer_trace
from harness.link.protocol import (
    DeviceInfo,
    TickKind,
    parse_bench,
    parse_error,
    parse_hello,
    parse_invoke,
    parse_perf,
    parse_profile,
    parse_stream_audio,
    parse_stream_start,
)
from harness.tensors import TensorSpec

REPO = Path(__file__).resolve().parents[3]
FRAMES = st.lists(st.tuples(st.integers(0, 255), st.integers(0, 0xFFFF), st.binary(max_size=300)), max_size=8)
NO_SYNC = st.binary(max_size=40).map(lambda b: b.replace(b"\xa5", b""))
SPEC = TensorSpec(3, (1, 4), 0.5, 2, 4)
INFO = DeviceInfo(2, "b", "x", "", 0, 0, 64, 64, 0, 0, 1000, TickKind.WALL_CLOCK, 0, SPEC, SPEC)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang with libFuzzer (scripts/install --test)")
def test_libfuzzer_finds_no_crash_hang_or_malformed_answer_in_the_device_core(tmp_path):
    binary = tmp_path / "fuzz_device"
    sources = [
        *sorted(map(str, (REPO / "firmware/core").glob("*.c"))),
        *sorted(map(str, (REPO / "firmware/eembc").glob("*.c"))),
    ]
    build = [
        "clang", "-g", "-O1", "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
        f"-I{REPO / 'firmware/core'}", f"-I{REPO / 'firmware/eembc'}", *sources,
        str(REPO / "firmware/fuzz/fuzz_device.c"), "-o", str(binary),
    ]  # fmt: skip
    subprocess.run(build, check=True, capture_output=True)
    run = subprocess.run(
        [str(binary), "-runs=60000", "-seed=1", "-timeout=5", "-max_total_time=60"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "Done 60000 runs" in run.stderr, run.stderr[-2000:]


@settings(max_examples=200, deadline=None)
@given(FRAMES, st.lists(NO_SYNC, min_size=9, max_size=9), st.integers(1, 50))
def test_c_decoder_finds_every_frame_between_noise_in_any_split(frames, noise, step):
    wire = b"".join(n + encode_frame(t, s, p) for (t, s, p), n in zip(frames, noise, strict=False)) + noise[-1]
    decoder, events = FrameDecoder(), []
    for i in range(0, len(wire), step):
        events += decoder.feed(wire[i : i + step])
    assert events == [Received(t, s, p) for t, s, p in frames]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 255), st.integers(0, 0xFFFF), st.binary(max_size=100), st.data())
def test_c_decoder_never_accepts_a_damaged_frame(msg_type, seq, payload, data):
    frame = bytearray(encode_frame(msg_type, seq, payload))
    at = data.draw(st.integers(0, len(frame) - 1))
    frame[at] ^= data.draw(st.integers(1, 255))
    events = FrameDecoder().feed(bytes(frame) + bytes(len(frame)))  # zeros complete a short frame
    assert not [e for e in events if isinstance(e, Received)]
    assert all(isinstance(e, Rejected) for e in events)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_c_decoder_survives_any_bytes(data):
    for event in FrameDecoder(max_frame_bytes=64).feed(data):
        assert isinstance(event, Received | Rejected)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_python_payload_parsers_accept_or_raise_a_link_error(payload):
    for parse in (parse_hello, lambda p: parse_invoke(p, INFO), lambda p: parse_perf(p, INFO), parse_bench,
                  parse_profile, parse_error, parse_stream_audio, parse_stream_start, parse_layer_trace,
                  parse_layer_dump):  # fmt: skip
        with contextlib.suppress(LinkError):
            parse(payload)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_eembc_result_lines_parse_or_raise_a_link_error(text):
    client = EembcClient(None, SPEC, SPEC)
    try:
        out = client._output_bytes("m-results-[" + text)
        assert len(out) == SPEC.bytes
    except LinkError:
        pass

"""The row codec (docs/link.md, "Compressed inputs"): the host's encoder (harness/link/row_codec.py) against the
device's only decoder (firmware/core/hp_row_codec.c, through harness/_devicecore), piece by piece as LOAD_INPUT
frames bring it, and the whole path through the device core on a pseudo-terminal."""

import ctypes
import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.link import row_codec
from harness.link.client import DeviceError
from harness.link.input_forms import Encoding, wire_form
from harness.link.protocol import ErrorCode, Msg, load_input_payload
from harness.native import TensorInfo, device_core
from harness.tensors import TensorSpec
from tests.fake_runner import ChecksumRunner, core_on_pty, expected_output

FLOAT32, UINT8, INT8 = 1, 3, 9
ROWS = int(Encoding.ROWS)
WIDEN = {np.dtype(np.uint8): row_codec.OUT_WIDEN_U8, np.dtype(np.int8): row_codec.OUT_WIDEN_I8}


def _tensor(dtype: int, nbytes: int) -> TensorInfo:
    info = TensorInfo()
    info.dtype, info.rank, info.dims[0], info.bytes = dtype, 1, nbytes // (4 if dtype == FLOAT32 else 1), nbytes
    return info


def _decode(info: TensorInfo, pieces: list[tuple[int, bytes]], misaligned: int = 0) -> tuple[bytes, list[int]]:
    """The tensor `misaligned` bytes past a 4-byte boundary (the decoder stores floats one way or the other)."""
    core = device_core()
    buffer = ctypes.create_string_buffer(b"\xee" * (info.bytes + 4), info.bytes + 4)
    start = -ctypes.addressof(buffer) % 4 + misaligned
    tensor = ctypes.addressof(buffer) + start
    state = ctypes.create_string_buffer(core.hp_input_state_bytes())
    ends = [core.hp_input_decode(ROWS, ctypes.byref(info), tensor, state, at, p, len(p)) for at, p in pieces]
    return buffer.raw[start : start + info.bytes], ends


def _image_like(rng: np.random.Generator, height: int, width: int, channels: int, dtype) -> np.ndarray:
    """Smooth gradients, flat patches, noise, and for three channels grey pixels among coloured ones."""
    y, x = np.mgrid[0:height, 0:width]
    base = (x * rng.integers(0, 5) + y * rng.integers(0, 5) + rng.normal(0, rng.uniform(0, 20), (height, width))) % 256
    pixels = np.repeat(base[..., None], channels, axis=2)
    colour = rng.random((height, width)) < rng.random()
    pixels[colour] += rng.integers(-40, 40, (int(colour.sum()), channels))
    return (np.clip(pixels, 0, 255).astype(np.int32) - (128 if dtype == np.int8 else 0)).astype(dtype)


@st.composite
def tensors(draw):
    """(elements, row bytes, step, tensor dtype, out mode) for random and image-like inputs of 1..4 channels."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    height, width, channels = draw(st.integers(1, 12)), draw(st.integers(1, 40)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.uint8, np.int8]))
    if draw(st.booleans()):
        elements = _image_like(rng, height, width, channels, dtype)
    else:
        info = np.iinfo(dtype)
        elements = rng.integers(info.min, info.max + 1, (height, width, channels)).astype(dtype)
    widened = draw(st.booleans())
    out = WIDEN[np.dtype(dtype)] if widened else row_codec.OUT_BYTES
    tensor_dtype = FLOAT32 if widened else (UINT8 if dtype == np.uint8 else INT8)
    return elements.ravel(), width * channels, channels, tensor_dtype, out


def _tensor_bytes(elements: np.ndarray, out: int) -> bytes:
    return elements.tobytes() if out == row_codec.OUT_BYTES else elements.astype("<f4").tobytes()


def _cuts(draw, total: int) -> list[int]:
    inner = draw(st.lists(st.integers(1, max(1, total - 1)), max_size=6, unique=True)) if total > 1 else []
    return [0, *sorted(inner), total]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tensors(), data=st.data())
def test_the_device_decodes_what_the_host_encodes_in_any_pieces_with_pieces_sent_again(case, data):
    elements, row, step, tensor_dtype, out = case
    # Every filter the device decodes, those the encoder leaves out by default (Paeth) too.
    filters = data.draw(st.sampled_from([row_codec.DEFAULT_FILTERS, tuple(range(len(row_codec.FILTERS))), (4,), (5,)]))
    stream = row_codec.encode(elements, row, step, out, filters=filters)
    expected = _tensor_bytes(elements, out)
    cuts = _cuts(data.draw, len(stream))
    pieces = [(a, stream[a:b]) for a, b in itertools.pairwise(cuts)]
    # After a lost answer the host goes back to an earlier acknowledged offset and sends from there again.
    back = data.draw(st.integers(0, len(pieces) - 1))
    pieces.insert(back + 1, pieces[back])
    if back > 0:
        pieces.insert(back + 2, (pieces[back - 1][0], stream[pieces[back - 1][0] : cuts[back + 1]]))
    tensor, ends = _decode(_tensor(tensor_dtype, len(expected)), pieces, data.draw(st.integers(0, 3)))
    assert tensor == expected
    assert ends[-1] == len(expected) and all(end >= 0 for end in ends)


def test_a_stream_that_does_not_decode_into_the_tensor_is_refused():
    elements = np.arange(60, dtype=np.uint8)
    good = row_codec.encode(elements, 20, 1, row_codec.OUT_BYTES)
    info = _tensor(UINT8, 60)
    assert _decode(info, [(0, good)])[1] == [60]
    assert _decode(info, [(0, good + b"\x00")])[1] == [-2]  # a byte past the stream's end
    assert _decode(info, [(0, b"\x00\x00\x01\x00")])[1] == [-2]  # rows of no bytes
    assert _decode(info, [(0, (2000).to_bytes(2, "little") + b"\x01\x00")])[1] == [-2]  # past the row buffer
    assert _decode(info, [(0, good[:4] + b"\xff" * 4)])[1] == [-2]  # filter 7 does not exist
    widened = row_codec.encode(elements, 20, 1, row_codec.OUT_WIDEN_U8)
    assert _decode(info, [(0, widened)])[1] == [-2]  # widening into a uint8 tensor
    truncated = _decode(info, [(0, good[:-3])])[1][0]
    assert 0 <= truncated < 60
    assert _decode(info, [(0, good[:4] + b"\xff" * 4), (8, good[8:])])[1] == [-2, -2]  # nothing more is taken
    assert _decode(info, [(0, good[:10]), (11, good[11:])])[1][1] == -1  # a gap


def _image_spec(height: int, width: int, channels: int, dtype: int = FLOAT32) -> TensorSpec:
    elements = height * width * channels
    return TensorSpec(dtype, (1, height, width, channels), 0.0, 0, elements * (4 if dtype == FLOAT32 else 1))


def test_the_host_sends_the_stream_only_when_it_is_smaller_and_its_rows_fit_the_device():
    rng = np.random.default_rng(7)
    image = _image_like(rng, 16, 16, 3, np.uint8).astype("<f4").tobytes()
    noise = rng.integers(0, 256, 16 * 16 * 3).astype("<f4").tobytes()
    spec = _image_spec(16, 16, 3)
    assert wire_form(image, spec, 0b1111, 1024).encoding == Encoding.ROWS
    assert wire_form(noise, spec, 0b1111, 1024).encoding == Encoding.WIDEN_U8  # noise does not compress
    assert wire_form(image, spec, 0b0111, 1024).encoding == Encoding.WIDEN_U8  # not announced
    assert wire_form(image, spec, 0b1111, 0).encoding == Encoding.WIDEN_U8  # a device without the codec's rows
    shorter = wire_form(image, spec, 0b1111, 47)  # image rows of 48 bytes are too long: shorter rows
    assert shorter.encoding == Encoding.ROWS and int.from_bytes(shorter.data[:2], "little") <= 47
    quantized = _image_like(rng, 16, 16, 3, np.int8)
    chosen = wire_form(quantized.tobytes(), _image_spec(16, 16, 3, INT8), 0b1001, 1024)
    assert chosen.encoding == Encoding.ROWS and len(chosen.data) < quantized.size


def _float_runner(elements: int, shape: tuple[int, ...]) -> ChecksumRunner:
    runner = ChecksumRunner(elements, 4)
    tensor = runner.model_info.input
    tensor.dtype, tensor.bytes, tensor.rank = FLOAT32, 4 * elements, len(shape)
    for axis, size in enumerate(shape):
        tensor.dims[axis] = size
    return runner


def test_a_coded_input_runs_as_its_raw_bytes_would_in_fewer_wire_bytes_than_widened():
    y, x = np.mgrid[0:30, 0:31]  # odd sizes: pieces end mid-pixel
    grey = 3 * x + 2 * y + np.random.default_rng(9).normal(0, 2, (30, 31))
    values = np.clip(np.stack([grey, grey, grey + 20], axis=2), 0, 255).astype(np.uint8)
    data = values.astype("<f4").tobytes()
    runs = {}
    for encodings in (1, 0b0111, 0b1111):
        with core_on_pty(_float_runner(values.size, (1, 30, 31, 3)), rx_frame=300) as (_, client):
            info = client.hello()
            assert info.input_encodings == 0b1111 and info.codec_row_max == 1024
            client.info = dataclasses.replace(info, input_encodings=encodings)
            result = client.run(data)  # INVOKE names the float32 tensor's CRC: the decoded tensor must match it
            runs[encodings] = (result.output, client.stats.input_wire_bytes, client.stats.inputs_encoded)
    assert runs[1][0] == runs[0b0111][0] == runs[0b1111][0] == expected_output(data, 4)
    assert runs[0b1111][1] < 0.8 * runs[0b0111][1] < 0.25 * runs[1][1]
    assert runs[0b1111][2] == 1


def test_a_stream_that_does_not_decode_is_refused_in_one_line_and_nothing_runs():
    with core_on_pty(_float_runner(60, (1, 60))) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as error:
            client.request(Msg.LOAD_INPUT, load_input_payload(0, b"\x00\x00\x01\x00", Encoding.ROWS))
        assert error.value.code == ErrorCode.BAD_PAYLOAD
        assert str(error.value) == "device error BAD_PAYLOAD: input stream does not decode into the input tensor"
        truncated = row_codec.encode(np.arange(60, dtype=np.uint8), 60, 1, row_codec.OUT_WIDEN_U8)[:-2]
        client.request(Msg.LOAD_INPUT, load_input_payload(0, truncated, Encoding.ROWS))
        with pytest.raises(DeviceError) as error:
            client.request(Msg.INVOKE, b"")
        assert error.value.code == ErrorCode.INPUT_INCOMPLETE

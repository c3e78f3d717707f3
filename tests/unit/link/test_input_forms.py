"""Inputs in their smallest exact form (harness/link/input_forms.py, firmware/core/hp_input_forms.c): the decode
in C, the host's choice, and both through the device core on a pseudo-terminal."""

import ctypes
import dataclasses
import itertools

import numpy as np
import pytest

from harness.link.client import DeviceError
from harness.link.input_forms import Encoding, wire_form
from harness.link.protocol import ErrorCode, Msg, load_input_payload, parse_hello
from harness.native import TensorInfo, device_core
from harness.tensors import TensorSpec
from tests.fake_runner import ChecksumRunner, core_on_pty, expected_output

FLOAT32, UINT8 = 1, 3
ALL_FORMS = 0b1111


def _tensor(dtype: int, elements: int) -> TensorInfo:
    info = TensorInfo()
    info.dtype, info.rank, info.dims[0] = dtype, 1, elements
    info.bytes = elements * (4 if dtype == FLOAT32 else 1)
    return info


def _decode(encoding: int, info: TensorInfo, pieces: list[tuple[int, bytes]]) -> tuple[bytes, list[int]]:
    tensor = ctypes.create_string_buffer(b"\xee" * info.bytes, info.bytes)
    state = ctypes.create_string_buffer(device_core().hp_input_state_bytes())
    core = device_core()
    ends = [core.hp_input_decode(encoding, ctypes.byref(info), tensor, state, at, p, len(p)) for at, p in pieces]
    return tensor.raw, ends


@pytest.mark.parametrize(("encoding", "narrow"), [(Encoding.WIDEN_U8, np.uint8), (Encoding.WIDEN_I8, np.int8)])
def test_every_8_bit_value_widens_to_the_exact_float32(encoding, narrow):
    values = np.arange(np.iinfo(narrow).min, np.iinfo(narrow).max + 1).astype(narrow)
    tensor, ends = _decode(encoding, _tensor(FLOAT32, 256), [(0, values.tobytes())])
    assert ends == [1024]
    assert tensor == values.astype("<f4").tobytes()


def test_pieces_at_odd_offsets_decode_into_place():
    wire = np.random.default_rng(3).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    cuts = [0, 1, 4, 11, 58, 59, 333, 998, 1000]
    pieces = [(a, wire[a:b]) for a, b in itertools.pairwise(cuts)]
    tensor, ends = _decode(Encoding.WIDEN_U8, _tensor(FLOAT32, 1000), pieces)
    assert ends == [4 * b for b in cuts[1:]]
    assert tensor == np.frombuffer(wire, np.uint8).astype("<f4").tobytes()


def test_a_piece_past_the_tensor_or_of_a_form_the_tensor_cannot_take_is_refused():
    assert _decode(Encoding.WIDEN_U8, _tensor(FLOAT32, 10), [(8, b"abc")])[1] == [-1]
    assert _decode(Encoding.WIDEN_U8, _tensor(UINT8, 10), [(0, b"abc")])[1] == [-1]
    assert _decode(Encoding.RAW, _tensor(UINT8, 10), [(9, b"ab")])[1] == [-1]
    assert _decode(7, _tensor(FLOAT32, 10), [(0, b"a")])[1] == [-1]
    assert device_core().hp_input_encodings(ctypes.byref(_tensor(FLOAT32, 4))) == ALL_FORMS
    assert device_core().hp_input_encodings(ctypes.byref(_tensor(UINT8, 4))) == 0b1001  # raw, rows


def _spec(elements: int, dtype: int = FLOAT32) -> TensorSpec:
    return TensorSpec(dtype, (1, elements), 0.0, 0, elements * (4 if dtype == FLOAT32 else 1))


@pytest.mark.parametrize(
    ("values", "form"),
    [
        ([0, 1, 255, 128], Encoding.WIDEN_U8),
        ([-128, 0, 127, 5], Encoding.WIDEN_I8),
        ([0, 1, 2.5, 3], Encoding.RAW),  # a fraction
        ([0, -0.0, 1, 2], Encoding.RAW),  # -0.0 would widen to +0.0: not bit-identical
        ([0, np.nan, 1, 2], Encoding.RAW),
        ([0, 256, 1, 2], Encoding.RAW),  # past uint8
        ([-1, 128, 0, 0], Encoding.RAW),  # neither type holds both
    ],
)
def test_the_host_picks_the_smallest_exact_form(values, form):
    data = np.array(values, "<f4").tobytes()
    chosen = wire_form(data, _spec(4), ALL_FORMS)
    assert chosen.encoding == form
    if form != Encoding.RAW:
        assert (
            np.frombuffer(chosen.data, np.uint8 if form == Encoding.WIDEN_U8 else np.int8).astype("<f4").tobytes()
            == data
        )
    else:
        assert chosen.data == data


def test_the_host_sends_raw_what_the_device_did_not_announce_or_cannot_widen_into():
    data = np.arange(4, dtype="<f4").tobytes()
    assert wire_form(data, _spec(4), 1).encoding == Encoding.RAW
    assert wire_form(bytes(4), _spec(4, UINT8), ALL_FORMS).encoding == Encoding.RAW


def _float_runner(elements: int) -> ChecksumRunner:
    runner = ChecksumRunner(elements, 4)
    runner.model_info.input.dtype, runner.model_info.input.bytes = FLOAT32, 4 * elements
    return runner


def test_a_widened_input_runs_as_its_raw_bytes_would_at_a_quarter_of_the_wire_bytes():
    values = np.random.default_rng(5).integers(0, 256, 3001).astype("<f4")  # odd: chunks land at odd offsets
    data = values.tobytes()
    raw_run, widened_run = {}, {}
    for announce, seen in ((False, raw_run), (True, widened_run)):
        with core_on_pty(_float_runner(3001), rx_frame=100) as (_, client):
            info = client.hello()
            assert info.input_encodings == ALL_FORMS
            if not announce:
                client.info = dataclasses.replace(info, input_encodings=1)  # as an older device says
            result = client.run(data)  # INVOKE names the float32 tensor's CRC: the decoded tensor must match it
            seen.update(output=result.output, stats=client.stats)
    assert raw_run["output"] == widened_run["output"] == expected_output(data, 4)
    raw, widened = raw_run["stats"], widened_run["stats"]
    assert (raw.inputs_encoded, widened.inputs_encoded) == (0, 1)
    assert raw.input_tensor_bytes == widened.input_tensor_bytes == len(data)
    assert 3001 < widened.input_wire_bytes < 3001 * 1.5 and raw.input_wire_bytes > len(data)


def test_a_sample_that_is_not_all_integers_goes_raw_and_still_runs():
    data = np.array([0.5] + [7.0] * 99, "<f4").tobytes()
    with core_on_pty(_float_runner(100)) as (_, client):
        result = client.run(data)
        assert client.stats.inputs_encoded == 0 and client.stats.input_wire_bytes > len(data)
    assert result.output == expected_output(data, 4)


def test_an_encoding_the_device_did_not_announce_is_refused_in_one_line():
    with core_on_pty(ChecksumRunner(100, 2)) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as error:
            client.request(Msg.LOAD_INPUT, load_input_payload(0, b"abc", Encoding.WIDEN_U8))
    assert error.value.code == ErrorCode.UNSUPPORTED
    assert str(error.value) == "device error UNSUPPORTED: input encoding not announced in HELLO"


def test_a_chunk_in_another_form_than_the_input_began_in_is_refused():
    with core_on_pty(_float_runner(10)) as (_, client):
        client.hello()
        client.request(Msg.LOAD_INPUT, load_input_payload(0, b"\x01\x02", Encoding.WIDEN_U8))
        with pytest.raises(DeviceError) as error:
            client.request(Msg.LOAD_INPUT, load_input_payload(2, b"\x01\x02", Encoding.WIDEN_I8))
    assert error.value.code == ErrorCode.BAD_OFFSET


def test_an_older_hello_without_the_encodings_means_raw_only():
    with core_on_pty(_float_runner(10)) as (_, client):
        payload = client.request(Msg.HELLO)
    assert parse_hello(payload).input_encodings == ALL_FORMS
    assert parse_hello(payload[:-8]).input_encodings == 1

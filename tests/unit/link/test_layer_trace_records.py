"""Layer trace records: packed by the device core's C (firmware/core/hp_trace.c, through harness._devicecore), parsed
by the host (harness/link/layer_trace.py), and the digests equal to harness/tensor_digest.py's definition."""

import ctypes

import numpy as np
import pytest

from harness.link.layer_trace import parse_layer_trace
from harness.native import TraceOutput, TraceSink, device_core
from harness.tensor_digest import tensor_digest
from harness.tensors import DTYPE_CODES

HEADER = 5  # operators run u16, first operator u16, records u8


def _trace(operators: list[tuple[str, list[np.ndarray]]], first_op: int = 0, room: int = 60000):
    """What the C sink answers for these operators' outputs (tensor index: position in the list of all)."""
    lib = device_core()
    sink, buf = TraceSink(), (ctypes.c_uint8 * (HEADER + room))()
    lib.hp_trace_records(ctypes.byref(sink), first_op, ctypes.addressof(buf) + HEADER, room)
    keep, tensor = [], 0
    for name, arrays in operators:
        entries = (TraceOutput * max(1, len(arrays)))()
        for entry, array in zip(entries, arrays, strict=False):
            array = np.ascontiguousarray(array)
            keep.append(array)
            entry.data, entry.bytes = array.ctypes.data, array.nbytes
            entry.dtype, entry.tensor_index = DTYPE_CODES[array.dtype], tensor
            tensor += 1
        lib.hp_trace_operator(ctypes.byref(sink), name.encode(), entries, len(arrays))
    header = np.array([sink.operators_run, first_op], "<u2").tobytes() + bytes([sink.records])
    return sink, parse_layer_trace(header + bytes(buf)[HEADER : HEADER + sink.used])


def _arrays():
    rng = np.random.default_rng(5)
    return [
        rng.integers(-128, 128, (1, 7, 7, 3), dtype=np.int8),
        rng.integers(0, 256, (2, 5), dtype=np.uint8),
        rng.integers(-(2**15), 2**15, (33,), dtype=np.int16),
        rng.integers(-(2**31), 2**31, (17,), dtype=np.int32),
        np.array([2**62, 2**62, 2**62, -5], dtype=np.int64),  # the sum wraps modulo 2**64
        rng.integers(0, 2, (9,)).astype(np.bool_),
        rng.normal(size=(4, 11)).astype(np.float32) * 1e3,
        np.array([0.1, 1e-7, -65504.0, 3.0], dtype=np.float16),
        np.zeros((0, 3), dtype=np.int8),
    ]


def test_the_c_digest_of_every_dtype_is_tensor_digests():
    arrays = _arrays()
    sink, page = _trace([("CONV_2D", arrays[:3]), ("CUSTOM_OP", arrays[3:6]), ("SOFTMAX", arrays[6:])])
    assert (page.operators_run, page.first_op, sink.full) == (3, 0, 0)
    assert [(r.index, r.op_type) for r in page.records] == [(0, "CONV_2D"), (1, "CUSTOM_OP"), (2, "SOFTMAX")]
    outputs = [output for record in page.records for output in record.outputs]
    assert [o.tensor_index for o in outputs] == list(range(len(arrays)))
    for output, array in zip(outputs, arrays, strict=True):
        expected = tensor_digest(array)
        assert output.digest.matches(expected), (array.dtype, output.digest, expected)
    assert outputs[4].digest.total == tensor_digest(arrays[4]).total < 0  # wrapped, as the host's int64 sum


def test_a_different_byte_changes_the_digest():
    array = np.arange(-50, 50, dtype=np.int8)
    changed = array.copy()
    changed[37] += 1
    _, page = _trace([("ADD", [array]), ("ADD", [changed])])
    first, second = (r.outputs[0].digest for r in page.records)
    assert not first.matches(second) and second.total - first.total == 1


def test_records_stay_whole_and_a_page_starts_at_the_operator_asked():
    ops = [(f"OP{i}", [np.full(10, i, np.int8)]) for i in range(6)]
    record = 2 + 1 + 3 + 1 + 37
    sink, page = _trace(ops, first_op=2, room=2 * record + record // 2)
    assert page.operators_run == 6 and sink.full == 1
    assert [r.index for r in page.records] == [2, 3]
    assert [r.outputs[0].digest.total for r in page.records] == [20, 30]


def test_a_dump_copies_the_slice_asked_of_one_operator_output():
    lib = device_core()
    tensors = [np.arange(100, dtype=np.int16), np.arange(7, dtype=np.uint8)]
    sink, buf = TraceSink(), (ctypes.c_uint8 * 64)()
    lib.hp_trace_dump(ctypes.byref(sink), 1, 0, 20, 30, buf)
    for op in range(3):
        entries = (TraceOutput * 1)()
        array = tensors[0] + op
        entries[0].data, entries[0].bytes, entries[0].dtype = array.ctypes.data, array.nbytes, 7
        lib.hp_trace_operator(ctypes.byref(sink), b"ADD", entries, 1)
    assert (sink.found, sink.tensor_bytes, sink.used) == (1, 200, 30)
    assert bytes(buf)[:30] == (tensors[0] + 1).tobytes()[20:50]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (np.array([127, 3], np.int8), [-128, 3]),  # wraps
        (np.array([255, 3], np.uint8), [0, 3]),
        (np.array([-1, 9], np.int16), [0, 9]),
        (np.array([2**31 - 1], np.int32), [-(2**31)]),
        (np.array([2**63 - 1], np.int64), [-(2**63)]),
        (np.array([1.5, 2.0], np.float32), [2.5, 2.0]),
        (np.array([True, False]), [True, False]),  # its byte 1 becomes 2, still true
    ],
)
def test_the_c_planted_fault_is_the_host_references(values, expected):
    """The firmware's fault (hp_plant_fault) and the host reference's (layer_refs.perturbed), byte for byte."""
    from harness.model.layer_refs import perturbed

    host = perturbed(values)
    raw = values.reshape(-1).view(np.uint8)
    device_core().hp_plant_fault((ctypes.c_uint8 * raw.size).from_buffer(raw), raw.size, DTYPE_CODES[values.dtype])
    assert values.tobytes() == host.tobytes() and values.tolist() == expected

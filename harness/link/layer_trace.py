"""LAYER_TRACE and LAYER_DUMP as the host sees them (docs/protocol.md): the records of a traced invoke, one per
operator of the main graph, each with the digest of every output tensor as it lay in the device's memory."""

import struct
from dataclasses import dataclass

from harness.link.protocol import MalformedPayload, _Reader
from harness.tensor_digest import TensorDigest

FLOAT_DTYPES = frozenset({1, 10, 11})  # float32, float16, float64: min, max and sum are float64 bits
TRACE_HEADER = struct.Struct("<HHB")  # operators run, first operator, records
DUMP_HEADER = struct.Struct("<I")  # the tensor's size, then the slice


@dataclass(frozen=True)
class LayerOutput:
    tensor_index: int
    digest: TensorDigest


@dataclass(frozen=True)
class LayerRecord:
    """One operator of a traced invoke: its place in the main graph, its name as the runtime's profiler tags it
    (CONV_2D), and its outputs' digests (as harness/model/layer_refs.py's OperatorOutputs on the host)."""

    index: int
    op_type: str
    outputs: tuple[LayerOutput, ...]


@dataclass(frozen=True)
class TracePage:
    operators_run: int
    first_op: int
    records: tuple[LayerRecord, ...]


def _digest(r: _Reader) -> LayerOutput:
    tensor_index, dtype, nbytes, crc = r.take("iBII")
    kind = "d" if dtype in FLOAT_DTYPES else "q"
    minimum, maximum, total = r.values(3 * kind)
    return LayerOutput(tensor_index, TensorDigest(dtype, nbytes, crc, minimum, maximum, total))


def parse_layer_trace(payload: bytes) -> TracePage:
    r = _Reader(payload)
    operators_run, first_op, count = r.take("HHB")
    records = []
    for _ in range(count):
        op_index = r.take("H")
        name = r.string()
        outputs = tuple(_digest(r) for _ in range(r.take("B")))
        records.append(LayerRecord(op_index, name, outputs))
    if r.pos != len(payload):
        raise MalformedPayload(f"LAYER_TRACE answer has {len(payload) - r.pos} bytes after its {count} records")
    return TracePage(operators_run, first_op, tuple(records))


def layer_trace_payload(first_op: int) -> bytes:
    return struct.pack("<H", first_op)


def parse_layer_dump(payload: bytes) -> tuple[int, bytes]:
    """(the tensor's size in bytes, the slice)."""
    if len(payload) < DUMP_HEADER.size:
        raise MalformedPayload(f"LAYER_DUMP answer of {len(payload)} bytes has no tensor size")
    (total,) = DUMP_HEADER.unpack_from(payload)
    return total, payload[DUMP_HEADER.size :]


def layer_dump_payload(op_index: int, output: int, offset: int, length: int) -> bytes:
    return struct.pack("<HBIH", op_index, output, offset, length)

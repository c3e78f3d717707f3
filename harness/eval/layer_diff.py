"""Trace one input on a board layer by layer and compare each operator's outputs with the host's.

The board digests every operator's outputs as they lie in its arena (harness/tensor_digest.py defines the
digest, firmware/core/hp_trace.c computes it there); the host computes the same digests from the TFLM
interpreter's preserved tensors. Where a digest differs, the output's bytes are fetched from the board, while
`budget` bytes last, to count the elements that differ and by how much."""

import numpy as np

from harness.boards import Board
from harness.defaults import LAYER_FETCH_BYTES
from harness.link.protocol import MalformedPayload
from harness.link.roles import LayerTracing, require
from harness.model.dut import DeviceShare
from harness.model.layer_refs import operator_outputs
from harness.results.journal import HOST_COLUMN
from harness.results.layer_trace import ABSOLUTE, STEPS, LayerDifference, LayerTrace
from harness.tensor_digest import tensor_digest


def trace_layers(
    client, board: Board, model_name: str, model_bytes: bytes, data: bytes, sample: str, budget: int
) -> LayerTrace:
    """`data` (the input tensor's bytes) traced on the board through `client` and compared with the host."""
    tracing = require(client, LayerTracing)
    records = tracing.layer_trace(data)  # firmware built without the trace: Unsupported, naming HP_LAYER_TRACE
    host = operator_outputs(model_bytes, data)
    if len(records) != len(host):
        raise MalformedPayload(f"the board traced {len(records)} operators, the model has {len(host)}")
    layers, fetched = [], 0
    for record, reference in zip(records, host, strict=True):
        layer, cost = _compare(tracing, data, record, reference, budget - fetched)
        layers.append(layer)
        fetched += cost
    return LayerTrace(
        source=board.latency_source,
        reference="host TFLM interpreter",
        board=board.id,
        model=model_name,
        sample=sample,
        operators_run=len(records),
        layers=layers,
        fetched_bytes=fetched,
    )


def _compare(tracing, data: bytes, record, reference, budget: int) -> tuple[LayerDifference, int]:
    """One operator against the host's: equal by digest, else counted on the bytes fetched (if the budget holds
    them all). Returns the difference and the bytes fetched."""
    if [o.tensor_index for o in record.outputs] != [o.tensor_index for o in reference.outputs]:
        raise MalformedPayload(f"operator {record.index}'s outputs on the board are not the model's")
    arrays = [np.ascontiguousarray(o.array) for o in reference.outputs]
    unit = ABSOLUTE if any(np.issubdtype(a.dtype, np.floating) for a in arrays) else STEPS
    equal = all(o.digest.matches(tensor_digest(a)) for o, a in zip(record.outputs, arrays, strict=True))
    base = {
        "index": record.index,
        "operator": reference.op_type,
        "shape": list(reference.outputs[0].shape) if reference.outputs else [],
        "equal": equal,
        "elements": sum(a.size for a in arrays),
        "unit": unit,
    }
    size = sum(a.nbytes for a in arrays)
    if equal or size > budget:
        return LayerDifference(**base), 0
    largest, differing = 0.0, 0
    for position, array in enumerate(arrays):
        board_bytes = tracing.layer_tensor(data, record.index, position)
        on_board = np.frombuffer(board_bytes, dtype=array.dtype.newbyteorder("<")).reshape(array.shape)
        differs = on_board != array
        if unit == ABSOLUTE:  # NaN on both sides is the same value
            differs &= ~(np.isnan(on_board) & np.isnan(array))
        differing += int(np.count_nonzero(differs))
        gap = np.abs(on_board.astype(np.float64) - array.astype(np.float64))
        finite = gap[np.isfinite(gap)]  # a NaN or infinity on one side only is counted, not measured
        largest = max(largest, float(finite.max()) if finite.size else 0.0)
    return LayerDifference(**base, largest=largest, differing=differing), size


def departing_samples(tables, reference: str, limit: int) -> list[int]:
    """The run's first `limit` samples (by index) whose device output differs from `reference`'s, from the
    journal's tables (harness/results/journal.py: device_output and host.<name> columns)."""
    departing: list[int] = []
    for table in tables:
        column = HOST_COLUMN + reference
        if column not in table.column_names:
            continue
        pairs = zip(table.column("index").to_pylist(), table.column("device_output").to_pylist(), strict=True)
        hosts = table.column(column).to_pylist()
        departing += [index for (index, device), host in zip(pairs, hosts, strict=True) if device != host]
    return sorted(departing)[:limit]


def trace_departures(
    client, request, inputs, indices: list[int], share: DeviceShare, budget: int = LAYER_FETCH_BYTES
) -> list[LayerTrace]:
    """Each of these samples of an eval run traced through `client` (a session on one of the run's boards)."""
    return [
        trace_layers(
            client,
            request.board,
            request.card.name,
            request.model.data,
            share.sent(inputs.tensors[index]),
            inputs.samples[index].id,
            budget,
        )
        for index in indices
    ]
